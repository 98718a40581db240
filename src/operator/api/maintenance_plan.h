// MaintenancePlan (nodemaintenance.medik8s.io/v1alpha1): many nodes taken out one after the
// other, inside maintenance windows, each one through a NodeMaintenance the plan creates and
// deletes (docs/design.md §10). The C++ projection of the resource and its JSON codec.
//
// The schema lives in deploy/crd/nodemaintenance.medik8s.io_maintenanceplans.yaml; the two must
// stay in step. Decoding follows the kube/api conventions (absent and null mean "not set",
// unknown fields are ignored, a wrongly typed field is an ErrorCode::kInvalid error naming it).
// What the schema cannot check (a time zone's existence, a window's times, a percentage's
// syntax, durations) is checked by the controller, which reports it in status.message instead of
// acting on the plan.
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/condition.h"
#include "kube/api/int_or_string.h"
#include "kube/api/label_selector.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::op {

inline constexpr std::string_view kPlanVersion = "v1alpha1";
inline constexpr std::string_view kPlanApiVersion = "nodemaintenance.medik8s.io/v1alpha1";
inline constexpr std::string_view kPlanKind = "MaintenancePlan";
inline constexpr std::string_view kPlanPlural = "maintenanceplans";
inline constexpr std::string_view kPlanCrdName = "maintenanceplans.nodemaintenance.medik8s.io";

// The finalizer of every MaintenancePlan: deleting a plan stops it at a safe point first.
inline constexpr std::string_view kPlanFinalizer = "nodemaintenance.medik8s.io/plan";
// On each NodeMaintenance a plan creates: the plan's name (plan names are at most 63 characters,
// a label value's limit, which the CRD checks).
inline constexpr std::string_view kPlanLabel = "nodemaintenance.medik8s.io/plan";
// On each NodeMaintenance a plan creates: the plan's metadata.uid. With the node it names, this is
// what makes a NodeMaintenance the plan's own; there is no owner reference, so that no delete of
// the plan lets the garbage collector give a drained node back (docs/design.md §10).
inline constexpr std::string_view kPlanUidAnnotation = "nodemaintenance.medik8s.io/plan-uid";
// On a MaintenancePlan: the user's word that a plan the operator stopped goes on. Acts only when
// its value is the status.stopToken of the stop in force, so a manifest re-applied from before
// cannot resume a later stop; written by `kubectl maintenance resume PLAN`.
inline constexpr std::string_view kResumeAnnotation = "nodemaintenance.medik8s.io/resume";
// The status condition of a plan the operator stopped (a node failed, a health gate timed out).
inline constexpr std::string_view kStoppedCondition = "Stopped";
// Its reasons: True after a node's drain failed or was stopped, or after a node given back was not
// healthy within spec.healthGateTimeout; False once `kubectl maintenance resume` lifted the stop.
inline constexpr std::string_view kStoppedByNodeFailure = "NodeFailed";
inline constexpr std::string_view kStoppedByHealthGate = "HealthGateTimeout";
inline constexpr std::string_view kStopResumed = "Resumed";
// On a NodeMaintenance: the admin's word that the work on the node is done (RFC 3339 time);
// written by `kubectl maintenance done NODE`.
inline constexpr std::string_view kDoneAnnotation = "nodemaintenance.medik8s.io/done";

// spec.order.
enum class PlanOrder {
  kAsListed,  // spec.nodes as written (the default with spec.nodes)
  kByName,    // by node name (the default with spec.nodeSelector)
  kByZone,    // by topology.kubernetes.io/zone, then by name: one zone after the other
};

// spec.doneWhen: when the work on a drained node counts as done, so the node is given back.
enum class DoneWhen {
  kConfirmed,     // the admin says so (kDoneAnnotation); the default
  kNodeRebooted,  // the node's boot ID changed and it is Ready again
  kSoaked,        // spec.soakTime after the drain succeeded
};

// spec.onWindowClose: what a drain under way does when the plan's window closes.
enum class WindowClose {
  kFinish,  // it finishes (the default); nothing new starts
  kPause,   // no new eviction or migration starts until the next window (kHoldAnnotation on its
            // NodeMaintenance); the node stays cordoned, the pods already gone stay gone
};

// status.nodes[].phase: where one node of the plan is.
enum class PlanNodePhase {
  kWaiting,        // not started
  kDraining,       // its NodeMaintenance exists and is not Succeeded yet
  kInMaintenance,  // drained; waiting for the work on it to be done (spec.doneWhen)
  kRestoring,      // its NodeMaintenance was deleted; the node is being given back
  kHealthCheck,    // given back; waiting until it is healthy (the health gate)
  kDone,           // healthy again
  kFailed,         // given up; status.nodes[].message says why
};

// status.phase: the plan as a whole.
enum class PlanPhase {
  kRunning,           // nodes are being taken out, or will be at once
  kWaitingForWindow,  // outside every window; nothing new starts until status.nextWindow
  kPaused,            // spec.paused (the admin's), or stopped by the operator (condition Stopped)
  kSucceeded,         // every node done
  kFailed,            // finished with at least one node failed, or the spec is invalid
};

[[nodiscard]] std::string_view to_string(PlanOrder order) noexcept;
[[nodiscard]] std::string_view to_string(DoneWhen done) noexcept;
[[nodiscard]] std::string_view to_string(WindowClose close) noexcept;
[[nodiscard]] std::string_view to_string(PlanNodePhase phase) noexcept;
[[nodiscard]] std::string_view to_string(PlanPhase phase) noexcept;

// One weekly window of spec.windows, as written ("Sat", "22:00", "06:00").
struct PlanWindow {
  std::vector<std::string> days;
  std::string start;
  std::string end;

  friend bool operator==(const PlanWindow&, const PlanWindow&) = default;
};

struct MaintenancePlanSpec {
  std::vector<std::string> nodes;                    // spec.nodes
  std::optional<kube::LabelSelector> node_selector;  // spec.nodeSelector
  std::optional<PlanOrder> order;                    // unset: the default for nodes/selector
  std::string reason;                                // spec.reason, copied to each maintenance
  std::optional<kube::IntOrString> max_parallel;     // unset: 1
  std::optional<kube::IntOrString> max_unavailable;  // unset: no limit beyond maxParallel
  std::string time_zone;                             // IANA; "" = UTC
  std::vector<PlanWindow> windows;                   // empty: always open
  std::vector<std::string> blackout_dates;           // "YYYY-MM-DD" in time_zone
  std::optional<WindowClose> on_window_close;        // unset: Finish
  std::optional<DoneWhen> done_when;                 // unset: Confirmed
  std::string soak_time;                             // Go duration, with DoneWhen::kSoaked
  std::string health_gate_timeout;                   // Go duration; "" = 30m
  bool paused = false;

  // Values the schema lets through but that are not one of the enum's names are kept here, so
  // the controller can say what is wrong ("spec.order: unknown order \"Random\" ...").
  std::string order_error;
  std::string done_when_error;
  std::string on_window_close_error;

  friend bool operator==(const MaintenancePlanSpec&, const MaintenancePlanSpec&) = default;
};

// status.nodes[]: one node's history in the plan (while it is in progress, and when it failed).
struct PlanNodeStatus {
  std::string name;
  PlanNodePhase phase = PlanNodePhase::kWaiting;
  std::string maintenance;  // the NodeMaintenance's name once created
  std::string boot_id;      // the node's status.nodeInfo.bootID when it was started
  // The PodDisruptionBudgets ("namespace/name") that covered pods on the node when it was
  // started: the health gate waits until each is back to its desired healthy count.
  std::vector<std::string> budgets;
  // The KubeVirt VMs ("namespace/name" of their VirtualMachineInstances) that ran on the node
  // when it was started: the health gate waits until each is Running and no longer migrating.
  std::vector<std::string> vms;
  std::optional<kube::Time> started_at;    // NodeMaintenance created
  std::optional<kube::Time> drained_at;    // NodeMaintenance Succeeded
  std::optional<kube::Time> completed_at;  // work done (spec.doneWhen); NodeMaintenance deleted
  std::optional<kube::Time> restored_at;   // NodeMaintenance gone, node given back
  // The health gate's timeout counts from here: restored_at, moved on each time the gate timed
  // out and paused the plan, so a resumed plan gives the node the whole timeout again.
  std::optional<kube::Time> gate_started_at;
  std::optional<kube::Time> finished_at;  // given up (Failed)
  std::string message;                    // what it waits for now, or why it failed
  // Done: seconds from start to healthy again. A Done entry keeps only its name, phase and this,
  // so that the status of a 10,000-node plan stays far below etcd's object limit
  // (docs/design.md §10).
  std::int64_t took_seconds = 0;

  friend bool operator==(const PlanNodeStatus&, const PlanNodeStatus&) = default;
};

struct MaintenancePlanStatus {
  std::optional<PlanPhase> phase;
  std::int64_t observed_generation = 0;
  std::int64_t total = 0;
  std::int64_t done = 0;
  std::int64_t in_progress = 0;
  std::int64_t waiting = 0;
  std::int64_t failed = 0;
  std::vector<std::string> current_nodes;  // in progress, in plan order
  std::optional<kube::Time> next_window;   // when nothing may start now: when it may again
  std::string next_window_text;   // the same as the admin reads it: "Sat 22:00 Asia/Taipei"
  std::optional<kube::Time> eta;  // estimated end, from measured node durations
  std::string message;            // what the plan waits for now, or why it stopped
  // kStoppedCondition: True while the operator holds the plan stopped (reason
  // kStoppedByNodeFailure or kStoppedByHealthGate, the message says what happened); False once
  // resumed (reason kStopResumed).
  std::vector<kube::Condition> conditions;
  // While stopped: this stop's token, the value kResumeAnnotation must have to resume it.
  std::string stop_token;
  std::vector<PlanNodeStatus> nodes;  // every node of the plan, in plan order

  friend bool operator==(const MaintenancePlanStatus&, const MaintenancePlanStatus&) = default;
};

struct MaintenancePlan {
  kube::ObjectMeta meta;
  MaintenancePlanSpec spec;
  MaintenancePlanStatus status;

  friend bool operator==(const MaintenancePlan&, const MaintenancePlan&) = default;
};

// Decodes a MaintenancePlan object (whole, or a list item). Errors are ErrorCode::kInvalid
// naming the field ("spec.nodes[1]: expected a string, got number", `status.nodes[0].phase:
// unknown phase "Busy"`), except for spec.order and spec.doneWhen (see MaintenancePlanSpec).
[[nodiscard]] Result<MaintenancePlan> decode_maintenance_plan(const boost::json::value& object);

// True while the operator holds the plan stopped (condition kStoppedCondition True).
[[nodiscard]] bool plan_stopped(const MaintenancePlanStatus& status) noexcept;

// The spec as the CRD schema expects it (camelCase; empty strings and lists, unset options and a
// false `paused` left out; the kept enum errors are not fields and are not written).
// decode_maintenance_plan() of {"spec": encode(s)} gives back `s` when s has no enum errors.
[[nodiscard]] boost::json::object encode_plan_spec(const MaintenancePlanSpec& spec);

// The status as the CRD schema expects it (camelCase, times in metav1.Time format, empty strings
// and lists and unset times left out). decode_maintenance_plan() of {"status": encode(s)} gives
// back `s` when its times are whole seconds.
[[nodiscard]] boost::json::object encode_plan_status(const MaintenancePlanStatus& status);

// A JSON merge patch for /status that makes the stored status equal to `status` (null for each
// top-level field encode_plan_status() left out; status.nodes is replaced as a whole).
[[nodiscard]] boost::json::object plan_status_merge_patch(const MaintenancePlanStatus& status);

}  // namespace nmo::op

namespace nmo::kube {

// nodemaintenance.medik8s.io/v1alpha1 maintenanceplans (cluster-scoped).
template <>
struct ResourceInfo<op::MaintenancePlan> {
  static constexpr std::string_view kGroup = "nodemaintenance.medik8s.io";
  static constexpr std::string_view kVersion = op::kPlanVersion;
  static constexpr std::string_view kPlural = op::kPlanPlural;
  static constexpr std::string_view kKind = op::kPlanKind;
  static constexpr bool kNamespaced = false;
  static Result<op::MaintenancePlan> decode(const boost::json::value& object) {
    return op::decode_maintenance_plan(object);
  }
};

}  // namespace nmo::kube
