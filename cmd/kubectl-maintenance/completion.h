// Shell completion in cobra's `__complete` protocol, which kubectl (1.26 and later) speaks with a
// plugin's `kubectl_complete-<plugin>` executable: kubectl runs it with the words typed after
// `kubectl maintenance`, the last one being the word to complete (possibly empty), and reads one
// candidate per line ("value<TAB>description"), then ":<directive>" (4: no file names). The same
// answer comes from `kubectl-maintenance __complete <words...>`, which is how shells complete
// the binary itself.
//
// Subcommands and flags come from the command-line definition; node, NodeMaintenance and
// MaintenancePlan names from the cluster, with the kubeconfig flags among the words.
//
// Threading: called from main() on the main thread.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "http/asio.h"
#include "session.h"

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
    kPlans,             // plan-status
  };
  Kind kind = Kind::kNothing;
  std::string prefix;                    // the word being completed
  std::vector<std::string> candidates;   // kStatic: "value\tdescription"
  std::vector<std::string> global_args;  // the kubeconfig and connection flags among the words
};

// Reads `words` (everything after the plugin's name) against `app`'s definition.
[[nodiscard]] CompletionQuery classify_completion(const CLI::App& app,
                                                  const std::vector<std::string>& words);

// Prints the names a cluster-backed query asks for (those starting with query.prefix), one per
// line. Failures to read the cluster print nothing (a shell has no place for them).
asio::awaitable<int> print_cluster_candidates(Session& session, CompletionQuery query);

// Prints `candidates` that start with `prefix`, then the directive line.
void print_candidates(const std::vector<std::string>& candidates, const std::string& prefix);
void print_directive();

}  // namespace nmo::cli
