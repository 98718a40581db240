#include "operator/controller/internal/cluster_view.h"

#include <utility>

#include "kube/client/request_options.h"
#include "operator/controller/internal/lease_keeper.h"
#include "operator/drain/eviction_policy.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/gates/node_lease.h"

namespace nmo::op::internal {

ClusterView::ClusterView(runtime::Cache& cache, const OperatorOptions& options, Wakeups wakeups)
    : cache_(cache), options_(options), wakeups_(std::move(wakeups)) {
  // The plan controller declares the same informers and gets these.
  watch_maintenances();
  watch_nodes_and_leases();
  auto& budgets =
      cache_.informer<kube::PodDisruptionBudget>(std::string(kPodDisruptionBudgetCache));
  budgets_ = budgets.store();
  runtime::Cache::add_index(budgets, std::string(kNamespaceIndex),
                            [](const kube::PodDisruptionBudget& budget) {
                              return std::vector<std::string>{budget.meta.namespace_};
                            });
  budgets.on_change(
      [this](const kube::PodDisruptionBudget* /*before*/, const kube::PodDisruptionBudget* after) {
        if (after != nullptr && wakeups_.budget_changed) wakeups_.budget_changed(*after);
      });
  informers_.push_back(&budgets);

  etcd_pods_ = std::make_shared<runtime::Store<kube::Pod>>();
  if (options_.etcd_quorum_check) {
    auto& etcd_pods =
        cache_.informer<kube::Pod>("the etcd pod cache", std::string(kEtcdNamespace),
                                   kube::ListOptions{.label_selector = "component=etcd"});
    etcd_pods_ = etcd_pods.store();
    etcd_pods.on_change([this](const kube::Pod*, const kube::Pod*) { wakeups_.gates_changed(); });
    informers_.push_back(&etcd_pods);
  }
}

void ClusterView::watch_maintenances() {
  auto& maintenances = cache_.informer<NodeMaintenance>(std::string(kMaintenanceCache));
  maintenances_ = maintenances.store();
  runtime::Cache::add_index(maintenances, std::string(kNodeIndex), [](const NodeMaintenance& nm) {
    return std::vector<std::string>{nm.spec.node_name};
  });
  // The inverse of node_lease_name(), which a hashed lease name cannot be turned back by.
  runtime::Cache::add_index(maintenances, std::string(kLeaseIndex), [](const NodeMaintenance& nm) {
    return std::vector<std::string>{node_lease_name(nm.spec.node_name)};
  });
  maintenances.on_change([this](const NodeMaintenance* before, const NodeMaintenance* after) {
    wakeups_.maintenance_changed(before, after);
    if (after == nullptr) prune_pod_watches();
  });
  informers_.push_back(&maintenances);
}

void ClusterView::watch_nodes_and_leases() {
  auto& nodes = cache_.informer<kube::Node>(std::string(kNodeCache));
  nodes_ = nodes.store();
  runtime::Cache::add_index(nodes, std::string(kControlPlaneIndex), [](const kube::Node& node) {
    return is_control_plane(node) ? std::vector<std::string>{"true"} : std::vector<std::string>{};
  });
  nodes.on_change([this](const kube::Node* before, const kube::Node* after) {
    wakeups_.node_changed(after != nullptr ? *after : *before);
  });
  informers_.push_back(&nodes);

  auto& node_leases = cache_.informer<kube::Lease>(
      "the Lease cache of namespace " + options_.lease_namespace, options_.lease_namespace);
  node_leases_ = node_leases.store();
  node_leases.on_change([this](const kube::Lease* before, const kube::Lease* after) {
    wakeups_.node_lease_changed(after != nullptr ? after->meta.name : before->meta.name);
  });
  informers_.push_back(&node_leases);

  auto& slots = cache_.informer<kube::Lease>(
      "the Lease cache of namespace " + options_.namespace_, options_.namespace_,
      kube::ListOptions{.label_selector = std::string(kSlotLabel)});
  slots_ = slots.store();
  slots.on_change([this](const kube::Lease*, const kube::Lease*) { wakeups_.gates_changed(); });
  informers_.push_back(&slots);
}

void ClusterView::watch_openshift_guard() {
  const std::string ns(kOpenShiftEtcdNamespace);
  // Declared after the cache started, so each starts at once: its handler sees the first list
  // because the executor runs it only after this function returned.
  auto& pdbs = cache_.informer<kube::PodDisruptionBudget>("the etcd guard PDB cache of " + ns, ns);
  guard_pdbs_ = pdbs.store();
  pdbs.on_change([this](const kube::PodDisruptionBudget*, const kube::PodDisruptionBudget*) {
    wakeups_.gates_changed();
  });
  auto& pods = cache_.informer<kube::Pod>("the etcd guard pod cache of " + ns, ns);
  guard_pods_ = pods.store();
  pods.on_change([this](const kube::Pod*, const kube::Pod*) { wakeups_.gates_changed(); });
  informers_.push_back(&pdbs);
  informers_.push_back(&pods);
}

ClusterView::MaintenanceSnapshot ClusterView::maintenance(const std::string& name) const {
  return maintenances_->get(name);
}

std::vector<ClusterView::MaintenanceSnapshot> ClusterView::maintenances() const {
  return maintenances_->list();
}

std::vector<ClusterView::MaintenanceSnapshot> ClusterView::maintenances_of_node(
    const std::string& node) const {
  return maintenances_->by_index(kNodeIndex, node);
}

std::vector<ClusterView::MaintenanceSnapshot> ClusterView::maintenances_with_lease(
    const std::string& lease_name) const {
  return maintenances_->by_index(kLeaseIndex, lease_name);
}

std::shared_ptr<const kube::Node> ClusterView::node(const std::string& name) const {
  return nodes_->get(name);
}

bool ClusterView::nodes_synced() const { return nodes_->has_synced(); }

std::vector<std::shared_ptr<const kube::Node>> ClusterView::control_plane_nodes() const {
  return nodes_->by_index(kControlPlaneIndex, "true");
}

std::vector<std::shared_ptr<const kube::Lease>> ClusterView::node_leases() const {
  return node_leases_->list();
}

std::optional<std::string> ClusterView::lease_node(const kube::Lease& lease) const {
  if (auto named = maintenances_with_lease(lease.meta.name); !named.empty()) {
    return named.front()->spec.node_name;
  }
  return node_of_lease(lease);
}

asio::awaitable<Result<void>> ClusterView::watch_pods(std::string node) {
  auto found = pod_watches_.find(node);
  if (found == pod_watches_.end()) {
    auto pods = cache_.acquire<kube::Pod>(
        "the pods of node " + node, "",
        kube::ListOptions{.field_selector = "spec.nodeName=" + node},
        [this, node](const kube::Pod*, const kube::Pod*) { wakeups_.pods_changed(node); });
    if (!pods) co_return Error(ErrorCode::kCancelled, "stopping");
    found = pod_watches_.emplace(node, std::move(pods)).first;
  }
  const std::chrono::milliseconds timeout = kSyncTimeout;
  if (!co_await found->second.wait_synced(timeout)) {
    co_return Error(ErrorCode::kTimeout, "the pods of node " + node + " did not sync");
  }
  co_return Result<void>();
}

std::vector<std::shared_ptr<const kube::Pod>> ClusterView::pods_on(const std::string& node) const {
  auto found = pod_watches_.find(node);
  if (found == pod_watches_.end() || !found->second.synced()) return {};
  return found->second.store().list();
}

void ClusterView::prune_pod_watches() {
  std::erase_if(pod_watches_,
                [this](const auto& watch) { return maintenances_of_node(watch.first).empty(); });
}

void ClusterView::release_pod_watches() { pod_watches_.clear(); }

std::vector<kube::PodDisruptionBudget> ClusterView::covering_budgets(const kube::Pod& pod) const {
  // Read for every pod that must leave at every drain step: only the covering budgets are copied.
  std::vector<kube::PodDisruptionBudget> covering;
  for (const auto& budget : budgets_->by_index(kNamespaceIndex, pod.meta.namespace_)) {
    if (covers(*budget, pod)) covering.push_back(*budget);
  }
  return covering;
}

EtcdView ClusterView::etcd() const {
  EtcdView etcd;
  for (const auto& n : control_plane_nodes())
    etcd.control_plane_ready[n->meta.name] = n->is_ready();
  if (guard_pdbs_) {
    etcd.openshift = true;
    for (const auto& pdb : guard_pdbs_->list()) etcd.guard_pdbs.push_back(*pdb);
    for (const auto& pod : guard_pods_->list()) etcd.guard_pods.push_back(*pod);
  } else {
    for (const auto& pod : etcd_pods_->list()) etcd.member_pods.push_back(*pod);
  }
  return etcd;
}

}  // namespace nmo::op::internal
