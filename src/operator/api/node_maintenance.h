// NodeMaintenance (nodemaintenance.medik8s.io/v1beta1): the C++ projection of the operator's own
// custom resource, its JSON codec, and the small value helpers around it (phases, pending-pod
// reasons, Go-style durations, metav1.Condition bookkeeping).
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
#include "kube/api/meta.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::op {

// The API identity (docs/design.md §1; upstream medik8s NMO's, unchanged).
inline constexpr std::string_view kGroup = "nodemaintenance.medik8s.io";
inline constexpr std::string_view kVersion = "v1beta1";
inline constexpr std::string_view kApiVersion = "nodemaintenance.medik8s.io/v1beta1";
inline constexpr std::string_view kKind = "NodeMaintenance";
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
};

// "Evicting", "WaitingForTermination", "BlockedByPDB", "MultiplePDBs", "EvictionDeferred",
// "NamespaceTerminating", "Error".
[[nodiscard]] std::string_view to_string(PendingPodReason reason) noexcept;

// The reason named `text` (exact). ErrorCode::kInvalid otherwise, listing the valid names.
[[nodiscard]] Result<PendingPodReason> parse_pending_pod_reason(std::string_view text);

// metav1.Condition's status.
enum class ConditionStatus { kTrue, kFalse, kUnknown };

// "True", "False", "Unknown".
[[nodiscard]] std::string_view to_string(ConditionStatus status) noexcept;

// The status named `text` (exact). ErrorCode::kInvalid otherwise.
[[nodiscard]] Result<ConditionStatus> parse_condition_status(std::string_view text);

// A Go time.Duration: signed nanoseconds in 64 bits.
using Duration = std::chrono::nanoseconds;

// Parses a duration as Go's time.ParseDuration does, restricted to what the CRD's pattern for
// spec.drainTimeout accepts: one or more <decimal number><unit> pairs, e.g. "90m", "1h30m",
// "2h", "45s", "1.5h", "300ms". Units: ns, us, µs (U+00B5 or U+03BC), ms, s, m, h. Fractions are
// converted as Go converts them ("1.5h" is 90 minutes). Rejected with ErrorCode::kInvalid, the
// message quoting the input:
//   ""     invalid duration "": empty (write a number and a unit, e.g. "90m" or "2h")
//   "-1m"  invalid duration "-1m": must not be negative
//   "5"    invalid duration "5": missing unit after "5" (use h, m, s, ms, us or ns)
//   "1d"   invalid duration "1d": unknown unit "d" (use h, m, s, ms, us or ns)
// as are a "+" sign, ".5h" and "1.h" (a digit must stand on each side of the point), and
// durations beyond Go's limit of 2562047h47m16.854775807s. "0s" is a valid duration; whether
// zero makes sense is the caller's business.
[[nodiscard]] Result<Duration> parse_duration(std::string_view text);

// Formats `duration` exactly as Go's time.Duration.String(): "1h30m0s", "2h0m0s", "45s",
// "1m30s", "1.5s", "300ms", "1.5µs" (U+00B5), "0s", "-2m0s". Messages quote drainTimeout this
// way ("drain did not complete within 1h30m0s"), which is also what a Go client would print.
[[nodiscard]] std::string format_duration(Duration duration);

// The longest spec.drainTimeout accepted: 10 years, far beyond any real drain. Go's syntax allows
// up to 2562047h (292 years), but the controller adds the timeout to a monotonic clock in
// nanoseconds to schedule its next look, and a timeout that long would overflow that deadline.
inline constexpr Duration kMaxDrainTimeout = std::chrono::hours{10 * 365 * 24};

// spec: what to maintain and how.
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

  // The first reason this spec cannot be acted on, or "" when it can: an empty nodeName, then
  // drain_timeout_error, then grace_period_seconds_error. The controller sets the CR Failed
  // with this text as status.lastError.
  [[nodiscard]] std::string validation_error() const;

  friend bool operator==(const NodeMaintenanceSpec&, const NodeMaintenanceSpec&) = default;
};

// One entry of status.conditions: a metav1.Condition.
struct Condition {
  std::string type;  // CamelCase, e.g. kConditionReady
  ConditionStatus status = ConditionStatus::kUnknown;
  std::int64_t observed_generation = 0;  // 0 when unset; not written then
  kube::Time last_transition_time{};
  std::string reason;   // CamelCase, must not be empty (CRD schema)
  std::string message;  // may be empty

  friend bool operator==(const Condition&, const Condition&) = default;
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

// status, with the story's meanings (docs/design.md §1.2). Every field is written only through
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

// A JSON merge patch (RFC 7386) for the /status subresource that makes the stored status equal
// to `status`: {"status": {...encode_status(status), and null for each field it left out}}.
// The nulls matter: a merge patch leaves absent fields alone, so without them a cleared
// lastError or an emptied pendingPods would survive. Fields this projection does not know are
// left untouched.
[[nodiscard]] boost::json::object status_merge_patch(const NodeMaintenanceStatus& status);

// The condition of `type`, or nullptr. Valid while `conditions` is alive and unmodified.
[[nodiscard]] const Condition* find_condition(const std::vector<Condition>& conditions,
                                              std::string_view type) noexcept;

// Sets `condition` in `conditions`, with metav1 semantics (apimachinery's
// meta.SetStatusCondition): a new type is appended with lastTransitionTime `now`; an existing
// one gets the new status, reason, message and observedGeneration, and its lastTransitionTime
// becomes `now` only when the status changes. condition.last_transition_time is ignored. `now`
// is truncated to whole seconds, the precision metav1.Time keeps on the wire, so a status built
// in memory compares equal to the one read back. Returns whether anything changed.
bool set_condition(std::vector<Condition>& conditions, Condition condition, kube::Time now);

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
