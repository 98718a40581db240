// The node lifecycle conditions a NodeMaintenance writes on its node (docs/design.md §2.10,
// docs/operations.md "Node lifecycle conditions"), as a pure function from what the maintenance
// is to the strategic-merge patch of nodes/status that makes the node say so.
//
//   maintenance                          MaintenanceInProgress  DrainInProgress        Drained
//   holds the node, pods leaving         True NodeMaintenance   True  ...Draining      -
//     the same, past spec.drainTimeout   True NodeMaintenance   True  ...DrainTimeout  -
//   holds the node, every pod gone       True NodeMaintenance   False ...Drained       True
//   anything else                        -                      -                      -
//
// "-" is "absent": ours are removed (`$patch: delete`), never set False, so a node after its
// maintenance looks like one that never had any. The patch merges by `type`, so the kubelet's
// own conditions are never rewritten, and it carries the node's resourceVersion as a
// precondition, so a condition another writer set since the read is never overwritten (the
// write conflicts and is retried from a fresh read).
//
// Ownership: a condition of these three types is ours when its reason starts with
// "NodeMaintenance" (kLifecycleReasonPrefix). Any other (another maintenance tool, an admin,
// kubelet's graceful shutdown) is left as it is, whatever we would write, and named in
// LifecyclePatch::foreign.
//
// A maintenance that does not hold the node removes ours only while no other maintenance does:
// when the node's prior-state annotation names another NodeMaintenance (a winner next to a
// duplicate), the conditions are that one's.
//
// MaintenancePlanned is a MaintenancePlan's (docs/design.md §2.10): True on each node the plan
// will take (its Waiting entries), reason "MaintenancePlan" (kPlannedReason), message
// planned_message(); absent otherwise. Ours when its reason starts with "MaintenancePlan"; of
// ours, a plan touches only its own (the message starts with "plan <name>, "), so two plans
// naming one node never rewrite each other's: the first one's stays until it goes.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "kube/api/node.h"
#include "kube/api/time.h"
#include "operator/api/node_maintenance.h"

namespace nmo::op {

// The well-known node lifecycle condition types (Kubernetes 1.37, KEP-5683); free strings on
// every earlier version.
inline constexpr std::string_view kMaintenanceInProgressCondition = "MaintenanceInProgress";
inline constexpr std::string_view kDrainInProgressCondition = "DrainInProgress";
inline constexpr std::string_view kDrainedNodeCondition = "Drained";
// Every reason we write starts with this; the MaintenanceInProgress reason is exactly this.
inline constexpr std::string_view kLifecycleReasonPrefix = "NodeMaintenance";
// A MaintenancePlan's condition on the nodes it will take, and its reason (also the prefix that
// tells ours apart).
inline constexpr std::string_view kMaintenancePlannedCondition = "MaintenancePlanned";
inline constexpr std::string_view kPlannedReason = "MaintenancePlan";
// The fifth well-known type, which the kubelet's graceful shutdown (or an admin) sets: never ours.
inline constexpr std::string_view kGracefulNodeShutdownCondition = "GracefulNodeShutdownInProgress";
// All five, in the order of their life: what `kubectl maintenance list -o wide` and `diagnose`
// show.
inline constexpr std::array<std::string_view, 5> kWellKnownLifecycleConditions = {
    kMaintenancePlannedCondition, kMaintenanceInProgressCondition, kDrainInProgressCondition,
    kDrainedNodeCondition, kGracefulNodeShutdownCondition};

// The node's conditions of the well-known lifecycle types, in kWellKnownLifecycleConditions order.
[[nodiscard]] std::vector<kube::NodeCondition> well_known_lifecycle_conditions(
    const kube::Node& node);

// What the node should say about the maintenance.
enum class NodeLifecycle {
  kNotHeld,   // none of ours: Pending, failed and undone, being deleted, or writing them is off
  kDraining,  // the maintenance holds the node and its pods are leaving
  kDrained,   // the maintenance holds the node and every pod that must leave is gone
};

struct LifecycleIntent {
  NodeLifecycle stage = NodeLifecycle::kNotHeld;
  std::string cr_name;
  std::string cr_uid;
  std::string reason;            // spec.reason, for the MaintenanceInProgress message
  bool drain_timed_out = false;  // kDraining past spec.drainTimeout (the drain goes on)
};

// The intent of NodeMaintenance `nm` whose believed status is `status`: it holds the node while
// Running or Succeeded, or Failed by its drain timeout (`drain_timed_out`: the node stays
// cordoned and the drain goes on); never while being deleted, nor when `enabled` is false
// (--node-lifecycle-conditions=false).
[[nodiscard]] LifecycleIntent lifecycle_intent(const NodeMaintenance& nm,
                                               const NodeMaintenanceStatus& status,
                                               bool drain_timed_out, bool enabled);

struct LifecyclePatch {
  // The body of a strategic-merge patch of nodes/status, or std::nullopt when the node already
  // says what it should (or says it through another writer's conditions).
  std::optional<boost::json::object> patch;
  // Our types that another writer holds while we would set them, in table order.
  std::vector<std::string> foreign;
};

// Whether `condition` is one of ours (see the file comment).
[[nodiscard]] bool is_our_lifecycle_condition(const kube::NodeCondition& condition) noexcept;

// The patch that makes `node` say `intent` at `now` (see the file comment). lastTransitionTime
// is `now` for a new condition or a changed status and kept otherwise; lastHeartbeatTime is
// `now` on every condition written.
[[nodiscard]] LifecyclePatch lifecycle_patch(const kube::Node& node, const LifecycleIntent& intent,
                                             kube::Time now);

// The MaintenancePlanned message of plan `plan` on its `place`th node (1-based) of `total`, with
// the window when one is named ("" for none): "plan memory-upgrade, node 7 of 22, window Sat
// 22:00 Asia/Taipei".
[[nodiscard]] std::string planned_message(std::string_view plan, std::size_t place,
                                          std::size_t total, std::string_view window);

// The strategic-merge patch of nodes/status that makes `node` carry plan `plan`'s
// MaintenancePlanned with `message`, or none of that plan's when `message` is std::nullopt; or
// std::nullopt when the node already says so, or when another writer's (or another plan's)
// MaintenancePlanned is there. Carries the node's resourceVersion, as lifecycle_patch().
[[nodiscard]] std::optional<boost::json::object> planned_patch(
    const kube::Node& node, std::string_view plan, const std::optional<std::string>& message,
    kube::Time now);

}  // namespace nmo::op
