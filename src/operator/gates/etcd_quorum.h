// The etcd-quorum gate for control-plane nodes (docs/design.md §2.2): take a control-plane node
// down only if the etcd members left healthy still form a quorum, and only after that has held for
// a stability window.
//
// Where health comes from:
//   - stacked etcd (kubeadm): the mirror pods labelled component=etcd in kube-system are the
//     members; a member is healthy when its pod is Ready and its node is Ready and not held by
//     another maintenance (with a budget above one, two control-plane nodes under maintenance
//     would otherwise both count as healthy and go down together). Safe when
//       healthy - (this node's member is healthy ? 1 : 0) >= floor(members / 2) + 1
//     (3 members need 2 healthy, 5 need 3); no members (external or managed etcd): open.
//   - OpenShift: the etcd guard PodDisruptionBudget in openshift-etcd, upstream's rule exactly
//     (medik8s/common IsEtcdDisruptionAllowed; the rule is spelled out in docs/design.md §2.2),
//     see openshift_etcd_disruption_allowed().
//
// Threading: the functions are pure and safe from any thread; QuorumStabilityTracker is a plain
// value type, not synchronised (use it from the reconciler's strand).
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"

namespace nmo::op {

inline constexpr std::string_view kControlPlaneLabel = "node-role.kubernetes.io/control-plane";
inline constexpr std::string_view kMasterLabel = "node-role.kubernetes.io/master";
inline constexpr std::string_view kEtcdNamespace = "kube-system";
inline constexpr std::string_view kOpenShiftEtcdNamespace = "openshift-etcd";
// Served only by OpenShift: how the operator tells it apart.
inline constexpr std::string_view kOpenShiftApiGroupPath = "/apis/config.openshift.io";
// --etcd-quorum-stable-for default.
inline constexpr std::chrono::seconds kDefaultEtcdStableFor{30};

// True for a control-plane node: it carries the label key node-role.kubernetes.io/control-plane
// or node-role.kubernetes.io/master (any value, as upstream).
[[nodiscard]] bool is_control_plane(const kube::Node& node) noexcept;

// True for a stacked etcd member pod: a mirror pod in kube-system labelled component=etcd.
[[nodiscard]] bool is_etcd_member_pod(const kube::Pod& pod) noexcept;

// One etcd member.
struct EtcdMember {
  std::string node;  // the pod's spec.nodeName
  bool pod_ready = false;
  bool node_ready = false;
  // The node is held by another maintenance: cordoned and drained on its way down (upstream's
  // etcd guard pod is evicted from it), so its member counts as down already.
  bool node_held = false;

  [[nodiscard]] bool healthy() const noexcept { return pod_ready && node_ready && !node_held; }
  friend bool operator==(const EtcdMember&, const EtcdMember&) = default;
};

// The member for an etcd pod, given whether its node is Ready (false when the node is unknown).
[[nodiscard]] EtcdMember etcd_member(const kube::Pod& pod, bool node_ready);

struct QuorumCheck {
  bool safe = true;
  int members = 0;
  int healthy = 0;
  int healthy_after = 0;  // healthy members left once `node` goes down
  int needed = 0;         // floor(members / 2) + 1; 0 without members

  friend bool operator==(const QuorumCheck&, const QuorumCheck&) = default;
};

// The stacked-etcd rule for taking `node` down.
[[nodiscard]] QuorumCheck check_etcd_quorum(std::span<const EtcdMember> members,
                                            std::string_view node);

// The BlockedByEtcdQuorum event message (docs/design.md §2.2):
//   etcd quorum is not maintained when node <node> is remediated
[[nodiscard]] std::string etcd_quorum_blocked_message(std::string_view node);

// An OpenShift etcd guard pod (one per control-plane node in openshift-etcd).
struct GuardPod {
  std::string node;          // spec.nodeName
  std::string ready_status;  // the Ready condition's status: "True", "False", "Unknown" or ""

  friend bool operator==(const GuardPod&, const GuardPod&) = default;
};

// The guard pod for a kube::Pod, with its Ready condition's text as the API has it: upstream
// counts a guard pod whose readiness is Unknown as a healthy member.
[[nodiscard]] GuardPod guard_pod(const kube::Pod& pod);

// True when the guard PDB selects a pod with these labels. Upstream turns the selector into a
// label map and lists pods with it, so here an absent selector selects every pod of the namespace
// (unlike PodDisruptionBudget::selects()).
[[nodiscard]] bool guard_pdb_selects(const kube::PodDisruptionBudget& pdb,
                                     const kube::Labels& pod_labels);

// Upstream's rule, given every PodDisruptionBudget in openshift-etcd and the guard pods its
// selector picks (guard_pdb_selects):
//   no PDB, or more than one          -> not allowed ("can't check if the etcd quorum will be
//                                        violated")
//   disruptionsAllowed >= 1           -> allowed
//   the guard pod on `node` is Ready True or Unknown -> not allowed (the node is a healthy member)
//   otherwise (not ready, or no guard pod on the node) -> allowed (already disrupted)
[[nodiscard]] bool openshift_etcd_disruption_allowed(
    std::span<const kube::PodDisruptionBudget> pdbs, std::span<const GuardPod> guard_pods,
    std::string_view node);

// The OpenShift gate from what openshift-etcd holds, as the controller and the webhook ask it:
// the guard pods are the pods the one PDB selects, and upstream's rule above decides, with one
// addition for a budget above one: while another control-plane node is held by a maintenance
// (`other_control_plane_held`), none. Its member is on its way down while the guard PDB may
// still show the disruption it is about to use, so two maintenances admitted in the same
// moment would both see it allowed.
[[nodiscard]] bool openshift_etcd_quorum_safe(std::span<const kube::PodDisruptionBudget> pdbs,
                                              std::span<const kube::Pod> pods,
                                              std::string_view node, bool other_control_plane_held);

// The stability window: the gate opens only once it has been safe continuously for `stable_for`.
// Each CR (or node) has its own key. Memory only: after an operator restart the window starts
// again (the safe side).
class QuorumStabilityTracker {
 public:
  explicit QuorumStabilityTracker(Clock::duration stable_for = kDefaultEtcdStableFor);

  struct Verdict {
    bool open = false;
    // Closed but safe: when the window will have passed (requeue for then). std::nullopt when
    // open, or when unsafe (re-checked on the next node or etcd-pod change).
    std::optional<Clock::time_point> recheck_at;

    friend bool operator==(const Verdict&, const Verdict&) = default;
  };

  // Records the quorum check for `key` at `now`: safe keeps (or starts) the window, unsafe resets
  // it.
  Verdict observe(std::string_view key, bool safe, Clock::time_point now);

  // Forgets `key` (the CR is gone or no longer waits on the gate).
  void forget(std::string_view key);

 private:
  Clock::duration stable_for_;
  std::unordered_map<std::string, Clock::time_point> safe_since_;
};

}  // namespace nmo::op
