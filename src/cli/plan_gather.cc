#include "cli/plan_gather.h"

#include <set>
#include <utility>

#include "cli/exit_code.h"
#include "operator/api/failure.h"
#include "operator/budget/published_budget.h"
#include "operator/drain/pod_policy.h"
#include "operator/gates/budget.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/kubevirt/vm_policy.h"

// Coroutine arguments are named values: GCC 12 may destroy a temporary passed to a coroutine
// twice.
namespace nmo::cli {
namespace {

// The DaemonSets owning some of `pods` that exist, into `out`.
asio::awaitable<Outcome<Done>> gather_daemon_sets(ClusterReader& reader,
                                                  const std::vector<kube::Pod>& pods,
                                                  std::vector<op::DaemonSetRef>& out) {
  std::set<std::pair<std::string, std::string>> daemon_sets;
  for (const auto& pod : pods) {
    if (auto owner = op::daemon_set_owner(pod)) daemon_sets.emplace(owner->namespace_, owner->name);
  }
  for (const auto& [ns, name] : daemon_sets) {
    auto found = co_await reader.daemon_set(ns, name);
    if (!found) co_return found.failure();
    if (!found->has_value()) continue;
    out.push_back(op::DaemonSetRef{.namespace_ = ns, .name = name, .uid = (*found)->meta.uid});
  }
  co_return Done{};
}

// The DaemonSets owning the node's pods, and the PDBs of the pods' namespaces.
asio::awaitable<Outcome<Done>> gather_pods(ClusterReader& reader, PlanInput& input) {
  auto pods = co_await reader.pods_on(input.node.meta.name);
  if (!pods) co_return pods.failure();
  input.pods = std::move(*pods);
  auto daemon_sets = co_await gather_daemon_sets(reader, input.pods, input.daemon_sets);
  if (!daemon_sets) co_return daemon_sets.failure();
  std::set<std::string> namespaces;
  for (const auto& pod : input.pods) namespaces.insert(pod.meta.namespace_);
  for (const auto& ns : namespaces) {
    auto pdbs = co_await reader.pdbs(ns);
    if (!pdbs) co_return pdbs.failure();
    for (auto& pdb : *pdbs) input.pdbs.push_back(std::move(pdb));
  }
  co_return Done{};
}

// The VMIs behind the node's virt-launcher pods and KubeVirt's default eviction strategy.
asio::awaitable<Outcome<Done>> gather_vms(ClusterReader& reader, PlanInput& input) {
  bool any_launcher = false;
  for (const auto& pod : input.pods) any_launcher = any_launcher || op::is_virt_launcher(pod);
  if (!any_launcher) co_return Done{};
  std::string kubevirt_root = op::kubevirt_api_root();
  auto served = co_await reader.served(kubevirt_root);
  if (!served) co_return served.failure();
  input.kubevirt_served = *served;
  if (!input.kubevirt_served) co_return Done{};
  for (const auto& pod : input.pods) {
    if (!op::is_virt_launcher(pod) || op::vmi_name(pod).empty()) continue;
    std::string name = op::vmi_name(pod);
    auto vmi = co_await reader.vmi(pod.meta.namespace_, name);
    if (!vmi) co_return vmi.failure();
    if (vmi->has_value()) input.vmis[pod.meta.namespace_ + "/" + op::vmi_name(pod)] = **vmi;
  }
  auto strategy = co_await reader.kubevirt_eviction_strategy();
  if (!strategy) co_return strategy.failure();
  input.kubevirt_eviction_strategy = std::move(*strategy);
  co_return Done{};
}

// Every NodeMaintenance (and whether the nodes of those still waiting exist), the slot and
// budget Leases of the operator namespace, the node leases.
asio::awaitable<Outcome<Done>> gather_budget(ClusterReader& reader, const PlanRequest& request,
                                             PlanInput& input) {
  auto all = co_await reader.maintenances();
  if (!all) co_return all.failure();
  input.maintenances = std::move(*all);
  std::set<std::string> asked;
  for (const auto& nm : input.maintenances) {
    const bool waits = !nm.status.phase || nm.status.phase == op::Phase::kPending;
    if (!waits || nm.spec.node_name == input.node.meta.name ||
        !asked.insert(nm.spec.node_name).second) {
      continue;
    }
    auto node = co_await reader.node(nm.spec.node_name);
    if (!node) co_return node.failure();
    if (!node->has_value()) input.missing_nodes.insert(nm.spec.node_name);
  }
  auto operator_leases = co_await reader.leases(request.operator_namespace);
  if (!operator_leases) co_return operator_leases.failure();
  for (const auto& lease : *operator_leases) input.slot_leases.insert(lease.meta.name);
  std::tie(input.max_parallel, input.max_parallel_source) =
      budget_of(request.max_parallel, request.operator_namespace, *operator_leases);
  auto node_leases = co_await reader.leases(request.lease_namespace);
  if (!node_leases) co_return node_leases.failure();
  input.node_leases = std::move(*node_leases);
  co_return Done{};
}

// The control-plane nodes and the etcd members (OpenShift's guard, else stacked etcd), as the
// operator's caches hold them.
asio::awaitable<Outcome<Done>> gather_etcd(ClusterReader& reader, PlanInput& input) {
  for (std::string_view label : {op::kControlPlaneLabel, op::kMasterLabel}) {
    std::string key(label);
    auto nodes = co_await reader.nodes_labelled(key);
    if (!nodes) co_return nodes.failure();
    for (const auto& n : *nodes) input.etcd.control_plane_ready[n.meta.name] = n.is_ready();
  }
  if (input.etcd.control_plane_ready.empty()) co_return Done{};
  std::string openshift_root(op::kOpenShiftApiGroupPath);
  auto openshift = co_await reader.served(openshift_root);
  if (!openshift) co_return openshift.failure();
  input.etcd.openshift = *openshift;
  if (input.etcd.openshift) {
    const std::string ns(op::kOpenShiftEtcdNamespace);
    auto pdbs = co_await reader.pdbs(ns);
    if (!pdbs) co_return pdbs.failure();
    input.etcd.guard_pdbs = std::move(*pdbs);
    std::string every_pod;
    auto guard_pods = co_await reader.pods(ns, every_pod);
    if (!guard_pods) co_return guard_pods.failure();
    input.etcd.guard_pods = std::move(*guard_pods);
    co_return Done{};
  }
  std::string etcd_namespace(op::kEtcdNamespace);
  std::string etcd_members = "component=etcd";
  auto members = co_await reader.pods(etcd_namespace, etcd_members);
  if (!members) co_return members.failure();
  input.etcd.member_pods = std::move(*members);
  co_return Done{};
}

}  // namespace

std::pair<int, std::string> budget_of(int max_parallel_flag, const std::string& operator_namespace,
                                      const std::vector<kube::Lease>& operator_leases) {
  if (max_parallel_flag > 0) return {max_parallel_flag, "--max-parallel"};
  for (const auto& lease : operator_leases) {
    if (lease.meta.name != op::kBudgetLeaseName) continue;
    if (auto published = op::published_max_parallel(lease)) {
      return {*published, "published by the operator on Lease " + operator_namespace + "/" +
                              std::string(op::kBudgetLeaseName)};
    }
  }
  return {op::kDefaultMaxParallelMaintenances,
          "the default: the operator has not published its budget"};
}

asio::awaitable<Outcome<PlanInput>> gather_plan(ClusterReader& reader, PlanRequest request) {
  auto found = co_await reader.node(request.node);
  if (!found) co_return found.failure();
  if (!found->has_value()) {
    co_return Failure{.message = op::node_not_found_message(request.node),
                      .exit_code = kExitNotFound};
  }
  PlanInput input;
  input.node = std::move(**found);
  input.now = kube::wall_now();
  input.maintenance_name = request.maintenance_name;
  input.lease_namespace = request.lease_namespace;
  input.etcd_quorum_check = request.etcd_quorum_check;
  for (auto* step : {&gather_pods, &gather_vms, &gather_etcd}) {
    auto done = co_await (*step)(reader, input);
    if (!done) co_return done.failure();
  }
  auto budget = co_await gather_budget(reader, request, input);
  if (!budget) co_return budget.failure();
  co_return input;
}

asio::awaitable<Outcome<RepeatEvictionInput>> gather_repeat_evictions(ClusterReader& reader,
                                                                      op::MaintenancePlan plan) {
  RepeatEvictionInput input{.plan = plan.meta.name,
                            .nodes_unknown = !plan.status.phase && plan.status.nodes.empty(),
                            .nodes = nodes_drained_before_others(plan)};
  for (const auto& node : input.nodes) {
    auto pods = co_await reader.pods_on(node);
    if (!pods) co_return pods.failure();
    for (auto& pod : *pods) input.pods.push_back(std::move(pod));
  }
  auto daemon_sets = co_await gather_daemon_sets(reader, input.pods, input.daemon_sets);
  if (!daemon_sets) co_return daemon_sets.failure();
  co_return input;
}

}  // namespace nmo::cli
