#include "operator/drain/pod_policy.h"

namespace nmo::op {

std::string_view to_string(PodAction action) noexcept {
  switch (action) {
    case PodAction::kEvict:
      return "Evict";
    case PodAction::kSkipMirror:
      return "SkipMirror";
    case PodAction::kSkipDaemonSet:
      return "SkipDaemonSet";
  }
  return "Evict";
}

std::optional<DaemonSetRef> daemon_set_owner(const kube::Pod& pod) {
  const kube::OwnerReference* owner = pod.controller();
  if (owner == nullptr || owner->api_version != "apps/v1" || owner->kind != "DaemonSet") {
    return std::nullopt;
  }
  return DaemonSetRef{.namespace_ = pod.meta.namespace_, .name = owner->name, .uid = owner->uid};
}

PodAction classify_pod(const kube::Pod& pod, bool daemon_set_exists) {
  return classify_pod(pod, [daemon_set_exists](const DaemonSetRef&) { return daemon_set_exists; });
}

bool has_finished(const kube::Pod& pod) noexcept {
  return pod.phase == "Succeeded" || pod.phase == "Failed";
}

}  // namespace nmo::op
