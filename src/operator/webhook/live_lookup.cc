#include "operator/webhook/live_lookup.h"

#include <utility>
#include <vector>

#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "operator/api/node_maintenance.h"
#include "operator/gates/etcd_quorum.h"

namespace nmo::op::webhook {

asio::awaitable<Result<bool>> LiveClusterLookup::node_exists(std::string node) {
  // The raw object: whether it exists is all that matters, not whether it decodes.
  std::string path = kube::object_path<kube::Node>("", node);
  Result<boost::json::value> found = co_await client_.get_json(std::move(path));
  if (found) co_return true;
  if (found.error().code == ErrorCode::kNotFound) co_return false;
  co_return found.error();
}

asio::awaitable<Result<std::vector<ExistingMaintenance>>> LiveClusterLookup::maintenances_for_node(
    std::string node) {
  kube::ListOptions options;
  options.field_selector = "spec.nodeName=" + node;
  Result<kube::ListPage<NodeMaintenance>> page =
      co_await client_.list_all<NodeMaintenance>("", options);
  if (!page) co_return page.error();
  std::vector<ExistingMaintenance> existing;
  existing.reserve(page->items.size());
  for (const NodeMaintenance& maintenance : page->items) {
    existing.push_back({.name = maintenance.meta.name,
                        .created = maintenance.meta.creation_timestamp,
                        .deleting = maintenance.meta.deletion_timestamp.has_value()});
  }
  co_return existing;
}

asio::awaitable<Result<bool>> LiveClusterLookup::etcd_quorum_safe(std::string node) {
  Result<kube::Node> target = co_await client_.get<kube::Node>("", node);
  if (!target) co_return target.error();
  if (!is_control_plane(*target)) co_return true;
  // The controller's source of etcd health (docs/design.md §2.2): on OpenShift the guard
  // PDB of openshift-etcd, elsewhere the etcd mirror pods.
  const std::string openshift_path(kOpenShiftApiGroupPath);
  Result<boost::json::value> openshift = co_await client_.get_json(openshift_path);
  if (openshift) co_return co_await openshift_quorum_safe(std::move(node));
  if (openshift.error().code != ErrorCode::kNotFound) co_return openshift.error();
  kube::ListOptions options;
  options.label_selector = "component=etcd";
  const std::string ns(kEtcdNamespace);
  Result<kube::ListPage<kube::Pod>> pods = co_await client_.list_all<kube::Pod>(ns, options);
  if (!pods) co_return pods.error();
  std::vector<EtcdMember> members;
  for (const kube::Pod& pod : pods->items) {
    if (!is_etcd_member_pod(pod)) continue;
    bool node_ready = false;
    if (pod.node_name == node) {
      node_ready = target->is_ready();
    } else if (!pod.node_name.empty()) {
      Result<kube::Node> host = co_await client_.get<kube::Node>("", pod.node_name);
      if (!host && host.error().code != ErrorCode::kNotFound) co_return host.error();
      node_ready = host && host->is_ready();
    }
    members.push_back(etcd_member(pod, node_ready));
  }
  co_return check_etcd_quorum(members, node).safe;
}

asio::awaitable<Result<bool>> LiveClusterLookup::openshift_quorum_safe(std::string node) {
  const std::string ns(kOpenShiftEtcdNamespace);
  const kube::ListOptions options;
  Result<kube::ListPage<kube::PodDisruptionBudget>> pdbs =
      co_await client_.list_all<kube::PodDisruptionBudget>(ns, options);
  if (!pdbs) co_return pdbs.error();
  Result<kube::ListPage<kube::Pod>> pods = co_await client_.list_all<kube::Pod>(ns, options);
  if (!pods) co_return pods.error();
  co_return openshift_etcd_quorum_safe(pdbs->items, pods->items, node, false);
}

}  // namespace nmo::op::webhook
