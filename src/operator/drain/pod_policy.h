// Which pods on a node must leave it during a maintenance (docs/design.md §1.2 totalPods, §2.4).
//
//   - Mirror (static) pods are skipped: the API server refuses to evict them and the kubelet
//     would recreate them anyway.
//   - Pods whose controller ownerReference is an apps/v1 DaemonSet that still exists are skipped,
//     as `kubectl drain --ignore-daemonsets` does: the DaemonSet would put them back at once (and
//     they tolerate the unschedulable taint).
//   - Every other pod must leave and is evicted: pods with emptyDir data, pods without a
//     controller, finished pods, and orphaned DaemonSet pods (their DaemonSet is gone).
//
// Finished pods. A pod whose phase is Succeeded or Failed counts as gone for progress at once
// (has_finished()): it no longer runs anything, and a pod that ends by itself during the drain —
// a KubeVirt virt-launcher turning Succeeded after live migration, docs/design.md §2.4 and §8
// (S2) — must let the maintenance finish. Such a pod is still in totalPods (it is bound to the
// node and must leave), and the drain engine may still send it one eviction to remove the object
// (the API server deletes finished pods without consulting PDBs), but the maintenance never waits
// for it.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <concepts>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kube/api/pod.h"

namespace nmo::op {

// What the drain does with one pod.
enum class PodAction {
  kEvict,          // must leave: counted in totalPods and evicted
  kSkipMirror,     // mirror/static pod: never touched, not counted
  kSkipDaemonSet,  // managed by an existing DaemonSet: never touched, not counted
};

// "Evict", "SkipMirror", "SkipDaemonSet".
[[nodiscard]] std::string_view to_string(PodAction action) noexcept;

// The DaemonSet named by a pod's controller ownerReference (in the pod's namespace).
struct DaemonSetRef {
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  std::string uid;  // the ownerReference's uid

  friend bool operator==(const DaemonSetRef&, const DaemonSetRef&) = default;
};

// The DaemonSet controlling `pod`: its controller ownerReference has apiVersion "apps/v1" and
// kind "DaemonSet". std::nullopt otherwise (no controller, or another kind).
[[nodiscard]] std::optional<DaemonSetRef> daemon_set_owner(const kube::Pod& pod);

// The action for `pod`. `daemon_set_exists(const DaemonSetRef&) -> bool` answers "does this
// DaemonSet exist?" and is called only for a pod that daemon_set_owner() names. kubectl drain
// looks the DaemonSet up by name only; a caller may also compare the uid to treat a recreated
// DaemonSet of the same name as another one.
template <std::predicate<const DaemonSetRef&> DaemonSetExists>
[[nodiscard]] PodAction classify_pod(const kube::Pod& pod, DaemonSetExists&& daemon_set_exists) {
  if (pod.is_mirror()) return PodAction::kSkipMirror;
  const std::optional<DaemonSetRef> owner = daemon_set_owner(pod);
  if (owner && std::invoke(daemon_set_exists, *owner)) return PodAction::kSkipDaemonSet;
  return PodAction::kEvict;
}

// The same, when the caller has already looked the owner up: `daemon_set_exists` is whether the
// DaemonSet named by daemon_set_owner(pod) exists (ignored for pods without one).
[[nodiscard]] PodAction classify_pod(const kube::Pod& pod, bool daemon_set_exists);

// True when the pod must leave the node (classify_pod() == kEvict).
[[nodiscard]] inline bool must_leave(PodAction action) noexcept {
  return action == PodAction::kEvict;
}

// True for a pod in phase Succeeded or Failed: it counts as gone (see the file comment).
[[nodiscard]] bool has_finished(const kube::Pod& pod) noexcept;

// True when deletion of the pod has started (metadata.deletionTimestamp set).
[[nodiscard]] inline bool is_terminating(const kube::Pod& pod) noexcept {
  return pod.meta.deletion_timestamp.has_value();
}

}  // namespace nmo::op
