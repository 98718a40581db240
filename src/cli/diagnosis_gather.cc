#include "cli/diagnosis_gather.h"

#include <map>
#include <utility>
#include <vector>

#include "cli/plan_gather.h"
#include "kube/api/time.h"
#include "operator/drain/eviction_policy.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"

// Coroutine arguments are named values: GCC 12 may destroy a temporary passed to a coroutine
// twice.
namespace nmo::cli {
namespace {

// The node lease, the slot holders and the budget.
asio::awaitable<Outcome<Done>> gather_leases(ClusterReader& reader, const DiagnosisRequest& request,
                                             DiagnosisInput& input) {
  std::string lease_name = op::node_lease_name(input.nm.spec.node_name);
  input.lease_ref = request.lease_namespace + "/" + lease_name;
  auto lease = co_await reader.lease(request.lease_namespace, lease_name);
  if (!lease) co_return lease.failure();
  input.node_lease = std::move(*lease);
  auto operator_leases = co_await reader.leases(request.operator_namespace);
  if (!operator_leases) co_return operator_leases.failure();
  for (const auto& slot : *operator_leases) {
    if (op::is_slot_lease_name(slot.meta.name)) {
      input.slot_holders.push_back(op::lease_holder(slot));
    }
  }
  input.max_parallel =
      budget_of(request.max_parallel, request.operator_namespace, *operator_leases).first;
  co_return Done{};
}

// The pending pods, with the PDBs covering those that still exist.
asio::awaitable<Outcome<Done>> gather_stuck_pods(ClusterReader& reader, DiagnosisInput& input) {
  std::map<std::string, std::vector<kube::PodDisruptionBudget>> pdbs_by_namespace;
  for (const auto& ref : input.nm.status.pending_pods_refs) {
    StuckPod stuck{.ref = ref};
    auto pod = co_await reader.pod(ref.namespace_, ref.name);
    if (!pod) co_return pod.failure();
    stuck.exists = pod->has_value();
    if (stuck.exists) {
      if (!pdbs_by_namespace.contains(ref.namespace_)) {
        auto pdbs = co_await reader.pdbs(ref.namespace_);
        if (!pdbs) co_return pdbs.failure();
        pdbs_by_namespace[ref.namespace_] = std::move(*pdbs);
      }
      stuck.pdbs = op::covering_pdbs(**pod, pdbs_by_namespace[ref.namespace_]);
    }
    input.pods.push_back(std::move(stuck));
  }
  co_return Done{};
}

}  // namespace

asio::awaitable<Outcome<DiagnosisInput>> gather_diagnosis(ClusterReader& reader,
                                                          op::NodeMaintenance nm,
                                                          DiagnosisRequest request) {
  DiagnosisInput input;
  input.nm = std::move(nm);
  input.now = kube::wall_now();
  std::string kind(op::kKind);
  auto events = co_await reader.operator_events(kind, input.nm.meta.name);
  if (!events) co_return events.failure();
  input.events = std::move(*events);
  auto node = co_await reader.node(input.nm.spec.node_name);
  if (!node) co_return node.failure();
  input.node = std::move(*node);
  auto leases = co_await gather_leases(reader, request, input);
  if (!leases) co_return leases.failure();
  auto pods = co_await gather_stuck_pods(reader, input);
  if (!pods) co_return pods.failure();
  auto version = co_await reader.server_version();
  input.server = std::move(version);
  co_return Outcome<DiagnosisInput>(std::move(input));
}

asio::awaitable<Outcome<PlanDiagnosisInput>> gather_plan_diagnosis(ClusterReader& reader,
                                                                   op::MaintenancePlan plan,
                                                                   DiagnosisRequest request) {
  PlanDiagnosisInput input;
  input.now = kube::wall_now();
  std::string kind(op::kPlanKind);
  auto events = co_await reader.operator_events(kind, plan.meta.name);
  if (!events) co_return events.failure();
  input.events = std::move(*events);
  for (const op::PlanNodeStatus& node : plan.status.nodes) {
    if (node.phase != op::PlanNodePhase::kDraining || node.maintenance.empty()) continue;
    auto found = co_await reader.maintenance(node.maintenance);
    if (!found) co_return found.failure();
    if (!found->has_value()) continue;
    DiagnosisRequest each = request;
    auto drain = co_await gather_diagnosis(reader, std::move(**found), std::move(each));
    if (!drain) co_return drain.failure();
    input.drain_verdicts[node.name] = diagnosis_verdict(*drain);
  }
  input.plan = std::move(plan);
  co_return Outcome<PlanDiagnosisInput>(std::move(input));
}

}  // namespace nmo::cli
