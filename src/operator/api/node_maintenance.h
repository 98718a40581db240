// NodeMaintenance (nodemaintenance.medik8s.io/v1beta1): the C++ projection of the operator's own
// custom resource, its JSON codec, and the small value helpers around it (phases, pending-pod
// reasons; Go durations and metav1.Conditions come from kube/api).
//
// The schema lives in deploy/crd/nodemaintenance.medik8s.io_nodemaintenances.yaml; the two must
// stay in step (docs/design.md §1). Decoding follows the kube/api conventions: an absent field and
// null both mean "not set", unknown fields are ignored (objects written by medik8s NMO carry the
// same names), and a wrongly typed field is an ErrorCode::kInvalid error naming it
// ("status.totalPods: expected an integer, got string").
//
// One deliberate exception, the optional spec extensions: a bad spec.drainTimeout or
// spec.gracePeriodSeconds never makes decoding fail. An object that does not decode is invisible
// to the controller, which then could neither report the mistake nor run its finalizer (the node
// would stay cordoned and the CR undeletable). Such a value is kept as written and explained in
// NodeMaintenanceSpec::validation_error(), so the controller can set the CR Failed with that text
// as lastError. The CRD schema rejects these values already; this covers what a pattern cannot
// (overflow, "0s", more than kMaxDrainTimeout) and objects stored before the schema said so.
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/condition.h"
#include "kube/api/duration.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::op {

// metav1.Condition and Go durations live in kube/api; this API uses them by these names.
using kube::Condition;
using kube::ConditionStatus;
using kube::Duration;
using kube::find_condition;
using kube::format_duration;
using kube::parse_condition_status;
using kube::parse_duration;
using kube::set_condition;
using kube::to_string;

// The API identity (docs/design.md §1; upstream medik8s NMO's, unchanged).
inline constexpr std::string_view kGroup = "nodemaintenance.medik8s.io";
inline constexpr std::string_view kVersion = "v1beta1";
inline constexpr std::string_view kApiVersion = "nodemaintenance.medik8s.io/v1beta1";
inline constexpr std::string_view kKind = "NodeMaintenance";
// How the shared informer of every NodeMaintenance (runtime/cache.h) is named in errors; the
// controllers and the webhook that read it declare it under this one name.
inline constexpr std::string_view kMaintenanceCache =
    "the NodeMaintenance cache (is the CRD installed?)";
// On a NodeMaintenance: while set, no new eviction or live migration starts (those under way
// finish, the node stays cordoned); the value says why. A MaintenancePlan with
// spec.onWindowClose Pause sets it on its drains when its window closes and removes it when the
// next one opens (docs/design.md §10).
inline constexpr std::string_view kHoldAnnotation = "nodemaintenance.medik8s.io/hold";
// source.component (and reportingComponent) of every Event the operator writes.
inline constexpr std::string_view kEventComponent = "node-maintenance-operator";
inline constexpr std::string_view kPlural = "nodemaintenances";
inline constexpr std::string_view kCrdName = "nodemaintenances.nodemaintenance.medik8s.io";

// The finalizer on every NodeMaintenance: upstream's name since kubevirt 2019 (not
// domain-qualified, so the API server warns about it; docs/design.md §2.1).
inline constexpr std::string_view kFinalizer = "foregroundDeleteNodeMaintenance";

// The condition types of status.conditions (docs/design.md §1.2).
inline constexpr std::string_view kConditionReady = "Ready";        // True when Succeeded
inline constexpr std::string_view kConditionCordoned = "Cordoned";  // node cordoned and tainted
inline constexpr std::string_view kConditionDrained = "Drained";  // every pod that must leave left
inline constexpr std::string_view kConditionBlocked = "Blocked";  // waiting on a gate or a pod

// The reasons of those conditions, but for a Failed status's Ready reason (failure.h) and the
// Blocked reason while a pod holds the drain (to_string(PendingPodReason)).
inline constexpr std::string_view kReasonSucceeded = "Succeeded";  // Ready True
inline constexpr std::string_view kReasonCordoned = "Cordoned";    // Cordoned True
inline constexpr std::string_view kReasonRestored = "Restored";    // Cordoned False: undone
inline constexpr std::string_view kReasonDraining = "Draining";    // Drained False; Blocked False
inline constexpr std::string_view kReasonDrained = "Drained";      // Drained True; Blocked False
inline constexpr std::string_view kReasonAdmitted = "Admitted";    // Blocked False: gates passed
// Blocked True while Pending: the etcd quorum gate (docs/design.md §2.2), and the budget slot or
// the node lease (§2.3).
inline constexpr std::string_view kReasonEtcdQuorum = "EtcdQuorum";
inline constexpr std::string_view kReasonWaitingForLease = "WaitingForLease";

// status.phase.
enum class Phase {
  kPending,    // waiting for a gate; nothing on the node touched
  kRunning,    // cordoned, tainted, draining
  kSucceeded,  // every pod that must leave is gone
  kFailed,     // stopped; status.lastError says why
};

// "Pending", "Running", "Succeeded", "Failed".
[[nodiscard]] std::string_view to_string(Phase phase) noexcept;

// The phase named `text` (exact, case-sensitive). ErrorCode::kInvalid otherwise:
//   unknown phase "running" (expected Pending, Running, Succeeded or Failed)
[[nodiscard]] Result<Phase> parse_phase(std::string_view text);

// status.pendingPodsRefs[].reason: why a pod has not left the node yet (docs/design.md §1.2, §2.4).
enum class PendingPodReason {
  kEvicting,               // eviction requested or about to be
  kWaitingForTermination,  // eviction accepted; the pod is shutting down
  kBlockedByPdb,           // 429: a PodDisruptionBudget allows no disruption
  kMultiplePdbs,           // 500: more than one PodDisruptionBudget selects the pod
  kEvictionDeferred,       // 429 from an admission webhook (KubeVirt migrating a VM)
  kNamespaceTerminating,   // 403: the pod's namespace is being deleted
  kError,                  // anything else; see the message
  // A KubeVirt VM's pod (docs/design.md §2.9):
  kMigratingVm,      // KubeVirt live-migrates the VM off the node; the pod ends by itself
  kVmWouldShutDown,  // held: evicting it would shut the VM down (vmEvictionPolicy)
  kVmNotMigratable,  // KubeVirt refuses the eviction until the VM can live-migrate
  kHeld,             // not started while kHoldAnnotation is set (a MaintenancePlan's window)
};

// "Evicting", "WaitingForTermination", "BlockedByPDB", "MultiplePDBs", "EvictionDeferred",
// "NamespaceTerminating", "Error", "MigratingVM", "VMWouldShutDown", "VMNotMigratable", "Held".
[[nodiscard]] std::string_view to_string(PendingPodReason reason) noexcept;

// The reason named `text` (exact). ErrorCode::kInvalid otherwise, listing the valid names.
[[nodiscard]] Result<PendingPodReason> parse_pending_pod_reason(std::string_view text);

// The longest spec.drainTimeout accepted: 10 years, far beyond any real drain. Go's syntax allows
// up to 2562047h (292 years), but the controller adds the timeout to a monotonic clock in
// nanoseconds to schedule its next look, and a timeout that long would overflow that deadline.
inline constexpr Duration kMaxDrainTimeout = std::chrono::hours{10 * 365 * 24};

// spec: what to maintain and how.
// spec.vmEvictionPolicy (docs/design.md §2.9): whether the drain may shut a KubeVirt VM down.
enum class VmEvictionPolicy {
  kLiveMigrate,    // the default: never shut a VM down by an eviction
  kAllowShutdown,  // evict as KubeVirt lets it, even when that stops the VM
};

// "LiveMigrate", "AllowShutdown".
[[nodiscard]] std::string_view to_string(VmEvictionPolicy policy) noexcept;

struct NodeMaintenanceSpec {
  std::string node_name;  // spec.nodeName: required, immutable (webhook)
  std::string reason;     // spec.reason: free text, "" when unset

  // spec.drainTimeout, parsed: set when the field is present, valid, positive and at most
  // kMaxDrainTimeout.
  std::optional<Duration> drain_timeout;
  // spec.drainTimeout as written ("" when absent; a non-string value serialised as JSON), so
  // messages can quote what the user wrote.
  std::string drain_timeout_text;
  // Non-empty when spec.drainTimeout is present but unusable; then drain_timeout is unset.
  // E.g. `spec.drainTimeout: invalid duration "1d": unknown unit "d" (use h, m, s, ms, us or ns)`.
  std::string drain_timeout_error;

  // spec.gracePeriodSeconds: set when present and >= 1.
  std::optional<std::int64_t> grace_period_seconds;
  // Non-empty when spec.gracePeriodSeconds is present but unusable (not an integer, or < 1:
  // 0 would force-delete); then grace_period_seconds is unset.
  std::string grace_period_seconds_error;

  // spec.vmEvictionPolicy; LiveMigrate when absent.
  VmEvictionPolicy vm_eviction_policy = VmEvictionPolicy::kLiveMigrate;
  // Non-empty when spec.vmEvictionPolicy is present but not one of its values.
  std::string vm_eviction_policy_error;

  // The first reason this spec cannot be acted on, or "" when it can: an empty nodeName, then
  // drain_timeout_error, grace_period_seconds_error, vm_eviction_policy_error. The controller
  // sets the CR Failed with this text as status.lastError.
  [[nodiscard]] std::string validation_error() const;

  friend bool operator==(const NodeMaintenanceSpec&, const NodeMaintenanceSpec&) = default;
};

// One entry of status.pendingPodsRefs. Objects written by medik8s NMO carry only namespace and
// name.
struct PendingPodRef {
  // The trailing underscore only dodges the keyword.
  std::string namespace_;  // NOLINT(readability-identifier-naming)
  std::string name;
  std::optional<PendingPodReason> reason;
  std::string message;

  friend bool operator==(const PendingPodRef&, const PendingPodRef&) = default;
};

// status, with the meanings of docs/design.md §1.2. Every field is written only through
// /status.
struct NodeMaintenanceStatus {
  std::optional<Phase> phase;             // phase; unset on a CR the operator has not seen yet
  std::int64_t total_pods = 0;            // totalPods: pods that must leave the node
  std::int64_t eviction_pods = 0;         // evictionPods: of those, already gone
  std::vector<std::string> pending_pods;  // pendingPods: names still to leave
  std::vector<PendingPodRef> pending_pods_refs;  // pendingPodsRefs: the same, with reasons
  std::int64_t drain_progress = 0;               // drainProgress: percent; may be < 0 (upstream)
  std::int64_t totalpods = 0;  // totalpods (upstream, lower case): all pods at drain start
  std::string last_error;      // lastError; "" when none
  std::optional<kube::Time> last_update;  // lastUpdate (metav1.Time: whole seconds on the wire)
  std::int64_t error_on_lease_count = 0;  // errorOnLeaseCount
  std::vector<Condition> conditions;      // conditions, one per type

  friend bool operator==(const NodeMaintenanceStatus&, const NodeMaintenanceStatus&) = default;
};

// A NodeMaintenance object.
struct NodeMaintenance {
  kube::ObjectMeta meta;
  NodeMaintenanceSpec spec;
  NodeMaintenanceStatus status;

  friend bool operator==(const NodeMaintenance&, const NodeMaintenance&) = default;
};

// Decodes a NodeMaintenance object (a whole object as the API server sends it, or a list item).
// `kind`, when present, must be "NodeMaintenance". Errors are ErrorCode::kInvalid naming the
// field ("spec.nodeName: expected a string, got number", `status.phase: unknown phase "Done"
// ...`), except for spec.drainTimeout and spec.gracePeriodSeconds (see the file comment and
// NodeMaintenanceSpec). An object without spec decodes with an empty nodeName, which
// validation_error() reports.
[[nodiscard]] Result<NodeMaintenance> decode_node_maintenance(const boost::json::value& object);

// The status as the CRD schema expects it: camelCase names (and upstream's lower-case
// `totalpods`), integers always written, an unset phase or lastUpdate and an empty lastError,
// pendingPods, pendingPodsRefs or conditions left out, times in metav1.Time format (whole
// seconds, truncated), a pending pod's unset reason and empty message left out, a condition's
// observedGeneration left out when 0. decode_node_maintenance() of {"status": encode_status(s)}
// gives back `s` when its times are whole seconds.
[[nodiscard]] boost::json::object encode_status(const NodeMaintenanceStatus& status);

// A new NodeMaintenance as its creators send it (`kubectl maintenance start`, a MaintenancePlan):
// apiVersion, kind, metadata.name, metadata.labels and metadata.annotations (left out when empty),
// and spec.nodeName, spec.reason and spec.drainTimeout (drain_timeout_text; both left out when
// ""), spec.gracePeriodSeconds when set and spec.vmEvictionPolicy unless it is the default
// LiveMigrate. The rest of `meta` (a creation has no uid or resourceVersion yet) and the spec's
// parsed and error fields are not written.
[[nodiscard]] boost::json::value node_maintenance_object(const kube::ObjectMeta& meta,
                                                         const NodeMaintenanceSpec& spec);

// A JSON merge patch (RFC 7386) for the /status subresource that makes the stored status equal
// to `status`: {"status": {...encode_status(status), and null for each field it left out}}.
// The nulls matter: a merge patch leaves absent fields alone, so without them a cleared
// lastError or an emptied pendingPods would survive. Fields this projection does not know are
// left untouched.
[[nodiscard]] boost::json::object status_merge_patch(const NodeMaintenanceStatus& status);

}  // namespace nmo::op

namespace nmo::kube {

// nodemaintenance.medik8s.io/v1beta1 nodemaintenances (cluster-scoped), for the typed client
// and the reflector: get/list/watch<op::NodeMaintenance>.
template <>
struct ResourceInfo<op::NodeMaintenance> {
  static constexpr std::string_view kGroup = op::kGroup;
  static constexpr std::string_view kVersion = op::kVersion;
  static constexpr std::string_view kPlural = op::kPlural;
  static constexpr std::string_view kKind = op::kKind;
  static constexpr bool kNamespaced = false;
  // op::decode_node_maintenance().
  static Result<op::NodeMaintenance> decode(const boost::json::value& object) {
    return op::decode_node_maintenance(object);
  }
};

}  // namespace nmo::kube
