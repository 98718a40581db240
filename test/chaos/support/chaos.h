// Shared pieces of the reliability experiments (docs/reliability.md, `make chaos`): the iteration
// counts of the short form (run by `make test`) and the full form (`make chaos`, NMO_CHAOS_FULL=1),
// the report each experiment writes, and the cluster's fault hooks (restarting a component).
//
// Each experiment is a GoogleTest test against the real local cluster. It counts what it did
// (iterations, faults injected, invariant violations, recovery times) and hands the figures to
// report(), which prints them and appends them to $NMO_CHAOS_REPORT, from which hack/chaos.sh
// prints the summary table.
//
// Threading: the functions may be called from any thread; report() appends whole lines.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/fwd.hpp>

namespace nmo::e2e {
class OperatorProcess;
}  // namespace nmo::e2e

namespace nmo::chaos {

/// True under `make chaos` (NMO_CHAOS_FULL=1): run the experiments at full length.
[[nodiscard]] bool full_run();

/// `full` under `make chaos`, else `short_form`; NMO_CHAOS_ITERATIONS overrides both.
[[nodiscard]] int iterations(int short_form, int full);

/// One figure of an experiment's report: a name and its value, printed as given.
struct Figure {
  std::string name;
  std::string value;
};

/// Formats a duration in seconds with two decimals ("1.27").
[[nodiscard]] std::string seconds(std::chrono::duration<double> span);
[[nodiscard]] std::string seconds(double value);

/// Prints `chaos: <experiment>: name=value ...` and appends
/// {"experiment": ..., "figures": [[name, value], ...]} as one line to $NMO_CHAOS_REPORT.
void report(const std::string& experiment, const std::vector<Figure>& figures);

/// Runs hack/cluster-restart.sh of this checkout with `args` (e.g. {"--kill",
/// "kube-apiserver"}); records a test failure and returns false when it fails.
bool cluster_restart(const std::vector<std::string>& args);

/// A bare pod bound to `node` (e2e::pod_manifest) labelled round=<round>, so that a round's
/// leftovers go with one `kubectl delete pods -l round=<round>`. With `slow_delete_seconds` > 0
/// it is annotated slow-delete and terminates only when that grace period has run out.
[[nodiscard]] boost::json::value round_pod(const std::string& ns, const std::string& name,
                                           const std::string& node, int round,
                                           int slow_delete_seconds = 0);

/// A timestamp of the API ("2026-11-30T23:58:01Z", with any fraction) as a wall-clock instant
/// (kube::parse_time); std::nullopt when it does not parse.
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> instant(const std::string& text);

/// The JSON lines of an operator's log (replicas started with --log-format=json); other lines
/// are skipped.
[[nodiscard]] std::vector<boost::json::object> log_records(const e2e::OperatorProcess& replica);

/// The string field `key` of a log record ("" when absent or not a string).
[[nodiscard]] std::string field(const boost::json::object& record, const char* key);

/// The median and the largest of `values` (0 when empty).
[[nodiscard]] double median(std::vector<double> values);
[[nodiscard]] double largest(const std::vector<double>& values);

}  // namespace nmo::chaos
