// The node changes of a maintenance, as RFC 6902 JSON Patches (docs/design.md §2.3, §2.5, §2.6,
// §2.8).
//
// Apply (maintenance_patch), one patch, in this order of effect:
//   test      /spec/taints as read (or /metadata/resourceVersion when the node has no taints), so
//             a concurrent change makes the patch fail (retry from a fresh read) instead of
//             being lost
//   add       annotation nodemaintenance.medik8s.io/prior-state (see PriorState)
//   add       label remediation.medik8s.io/exclude-from-remediation=true
//   add       /spec/unschedulable: true
//   add/replace /spec/taints: the node's taints, then node.kubernetes.io/unschedulable:NoSchedule
//             and medik8s.io/drain=draining:NoSchedule where missing (matched by key and effect;
//             other taints are never dropped, nothing is duplicated)
// Only what is missing is written; nothing to do gives std::nullopt. The same call re-applies the
// maintenance after someone undid part of it (see check_maintenance()).
//
// kube-controller-manager owns node.kubernetes.io/unschedulable too (it adds it while the node is
// unschedulable and removes it otherwise). These patches never remove it while the node stays
// cordoned, and its absence alone is not tampering.
//
// Restore (restore_patch), on deletion, only on the node whose prior-state annotation carries the
// CR's uid: remove the drain taint, set spec.unschedulable back to the recorded value (an earlier
// cordon survives, and then the unschedulable taint stays too; otherwise it goes with the cordon),
// put the label back to its earlier value or remove it, remove the annotation. A node with
// upstream's value-less medik8s.io/drain:NoSchedule taint and no annotation is an upstream
// maintenance adopted as ours: restore as upstream does (remove both taints, uncordon, remove the
// label when it is "true").
//
// Limits of working from the kube::Node projection: it drops the annotation
// kubectl.kubernetes.io/last-applied-configuration, so on a node whose *only* annotation is that
// one the patch adds a whole new annotations map and the last-applied copy is lost (real nodes
// always carry kubelet and controller annotations).
//
// Keys in JSON Pointer paths are escaped (RFC 6901: `~` as `~0`, `/` as `~1`), e.g.
// /metadata/labels/remediation.medik8s.io~1exclude-from-remediation.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>

#include "base/result.h"
#include "kube/api/node.h"

namespace nmo::op {

inline constexpr std::string_view kPriorStateAnnotation = "nodemaintenance.medik8s.io/prior-state";
inline constexpr std::string_view kExcludeFromRemediationLabel =
    "remediation.medik8s.io/exclude-from-remediation";
inline constexpr std::string_view kUnschedulableTaintKey = "node.kubernetes.io/unschedulable";
inline constexpr std::string_view kDrainTaintKey = "medik8s.io/drain";
inline constexpr std::string_view kDrainTaintValue = "draining";
inline constexpr std::string_view kNoScheduleEffect = "NoSchedule";

// What the node looked like before the maintenance, stored as the prior-state annotation's value,
// a JSON object (written once; keys in this order):
//   {"wasUnschedulable":false,"excludeLabel":null,"name":"maintenance-worker-01","uid":"..."}
// excludeLabel is the label's earlier value, or null when it was absent.
struct PriorState {
  bool was_unschedulable = false;
  std::optional<std::string> exclude_label;
  std::string cr_name;
  std::string cr_uid;

  friend bool operator==(const PriorState&, const PriorState&) = default;
};

[[nodiscard]] std::string encode_prior_state(const PriorState& state);
// ErrorCode::kInvalid when `text` is not such an object (name and uid are required strings;
// wasUnschedulable defaults to false and excludeLabel to null).
[[nodiscard]] Result<PriorState> decode_prior_state(std::string_view text);

// The node's prior-state annotation decoded, or std::nullopt when absent or unreadable.
[[nodiscard]] std::optional<PriorState> prior_state_of(const kube::Node& node);

// RFC 6901 escaping of one reference token: `~` -> `~0`, `/` -> `~1`.
[[nodiscard]] std::string json_pointer_escape(std::string_view token);

// True when the node has a taint with this key and effect (any value).
[[nodiscard]] bool has_taint(const kube::Node& node, std::string_view key,
                             std::string_view effect) noexcept;

// The patch that puts `node` under maintenance by the CR (`cr_name`, `cr_uid`), or std::nullopt
// when the node already is. The prior-state annotation:
//   - absent: recorded from the node as it is now; but when the node already carries the drain
//     taint (an upstream maintenance being adopted, or our annotation removed by hand), the state
//     before is unknown and upstream's behaviour is recorded: not unschedulable, no label;
//   - present with another CR's uid (left by a CR whose cleanup never ran) or unreadable: taken
//     over with this CR's name and uid, keeping the recorded earlier values (defaults when
//     unreadable), so this CR's deletion restores the node.
[[nodiscard]] std::optional<boost::json::array> maintenance_patch(const kube::Node& node,
                                                                  std::string_view cr_name,
                                                                  std::string_view cr_uid);

// What is missing from a node under maintenance by CR `cr_uid` (docs/design.md §2.5).
struct MaintenanceDrift {
  bool uncordoned = false;           // spec.unschedulable is false
  bool drain_taint_missing = false;  // no medik8s.io/drain:NoSchedule
  bool label_missing = false;        // exclude-from-remediation is not "true"
  bool prior_state_missing = false;  // annotation absent, unreadable, or another CR's

  // Someone undid the maintenance: re-apply and emit MaintenanceReapplied (Warning). A missing
  // node.kubernetes.io/unschedulable taint alone is kube-controller-manager's business.
  [[nodiscard]] bool tampered() const noexcept { return uncordoned || drain_taint_missing; }
  // maintenance_patch() has something to write.
  [[nodiscard]] bool needs_patch() const noexcept {
    return uncordoned || drain_taint_missing || label_missing || prior_state_missing;
  }
  friend bool operator==(const MaintenanceDrift&, const MaintenanceDrift&) = default;
};

[[nodiscard]] MaintenanceDrift check_maintenance(const kube::Node& node, std::string_view cr_uid);

enum class RestoreKind {
  kNotOurs,          // no annotation of this CR and no upstream maintenance: touch nothing
  kOurs,             // the prior-state annotation carries this CR's uid
  kAdoptedUpstream,  // upstream's value-less drain taint without annotation: uncordon as upstream
};

struct RestorePlan {
  RestoreKind kind = RestoreKind::kNotOurs;
  std::optional<boost::json::array> patch;  // std::nullopt: nothing to change on the node
  // The patch uncordons a cordoned node: emit UncordonNode (Normal, on the Node).
  bool uncordons = false;
  // The node was cordoned before the maintenance and stays so (RemovedMaintenance says it).
  bool left_cordoned = false;
};

// The restore patch for the deletion of CR `cr_uid` (see the file comment).
[[nodiscard]] RestorePlan restore_patch(const kube::Node& node, std::string_view cr_uid);

}  // namespace nmo::op
