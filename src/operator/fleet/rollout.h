// Rollout: the decisions of a MaintenancePlan (docs/design.md §10), as a pure function of the
// plan and of what the controller read of the cluster a moment ago. No I/O: the controller
// (plan_controller.h) reads the world, calls decide(), carries out what it returns (creates and
// deletes NodeMaintenances, writes the status, sends the Events) and calls it again later.
//
// Every node of a plan walks the same path, recorded in status.nodes so that a restarted operator
// resumes where the plan was:
//
//   Waiting ──create NodeMaintenance──▶ Draining ──Succeeded──▶ InMaintenance
//     ──done (spec.doneWhen)── delete it ──▶ Restoring ──gone──▶ HealthCheck ──healthy──▶ Done
//
// and Failed when its NodeMaintenance fails, when it does not exist, or when its NodeMaintenance
// is deleted by someone else before the drain finished (`kubectl maintenance stop`). A failed
// drain and a health gate that timed out stop the plan: the condition Stopped in its status,
// with a token that only `kubectl maintenance resume` (the annotation kResumeAnnotation with that
// token) lifts; spec.paused is the user's alone. A NodeMaintenance deleted by someone else while
// the node was drained counts as the work being done.
//
// A NodeMaintenance is the plan's only when it carries the plan's uid (kPlanUidAnnotation) and
// names the node expected; one of the plan's name that is not makes the node wait, never adopted.
//
// New nodes start in plan order, strictly: a node that cannot start yet (someone else's
// maintenance on it, maxUnavailable reached) holds the ones after it. Nothing starts while the
// plan is paused, deleted or outside its windows; nodes already started carry on. At most
// maxParallel nodes are in progress (Draining to HealthCheck); at most maxUnavailable nodes of
// the plan are unavailable for any reason (in progress, NotReady, cordoned, under someone else's
// maintenance, their medik8s lease held by Node Health Check or Self Node Remediation). A
// control-plane node is always alone in progress. A node given back passes the health gate only
// once it is healthy and nobody else (Node Health Check remediating it) holds its node lease.
//
// Threading: pure functions over values; safe from any thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "kube/api/time.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"
#include "operator/fleet/plan_events.h"
#include "operator/fleet/window.h"

namespace nmo::op::fleet {

// The health gate's patience when spec.healthGateTimeout is not set.
inline constexpr std::chrono::minutes kDefaultHealthGateTimeout{30};
// How often a plan with nodes in progress looks again by default: node readiness, boot IDs and
// budgets have no watch of the plan's own.
inline constexpr std::chrono::seconds kProgressPoll{5};
// How often a node in the health gate is looked at: nothing of the plan's own wakes it when the
// node turns Ready or its budgets fill up again, and each second it waits holds the next node.
inline constexpr std::chrono::seconds kGatePoll{1};
// The longest wait between two looks at an idle plan (a window far away still gets a look, so a
// changed clock or time-zone database is noticed).
inline constexpr std::chrono::minutes kIdlePoll{10};

// The well-known zone label (spec.order ByZone).
inline constexpr std::string_view kZoneLabel = "topology.kubernetes.io/zone";

// What the plan needs to know of one node.
struct NodeFacts {
  std::string name;
  bool ready = false;
  bool unschedulable = false;
  bool control_plane = false;  // is_control_plane() (operator/gates/etcd_quorum.h)
  std::string zone;
  std::string boot_id;
};

// One NodeMaintenance of the cluster.
struct MaintenanceFacts {
  std::string name;
  std::string node;
  bool owned = false;     // carries this plan's uid (kPlanUidAnnotation)
  bool deleting = false;  // deletionTimestamp set
  std::optional<Phase> phase;
  std::string last_error;
  std::int64_t pending_pods = 0;
  bool done_marked = false;  // kDoneAnnotation set
  std::string hold;          // kHoldAnnotation's value; "" when not set
};

// One PodDisruptionBudget the health gate may look at.
struct BudgetFacts {
  std::string key;  // "namespace/name"
  std::int32_t current_healthy = 0;
  std::int32_t desired_healthy = 0;
};

// One KubeVirt VM the health gate may look at (a VirtualMachineInstance that still exists).
struct VmFacts {
  std::string key;         // "namespace/name"
  std::string phase;       // status.phase ("Running", "Scheduling", ...); "" when not reported
  bool migrating = false;  // a live migration started and has neither completed nor failed
};

// One Warning Event the operator reported about a node of the plan or its NodeMaintenance.
struct WarningFacts {
  std::string node;
  std::string reason;
  std::string message;
  kube::Time last_seen;
};

// What the controller read of the cluster for one decision.
struct World {
  kube::Time now;
  // The nodes the plan may name: those matching spec.nodeSelector, or those of spec.nodes (and
  // any node of status.nodes). A node missing here does not exist.
  std::vector<NodeFacts> nodes;
  // Every NodeMaintenance of the cluster.
  std::vector<MaintenanceFacts> maintenances;
  // The PodDisruptionBudgets named by status.nodes[].budgets that still exist.
  std::vector<BudgetFacts> budgets;
  // The VMs named by status.nodes[].vms that still exist (none when KubeVirt is not served).
  std::vector<VmFacts> vms;
  // The operator's Warning Events about the nodes in the health gate (or their
  // NodeMaintenances): the gate waits while one is newer than the node's hand-back.
  std::vector<WarningFacts> warnings;
  // Nodes whose medik8s node lease is held (and valid) by someone other than the operator, with
  // the holder ("NodeHealthCheck-<name>"); read when spec.maxUnavailable is set or a node is in
  // the health gate.
  std::map<std::string, std::string> leased_by_others;
  // How soon to look again while nodes are in progress (the controller's poll interval).
  std::chrono::seconds progress_poll = kProgressPoll;
};

// An Event on the plan.
struct PlanEvent {
  PlanEventReason reason = PlanEventReason::kPlanStarted;
  std::string message;
  std::string node;  // the node it is about, "" for the plan as a whole

  [[nodiscard]] bool warning() const noexcept { return is_warning(reason); }

  friend bool operator==(const PlanEvent&, const PlanEvent&) = default;
};

// A NodeMaintenance to create for the node.
struct StartNode {
  std::string node;
  std::string maintenance;

  friend bool operator==(const StartNode&, const StartNode&) = default;
};

// A NodeMaintenance whose drain is held (kHoldAnnotation set to `message`).
struct HoldNode {
  std::string maintenance;
  std::string message;

  friend bool operator==(const HoldNode&, const HoldNode&) = default;
};

// What to do now.
struct Decision {
  // The status to write (unchanged when nothing changed).
  MaintenancePlanStatus status;
  // NodeMaintenances to create, in plan order. Their status.nodes entries already say Draining;
  // a create the API refuses puts the entry back to Waiting (the controller's job).
  std::vector<StartNode> create;
  // NodeMaintenances to delete (the node is given back).
  std::vector<std::string> remove;
  // NodeMaintenances to release from the plan (its label and uid annotation removed) when it is
  // deleted: the nodes stay drained until the admin deletes them.
  std::vector<std::string> release;
  // Drains to hold outside the window (spec.onWindowClose Pause), and to let go on again.
  std::vector<HoldNode> hold;
  std::vector<std::string> unhold;
  // The plan is deleted and nothing of it is left to do: remove its finalizer.
  bool remove_finalizer = false;
  std::vector<PlanEvent> events;
  // When to look again.
  std::chrono::seconds requeue_after = kIdlePoll;
};

// The predictable name of the NodeMaintenance the plan creates for `node`:
// "<plan>-<node>-<hash>", where <hash> (8 hex digits) is of the plan's and the node's names
// together, so that plan "a" with node "b-c" and plan "a-b" with node "c" differ; the node's part
// is cut short when the whole would be longer than a name may be (253).
[[nodiscard]] std::string maintenance_name(const std::string& plan, const std::string& node);

// The spec's rules, checked: what the controller cannot act on is an ErrorCode::kInvalid error
// naming the field (`spec.timeZone: unknown time zone "Mars/Base"`, `spec.maxParallel: "x%" is
// not a number or a percentage`, `spec.soakTime: required with doneWhen Soaked`, `spec: exactly
// one of nodes and nodeSelector`).
struct PlanRules {
  Schedule schedule;
  DoneWhen done_when = DoneWhen::kConfirmed;
  WindowClose on_window_close = WindowClose::kFinish;
  std::chrono::seconds soak_time{0};
  std::chrono::seconds health_gate_timeout = kDefaultHealthGateTimeout;
};
[[nodiscard]] Result<PlanRules> check_rules(const MaintenancePlanSpec& spec);

// The number that `value` (a count, or a percentage of `total` rounded down) stands for, at least
// 1; `fallback` when unset. An error names `field`.
[[nodiscard]] Result<int> resolve_limit(const std::optional<kube::IntOrString>& value, int total,
                                        int fallback, std::string_view field);

// What the steering taint (docs/design.md §10, "Steering") needs to know of one plan.
struct PlanSteering {
  bool deleting = false;  // deletionTimestamp set
  // The plan's status as last decided (the status being written, for the plan in reconcile);
  // never null.
  const MaintenancePlanStatus* status = nullptr;
};

// The nodes that carry the steering taint: the Waiting nodes of every plan in `plans` that is
// not being deleted and whose phase is Running, so that the pods evicted from a plan's node avoid
// the nodes it takes later; none when `enabled` is false (--plan-steering-taint). A plan not
// started yet, waiting for its window, paused or finished steers nothing.
[[nodiscard]] std::set<std::string> steered_nodes(const std::vector<PlanSteering>& plans,
                                                  bool enabled);

// The next step of `plan` in `world`. See the file comment.
[[nodiscard]] Decision decide(const MaintenancePlan& plan, const World& world);

}  // namespace nmo::op::fleet
