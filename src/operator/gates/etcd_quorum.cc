#include "operator/gates/etcd_quorum.h"

#include <algorithm>
#include <vector>

namespace nmo::op {

bool is_control_plane(const kube::Node& node) noexcept {
  return node.meta.labels.contains(kControlPlaneLabel) || node.meta.labels.contains(kMasterLabel);
}

bool is_etcd_member_pod(const kube::Pod& pod) noexcept {
  const std::string* component = pod.meta.labels.find("component");
  return pod.meta.namespace_ == kEtcdNamespace && pod.is_mirror() && component != nullptr &&
         *component == "etcd";
}

EtcdMember etcd_member(const kube::Pod& pod, bool node_ready) {
  return EtcdMember{.node = pod.node_name, .pod_ready = pod.is_ready(), .node_ready = node_ready};
}

QuorumCheck check_etcd_quorum(std::span<const EtcdMember> members, std::string_view node) {
  QuorumCheck check;
  check.members = static_cast<int>(members.size());
  if (members.empty()) return check;  // external or managed etcd: nothing to protect here
  int healthy_here = 0;
  for (const EtcdMember& member : members) {
    if (!member.healthy()) continue;
    ++check.healthy;
    if (member.node == node) ++healthy_here;
  }
  check.needed = check.members / 2 + 1;
  check.healthy_after = check.healthy - healthy_here;
  check.safe = check.healthy_after >= check.needed;
  return check;
}

std::string etcd_quorum_blocked_message(std::string_view node) {
  std::string message = "etcd quorum is not maintained when node ";
  message += node;
  message += " is remediated";
  return message;
}

GuardPod guard_pod(const kube::Pod& pod) {
  return GuardPod{.node = pod.node_name, .ready_status = pod.ready_status};
}

bool guard_pdb_selects(const kube::PodDisruptionBudget& pdb, const kube::Labels& pod_labels) {
  return !pdb.selector || pdb.selector->matches(pod_labels);
}

bool openshift_etcd_disruption_allowed(std::span<const kube::PodDisruptionBudget> pdbs,
                                       std::span<const GuardPod> guard_pods,
                                       std::string_view node) {
  if (pdbs.size() != 1) return false;
  if (pdbs.front().disruptions_allowed >= 1) return true;
  const auto here = std::find_if(guard_pods.begin(), guard_pods.end(),
                                 [&](const GuardPod& pod) { return pod.node == node; });
  if (here == guard_pods.end()) return true;
  return here->ready_status != "True" && here->ready_status != "Unknown";
}

bool openshift_etcd_quorum_safe(std::span<const kube::PodDisruptionBudget> pdbs,
                                std::span<const kube::Pod> pods, std::string_view node,
                                bool other_control_plane_held) {
  if (other_control_plane_held) return false;
  std::vector<GuardPod> guards;
  if (pdbs.size() == 1) {
    for (const kube::Pod& pod : pods) {
      if (guard_pdb_selects(pdbs.front(), pod.meta.labels)) guards.push_back(guard_pod(pod));
    }
  }
  return openshift_etcd_disruption_allowed(pdbs, guards, node);
}

QuorumStabilityTracker::QuorumStabilityTracker(Clock::duration stable_for)
    : stable_for_(std::max(stable_for, Clock::duration::zero())) {}

QuorumStabilityTracker::Verdict QuorumStabilityTracker::observe(std::string_view key, bool safe,
                                                                Clock::time_point now) {
  if (!safe) {
    safe_since_.erase(std::string(key));
    return Verdict{.open = false, .recheck_at = std::nullopt};
  }
  const Clock::time_point since = safe_since_.try_emplace(std::string(key), now).first->second;
  if (now - since >= stable_for_) return Verdict{.open = true, .recheck_at = std::nullopt};
  return Verdict{.open = false, .recheck_at = since + stable_for_};
}

void QuorumStabilityTracker::forget(std::string_view key) { safe_since_.erase(std::string(key)); }

}  // namespace nmo::op
