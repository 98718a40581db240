// `kubectl maintenance done NODE`: the technician's word that the work on a drained node is
// finished, written as the annotation nodemaintenance.medik8s.io/done (op::kDoneAnnotation, an
// RFC 3339 time) on the node's NodeMaintenance. A MaintenancePlan whose spec.doneWhen is
// Confirmed waits for it before it gives the node back; a NodeMaintenance of its own is given
// back by deleting it (`kubectl maintenance stop NODE`).
//
// Only a Succeeded maintenance can be marked: before that the drain has not finished, so no work
// can have been done on the node. When a node has several NodeMaintenances (the webhook refuses
// a second one, but one made before it was installed may remain), each Succeeded one is marked.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/api_error.h"
#include "kube/api/time.h"
#include "operator/api/node_maintenance.h"

namespace nmo::cli {

// The NodeMaintenances among `all` whose spec.nodeName is `node`, in the order of `all`.
[[nodiscard]] std::vector<op::NodeMaintenance> maintenances_of_node(
    const std::vector<op::NodeMaintenance>& all, std::string_view node);

// Whether `done` marks `nm`: it is Succeeded.
[[nodiscard]] bool can_mark_done(const op::NodeMaintenance& nm);

// Why `done NODE` marks none of `of_node` (the node's NodeMaintenances, oldest first), or
// std::nullopt when at least one can be marked:
//   no NodeMaintenance for node NODE                                             (exit 3)
//   NodeMaintenance NAME on node NODE is PHASE, not Succeeded: its drain has not finished, so
//   the work cannot be done yet                       (exit 1; the oldest; PHASE "new" if unset)
[[nodiscard]] std::optional<Failure> done_refusal(const std::vector<op::NodeMaintenance>& of_node,
                                                  std::string_view node);

// The JSON merge patch that marks a NodeMaintenance done at `now`:
//   {"metadata":{"annotations":{"nodemaintenance.medik8s.io/done":"2026-03-07T14:30:00Z"}}}
[[nodiscard]] std::string done_patch(kube::Time now);

// What `done` prints for a NodeMaintenance it marked, ending in '\n': who gives the node back,
// its MaintenancePlan (the label nodemaintenance.medik8s.io/plan) or the admin.
//   nodemaintenance.nodemaintenance.medik8s.io/NAME marked done (node NODE); its MaintenancePlan
//   gives the node back
//   nodemaintenance.nodemaintenance.medik8s.io/NAME marked done (node NODE); delete it to give
//   the node back: kubectl maintenance stop NODE
[[nodiscard]] std::string done_confirmation(const op::NodeMaintenance& nm);

}  // namespace nmo::cli
