// How a NodeMaintenance reads on a terminal: the row of `list`, the report of `status`, and the
// progress display of `watch` (a bar with percent, evicted/total, elapsed time, and the pending
// pods with their blocking reason).
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kube/api/node.h"
#include "kube/api/time.h"
#include "operator/api/node_maintenance.h"

namespace nmo::cli {

// The phase as text; "New" before the operator has set one.
[[nodiscard]] std::string phase_text(const op::NodeMaintenance& nm);

// What holds the maintenance up, in a few words, or "" when nothing does:
//   Pending: the Blocked condition's message (e.g. the etcd quorum or waiting-for-lease text);
//   Running: the distinct reasons of the pending pods that are blocked, with how many pods each
//            ("BlockedByPDB (1), EvictionDeferred (2)"); Evicting and WaitingForTermination do
//            not count as blocked;
//   Failed:  status.lastError.
[[nodiscard]] std::string blocking_summary(const op::NodeMaintenance& nm);

// The `list` table header and one row: NAME, NODE, PHASE, PROGRESS ("75%"), PENDING (count),
// AGE, BLOCKING; -o wide adds EVICTED ("3/4"), CONDITIONS (node_lifecycle_summary() of `node`,
// the maintenance's node as read, "-" without it) and REASON (spec.reason).
[[nodiscard]] std::vector<std::string> list_header(bool wide = false);
[[nodiscard]] std::vector<std::string> list_row(const op::NodeMaintenance& nm, kube::Time now,
                                                bool wide = false,
                                                const std::optional<kube::Node>& node = {});

// The well-known node lifecycle conditions that are True on `node`, comma-separated in the order
// of their life ("MaintenanceInProgress,DrainInProgress"), or "-".
[[nodiscard]] std::string node_lifecycle_summary(const kube::Node& node);

// The `status` report: name, node, reason, drain timeout, phase, progress, pending pods with
// their reason and message, last error, last update, conditions; lines ending in '\n'.
[[nodiscard]] std::string status_report(const op::NodeMaintenance& nm, kube::Time now);

// A bar of `width` cells for `percent` (clamped to 0..100): "[#######.............]".
[[nodiscard]] std::string progress_bar(std::int64_t percent, std::size_t width);

// The progress line of `watch`:
//   maintenance-worker-01 (node-worker-01)  Running  [##########..........]  50%  4/8 pods  1m05s
[[nodiscard]] std::string progress_line(const op::NodeMaintenance& nm,
                                        std::chrono::seconds elapsed);

// One line per pending pod, at most `limit` (then "... and N more"):
//   pending default/vm-db: BlockedByPDB (PDB default/db-pdb: 0 disruptions allowed (1 healthy, 1
//   desired))
[[nodiscard]] std::vector<std::string> pending_lines(const op::NodeMaintenance& nm,
                                                     std::size_t limit);

// Whether the maintenance reached a final phase for `watch`: Succeeded or Failed.
[[nodiscard]] bool is_final(const op::NodeMaintenance& nm);

}  // namespace nmo::cli
