#include "operator/webhook/live_lookup.h"

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/log.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "operator/api/node_maintenance.h"
#include "operator/gates/etcd_quorum.h"

namespace nmo::op::webhook {
namespace {

constexpr std::string_view kByNode = "node";
// Within the API server's 15 s for a review, after the client's 3 s per request.
constexpr std::chrono::seconds kCacheSyncTimeout{8};

ExistingMaintenance existing_maintenance(const NodeMaintenance& maintenance) {
  return {.name = maintenance.meta.name,
          .created = maintenance.meta.creation_timestamp,
          .deleting = maintenance.meta.deletion_timestamp.has_value()};
}

// The NodeMaintenances of `node`, filtered by the API server.
kube::ListOptions on_node(const std::string& node) {
  kube::ListOptions options;
  options.field_selector = "spec.nodeName=" + node;
  return options;
}

// The API server's answer to a field selector it does not serve for the resource:
// "400 field label not supported: spec.nodeName".
bool refuses_node_selector(const Error& error) {
  return error.code == ErrorCode::kBadRequest &&
         error.message.find("field label not supported") != std::string::npos;
}

}  // namespace

LiveClusterLookup::LiveClusterLookup(kube::Client& client, runtime::Cache& cache)
    : client_(client),
      // The NodeMaintenance informer of the process's shared cache (the controller reads the
      // same one), indexed by node; waited for only when the API server cannot filter.
      informer_(cache.informer<NodeMaintenance>(std::string(kMaintenanceCache))) {
  runtime::Cache::add_index(informer_, std::string(kByNode),
                            [](const NodeMaintenance& maintenance) {
                              return std::vector<std::string>{maintenance.spec.node_name};
                            });
}

LiveClusterLookup::~LiveClusterLookup() = default;

asio::awaitable<Result<bool>> LiveClusterLookup::node_exists(std::string node) {
  // The raw object: whether it exists is all that matters, not whether it decodes.
  std::string path = kube::object_path<kube::Node>("", node);
  Result<boost::json::value> found = co_await client_.get_json(std::move(path));
  if (found) co_return true;
  if (is_not_found(found.error())) co_return false;
  co_return found.error();
}

asio::awaitable<Result<std::vector<ExistingMaintenance>>> LiveClusterLookup::maintenances_for_node(
    std::string node) {
  if (filters_on_server()) {
    auto listed = co_await list_on_server(node);
    if (listed || !refuses_node_selector(listed.error())) co_return listed;
    NMO_CO_TRY(co_await use_cache(listed.error()));
  }
  std::vector<ExistingMaintenance> existing;
  for (const auto& maintenance : informer_.store()->by_index(kByNode, node)) {
    existing.push_back(existing_maintenance(*maintenance));
  }
  co_return existing;
}

asio::awaitable<Result<std::vector<ExistingMaintenance>>> LiveClusterLookup::list_on_server(
    std::string node) {
  Result<kube::ListPage<NodeMaintenance>> page =
      co_await client_.list_all<NodeMaintenance>("", on_node(node));
  if (!page) co_return page.error();
  std::vector<ExistingMaintenance> existing;
  existing.reserve(page->items.size());
  for (const NodeMaintenance& maintenance : page->items) {
    existing.push_back(existing_maintenance(maintenance));
  }
  co_return existing;
}

asio::awaitable<Result<void>> LiveClusterLookup::start() {
  {
    const std::lock_guard lock(mutex_);
    started_ = true;
  }
  // One item of any node will do: the answer is about the selector, not about a node.
  kube::ListOptions probe = on_node("node-maintenance-operator-probe");
  probe.limit = 1;
  auto probed = co_await client_.list<NodeMaintenance>("", std::move(probe));
  if (probed) {
    log::root().info("the API server filters NodeMaintenances by spec.nodeName",
                     {{"controller", "webhook"}});
    co_return Result<void>{};
  }
  if (!refuses_node_selector(probed.error())) {
    // Not a reason to stop the process: the first review that is refused the selector switches.
    log::root().warn(
        "could not ask whether the API server filters NodeMaintenances by "
        "spec.nodeName; the first review will tell",
        {{"controller", "webhook"}, {"error", probed.error().describe()}});
    co_return Result<void>{};
  }
  co_return co_await use_cache(probed.error());
}

asio::awaitable<Result<void>> LiveClusterLookup::use_cache(Error refusal) {
  if (filters_on_server_.exchange(false, std::memory_order_acq_rel)) {
    log::root().warn(
        "the API server cannot filter NodeMaintenances by spec.nodeName (field selectors on "
        "custom resources need Kubernetes 1.31 and the CRD's selectableFields); the webhook finds "
        "a node's NodeMaintenances in a watched cache instead",
        {{"controller", "webhook"}, {"error", refusal.message}});
  }
  {
    const std::lock_guard lock(mutex_);
    if (!started_ || stopped_) {
      co_return Error(ErrorCode::kUnavailable,
                      stopped_ ? "the webhook is stopping" : "the webhook is starting");
    }
  }
  if (!co_await informer_.wait_synced(kCacheSyncTimeout)) {
    co_return Error(ErrorCode::kUnavailable,
                    "the cache of NodeMaintenances has not listed them yet (this API server "
                    "cannot filter them by spec.nodeName)");
  }
  co_return Result<void>{};
}

asio::awaitable<void> LiveClusterLookup::stop() {
  const std::lock_guard lock(mutex_);
  stopped_ = true;
  co_return;
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
  if (!is_not_found(openshift.error())) co_return openshift.error();
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
      if (!host && !is_not_found(host.error())) co_return host.error();
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
