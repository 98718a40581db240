#include "operator/drain/owner_reader.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kube/api/workload.h"

namespace nmo::op {
namespace {

const kube::OwnerReference* controller_of(const kube::ObjectMeta& meta, std::string_view kind) {
  const auto found = std::find_if(meta.owner_references.begin(), meta.owner_references.end(),
                                  [&](const kube::OwnerReference& owner) {
                                    return owner.controller && (kind.empty() || owner.kind == kind);
                                  });
  return found != meta.owner_references.end() ? &*found : nullptr;
}

}  // namespace

asio::awaitable<PodOwner> read_pod_owner(kube::Client& client, kube::Pod pod) {
  const kube::OwnerReference* controller = controller_of(pod.meta, "");
  if (controller == nullptr) co_return PodOwner{};
  const std::string ns = pod.meta.namespace_;
  std::string name = controller->name;
  PodOwner other{.kind = PodOwnerKind::kOther, .namespace_ = ns, .name = name};
  if (controller->kind == "StatefulSet") {
    auto found = co_await client.get<kube::StatefulSet>(ns, std::move(name));
    co_return found ? owner_of(*found) : other;
  }
  if (controller->kind != "ReplicaSet") co_return other;
  auto replica_set = co_await client.get<kube::ReplicaSet>(ns, std::move(name));
  if (!replica_set) co_return other;
  const kube::OwnerReference* deployment = controller_of(replica_set->meta, "Deployment");
  if (deployment == nullptr) co_return owner_of(*replica_set);
  std::string deployment_name = deployment->name;
  auto found = co_await client.get<kube::Deployment>(ns, std::move(deployment_name));
  co_return found ? owner_of(*found) : owner_of(*replica_set);
}

}  // namespace nmo::op
