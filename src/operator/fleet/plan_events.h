// The reason of every Event a MaintenancePlan sends (docs/design.md §10), and whether it is a
// Warning, in one table: the decisions (rollout.h) and the controller that carries them out
// (plan_controller.h) name a reason by its enumerator, so what `kubectl describe mp` shows is
// spelled once.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <string_view>

namespace nmo::op::fleet {

enum class PlanEventReason {
  kPlanStarted,        // the plan's nodes, in order, at its first look
  kPlanResumed,        // `kubectl maintenance resume` lifted a stop
  kPlanDeleted,        // the plan's deletion: what was stopped and what was left drained
  kPlanSucceeded,      // every node Done
  kPlanFailed,         // every node finished, some Failed (Warning)
  kInvalidPlan,        // the spec cannot be acted on (Warning)
  kWaitingForWindow,   // outside its windows, nothing moving
  kNodeStarted,        // a NodeMaintenance created
  kNodeNotStarted,     // the API refused the create (Warning)
  kNameCollision,      // the NodeMaintenance's name is taken by one not the plan's (Warning)
  kNodeDrained,        // the node's NodeMaintenance Succeeded
  kNodeWorkDone,       // the work is done: the NodeMaintenance is deleted
  kNodeDone,           // the node is back and healthy
  kNodeFailed,         // the node's drain failed or was stopped, or it does not exist (Warning)
  kHealthGateTimeout,  // the node was not healthy in time: the plan stops (Warning)
  kNodeHeld,           // a drain held outside the window (spec.onWindowClose Pause)
  kNodeResumed,        // a held drain goes on
};

// The Event's reason: "PlanStarted", "PlanResumed", "PlanDeleted", "PlanSucceeded", "PlanFailed",
// "InvalidPlan", "WaitingForWindow", "NodeStarted", "NodeNotStarted", "NameCollision",
// "NodeDrained", "NodeWorkDone", "NodeDone", "NodeFailed", "HealthGateTimeout", "NodeHeld",
// "NodeResumed". NodeFailed and HealthGateTimeout are also the reasons of the plan's Stopped
// condition (operator/api/maintenance_plan.h), and the same words.
[[nodiscard]] std::string_view to_string(PlanEventReason reason) noexcept;

// True for the reasons sent as Warning Events (marked above), false for Normal ones.
[[nodiscard]] bool is_warning(PlanEventReason reason) noexcept;

}  // namespace nmo::op::fleet
