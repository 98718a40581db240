// Shell completion in cobra's `__complete` protocol, which kubectl (1.26 and later) speaks with a
// plugin's `kubectl_complete-<plugin>` executable: kubectl runs it with the words typed after
// `kubectl maintenance`, the last one being the word to complete (possibly empty), and reads one
// candidate per line ("value<TAB>description"), then ":<directive>" (4: no file names). The same
// answer comes from `kubectl-maintenance __complete <words...>`, which is how shells complete
// the binary itself.
//
// What the last word is, read against the command-line definition (subcommands, flags and -o
// values), and the candidates the cluster's node, NodeMaintenance and MaintenancePlan names
// make. cmd/kubectl-maintenance/completion.h lists those names and prints the answer.
//
// Threading: pure functions, callable from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kube/api/node.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"

namespace CLI {
class App;
}  // namespace CLI

namespace nmo::cli {

// cobra's ShellCompDirectiveNoFileComp: the shell must not offer file names instead.
inline constexpr int kNoFileCompletion = 4;

// What the last word is.
struct CompletionQuery {
  enum class Kind {
    kNothing,           // a value nobody can guess (a reason, a duration)
    kStatic,            // subcommands, flags or flag values: `candidates` holds them
    kNodes,             // start, plan
    kMaintenances,      // status, watch, diagnose
    kStopTargets,       // stop: maintenances and the nodes they are for
    kMaintenanceNodes,  // done: the nodes that have a maintenance
    kPlans,             // plan-status, resume
  };
  Kind kind = Kind::kNothing;
  std::string prefix;                    // the word being completed
  std::vector<std::string> candidates;   // kStatic: "value\tdescription"
  std::vector<std::string> global_args;  // the kubeconfig and connection flags among the words
};

// Reads `words` (everything after the plugin's name) against `app`'s definition: its
// subcommands (each falling through to `app`'s flags), their flags and positional argument, and
// the -o values each names at the start of its help ("json|yaml|jsonpath=TEMPLATE: ...").
[[nodiscard]] CompletionQuery classify_completion(const CLI::App& app,
                                                  const std::vector<std::string>& words);

// The candidates a cluster-backed query offers, "name\tdescription":
// kNodes: every node;
[[nodiscard]] std::vector<std::string> node_candidates(const std::vector<kube::Node>& nodes);
// kPlans: every MaintenancePlan, with its phase;
[[nodiscard]] std::vector<std::string> plan_candidates(
    const std::vector<op::MaintenancePlan>& plans);
// kMaintenances, kStopTargets, kMaintenanceNodes: every NodeMaintenance, its node (once) after
// it for kStopTargets; only their nodes, once each, for kMaintenanceNodes.
[[nodiscard]] std::vector<std::string> maintenance_candidates(
    CompletionQuery::Kind kind, const std::vector<op::NodeMaintenance>& maintenances);

// The `candidates` that start with `prefix`, one per line.
[[nodiscard]] std::string candidate_lines(const std::vector<std::string>& candidates,
                                          std::string_view prefix);

// The line that ends every answer: ":4".
[[nodiscard]] std::string directive_line();

}  // namespace nmo::cli
