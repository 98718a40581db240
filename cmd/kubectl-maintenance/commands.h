// The subcommands of kubectl-maintenance, each a coroutine that reads (and for start, stop, done
// and rollout writes) the cluster through a Session, prints its result, and returns the exit
// status (src/cli/exit_code.h). Failures are printed as one line on stderr ("error: ...").
//
// Threading: awaited on the io_context's single thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "cli/output_format.h"
#include "cli/rollout.h"
#include "http/asio.h"
#include "session.h"

namespace nmo::cli {

struct CommandOptions {
  Output output;            // -o
  bool no_headers = false;  // --no-headers: tables without their header line
  bool tty = false;         // stdout is a terminal: redraw in place
  std::string operator_namespace;
  std::string lease_namespace;
  int max_parallel = 0;  // --max-parallel; 0: the budget the operator published
  bool etcd_quorum_check = true;
  std::optional<std::chrono::nanoseconds> timeout;  // --timeout of the waiting commands
  std::chrono::milliseconds poll_interval{500};
  // start
  std::string reason;
  std::string name;
  std::string drain_timeout;
  bool wait = false;
  // plan
  std::string plan;  // --plan: the MaintenancePlan whose pods may be evicted twice, not a node
  // plan-status
  bool watch = false;  // --watch: follow the plan until it ends
  // rollout
  RolloutFlags rollout;
  bool dry_run = false;
};

asio::awaitable<int> run_list(Session& session, CommandOptions options);
asio::awaitable<int> run_status(Session& session, std::string name, CommandOptions options);
asio::awaitable<int> run_start(Session& session, std::string node, CommandOptions options);
asio::awaitable<int> run_stop(Session& session, std::string target, CommandOptions options);
asio::awaitable<int> run_watch(Session& session, std::string name, CommandOptions options);
// `plan <node>`, or `plan --plan NAME` (options.plan; node is then empty).
asio::awaitable<int> run_plan(Session& session, std::string node, CommandOptions options);
asio::awaitable<int> run_diagnose(Session& session, std::string name, CommandOptions options);
asio::awaitable<int> run_done(Session& session, std::string node, CommandOptions options);
asio::awaitable<int> run_plan_status(Session& session, std::string name, CommandOptions options);
asio::awaitable<int> run_resume(Session& session, std::string name, CommandOptions options);
asio::awaitable<int> run_rollout(Session& session, std::string name, CommandOptions options);

}  // namespace nmo::cli
