// The I/O of shell completion (src/cli/completion.h has the protocol and what to offer): the
// names of nodes, NodeMaintenances and MaintenancePlans read from the cluster, and the answer
// printed on stdout.
//
// Threading: called from main() on the main thread, and from the command coroutine there.
#pragma once

#include <string>
#include <vector>

#include "cli/completion.h"
#include "http/asio.h"
#include "session.h"

namespace nmo::cli {

// Prints the names a cluster-backed query asks for (those starting with query.prefix), one per
// line. Failures to read the cluster print nothing (a shell has no place for them).
asio::awaitable<int> print_cluster_candidates(Session& session, CompletionQuery query);

// Prints `candidates` that start with `prefix`, then the directive line.
void print_candidates(const std::vector<std::string>& candidates, const std::string& prefix);
void print_directive();

}  // namespace nmo::cli
