#include "cli/plan.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <tuple>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "base/strings.h"
#include "operator/api/failure.h"
#include "operator/drain/eviction_policy.h"
#include "operator/gates/admission_gates.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"
#include "operator/node/steering_taint.h"

namespace nmo::cli {

namespace {

std::string key_of(std::string_view ns, std::string_view name) {
  return std::string(ns) + "/" + std::string(name);
}

int rank(PodVerdict verdict) {
  switch (verdict) {
    case PodVerdict::kEvict:
      return 0;
    case PodVerdict::kBlock:
      return 1;
    case PodVerdict::kUnknown:
      return 2;
    case PodVerdict::kSkip:
      return 3;
  }
  return 4;
}

// The budget a pod's eviction needs, as the API server judges it (policy/v1 eviction REST):
// an unhealthy pod may go when the budget is healthy (IfHealthyBudget, the default) or always
// (AlwaysAllow); a healthy one needs a disruption left.
bool unhealthy_pod_may_go(const kube::Pod& pod, const kube::PodDisruptionBudget& pdb) {
  if (pod.is_ready()) return false;
  if (pdb.unhealthy_pod_eviction_policy == "AlwaysAllow") return true;
  return pdb.current_healthy >= pdb.desired_healthy;
}

// A KubeVirt virt-launcher pod, as the operator decides it for a maintenance `start` would
// create (vmEvictionPolicy unset: LiveMigrate, no VM is shut down by an eviction).
void plan_vm_pod(const PlanInput& input, const kube::Pod& pod, PodPlan& plan) {
  const std::string vmi = key_of(pod.meta.namespace_, op::vmi_name(pod));
  if (!input.kubevirt_served) {
    plan.verdict = PodVerdict::kUnknown;
    plan.reason = "VMMigrationUnknown";
    plan.detail = "virt-launcher of VMI " + vmi +
                  ": what its eviction does is unknown (kubevirt.io/v1 is not served)";
    return;
  }
  const auto found = input.vmis.find(vmi);
  if (found == input.vmis.end()) {
    plan.verdict = PodVerdict::kUnknown;
    plan.reason = "VMMigrationUnknown";
    plan.detail = "virt-launcher of VMI " + vmi + ": the VMI was not found";
    return;
  }
  const op::VmVerdict verdict = op::decide_vm(found->second, input.kubevirt_eviction_strategy,
                                              op::VmEvictionPolicy::kLiveMigrate);
  plan.reason = verdict.reason;
  plan.detail = verdict.detail;
  switch (verdict.action) {
    case op::VmAction::kHold:
      plan.verdict = PodVerdict::kBlock;
      break;
    case op::VmAction::kMigrate:
      plan.detail += " (a VirtualMachineInstanceMigration); the pod ends once the VM has left";
      break;
    case op::VmAction::kEvict:
      plan.detail += "; the eviction is deferred until the VM has left";
      break;
  }
}

// A pod under exactly one PDB, whose disruptions `allowance` counts down pod after pod.
void plan_budgeted_pod(const kube::Pod& pod, const kube::PodDisruptionBudget& pdb,
                       std::map<std::string, std::int32_t>& allowance, PodPlan& plan) {
  if (unhealthy_pod_may_go(pod, pdb)) {
    plan.detail = "not ready: PDB " + plan.pdbs.front() + " lets it go";
    return;
  }
  std::int32_t& left =
      allowance.try_emplace(plan.pdbs.front(), pdb.disruptions_allowed).first->second;
  if (left > 0) {
    --left;
    return;
  }
  if (pdb.disruptions_allowed <= 0) {
    plan.verdict = PodVerdict::kBlock;
    plan.reason = op::to_string(op::PendingPodReason::kBlockedByPdb);
    plan.detail = op::describe_pdb(pdb);
    return;
  }
  plan.reason = "WaitsForPDB";
  plan.detail = "waits until earlier evictions under PDB " + plan.pdbs.front() +
                " are replaced by healthy pods (" + op::describe_pdb(pdb) + ")";
}

// The operator's classification of `pod`, given the DaemonSets that exist.
op::PodAction classify(const std::vector<op::DaemonSetRef>& daemon_sets, const kube::Pod& pod) {
  return op::classify_pod(pod, [&daemon_sets](const op::DaemonSetRef& ref) {
    return std::any_of(daemon_sets.begin(), daemon_sets.end(), [&ref](const op::DaemonSetRef& ds) {
      return ds.namespace_ == ref.namespace_ && ds.name == ref.name &&
             (ref.uid.empty() || ds.uid == ref.uid);
    });
  });
}

// Mirror pods and pods of an existing DaemonSet stay; true when `pod` is one.
bool plan_skipped_pod(const PlanInput& input, const kube::Pod& pod, PodPlan& plan) {
  const op::PodAction action = classify(input.daemon_sets, pod);
  if (action == op::PodAction::kSkipMirror) {
    plan.verdict = PodVerdict::kSkip;
    plan.reason = "MirrorPod";
    plan.detail = "mirror (static) pod: the kubelet owns it";
    return true;
  }
  if (action == op::PodAction::kSkipDaemonSet) {
    plan.verdict = PodVerdict::kSkip;
    plan.reason = "DaemonSet";
    plan.detail =
        "managed by DaemonSet " + key_of(pod.meta.namespace_, op::daemon_set_owner(pod)->name);
    return true;
  }
  return false;
}

PodPlan plan_pod(const PlanInput& input, const kube::Pod& pod,
                 std::map<std::string, std::int32_t>& allowance) {
  PodPlan plan{.namespace_ = pod.meta.namespace_, .name = pod.meta.name};
  if (plan_skipped_pod(input, pod, plan)) return plan;
  const std::vector<kube::PodDisruptionBudget> covering = op::covering_pdbs(pod, input.pdbs);
  for (const auto& pdb : covering) plan.pdbs.push_back(key_of(pdb.meta.namespace_, pdb.meta.name));
  if (op::has_finished(pod)) {
    plan.reason = "Finished";
    plan.detail = "phase " + pod.phase + ": counts as gone at once";
  } else if (op::is_virt_launcher(pod)) {
    plan_vm_pod(input, pod, plan);
  } else if (covering.size() > 1) {
    plan.verdict = PodVerdict::kBlock;
    plan.reason = op::to_string(op::PendingPodReason::kMultiplePdbs);
    std::string names;
    for (const auto& name : plan.pdbs) names += (names.empty() ? "" : ", ") + name;
    plan.detail = "the Eviction API refuses a pod under more than one PDB: " + names;
  } else if (covering.size() == 1) {
    plan_budgeted_pod(pod, covering.front(), allowance, plan);
  } else {
    if (pod.has_empty_dir) plan.detail = "emptyDir data is lost";
    if (pod.controller() == nullptr && plan.detail.empty()) {
      plan.detail = "no controller: it is not recreated elsewhere";
    }
  }
  return plan;
}

// The cluster as the operator's gates see it, with the maintenance `start` would create added as
// the youngest.
op::GateWorld gate_world(const PlanInput& input) {
  op::GateWorld world{.now = input.now,
                      .node_leases = input.node_leases,
                      .etcd = input.etcd,
                      .etcd_quorum_check = input.etcd_quorum_check,
                      .max_parallel = input.max_parallel};
  for (const auto& nm : input.maintenances) {
    world.maintenances.push_back(op::gate_maintenance(
        nm, nm.status, input.slot_leases.contains(op::slot_lease_name(nm.meta.name)),
        !input.missing_nodes.contains(nm.spec.node_name)));
  }
  world.maintenances.push_back(op::GateMaintenance{
      .name = input.maintenance_name, .node = input.node.meta.name, .created = input.now});
  return world;
}

GatePlan lease_gate(const PlanInput& input, const op::GateVerdict& verdict) {
  const std::string& node = input.node.meta.name;
  const std::string lease_ref = input.lease_namespace + "/" + op::node_lease_name(node);
  std::string detail;
  switch (verdict.lease) {
    case op::NodeLeaseState::kFree:
      detail = "Lease " + lease_ref + " is free";
      break;
    case op::NodeLeaseState::kOurs:
      detail = "Lease " + lease_ref + " is held by " + std::string(op::kNodeLeaseHolder);
      break;
    case op::NodeLeaseState::kHeldByOther:
      detail = "Lease " + lease_ref + " is held by " + op::lease_holder(*verdict.lease_object);
      if (auto expiry = op::lease_expiry(*verdict.lease_object)) {
        detail += " until " + kube::format_time(*expiry);
      }
      break;
    case op::NodeLeaseState::kExpiredForeign:
      detail = "Lease " + lease_ref + " of " + op::lease_holder(*verdict.lease_object) +
               " has expired and would be taken over";
      break;
  }
  return GatePlan{
      .gate = "node lease", .open = op::node_lease_available(verdict.lease), .detail = detail};
}

GatePlan quorum_gate(const PlanInput& input, const op::GateVerdict& verdict) {
  const std::string& node = input.node.meta.name;
  if (!input.etcd.control_plane_ready.contains(node)) {
    return GatePlan{.gate = "etcd quorum", .open = true, .detail = "not a control-plane node"};
  }
  if (!input.etcd_quorum_check) {
    return GatePlan{
        .gate = "etcd quorum", .open = true, .detail = "check disabled (--etcd-quorum-check=off)"};
  }
  std::string detail = verdict.quorum.detail;
  if (!verdict.quorum.safe) {
    detail = op::etcd_quorum_blocked_message(node) + (detail.empty() ? "" : " (" + detail + ")");
  }
  return GatePlan{.gate = "etcd quorum", .open = verdict.quorum.safe, .detail = detail};
}

GatePlan budget_gate(const PlanInput& input, const op::GateVerdict& verdict) {
  if (!verdict.budget_evaluated) {
    return GatePlan{
        .gate = "budget", .open = false, .detail = "not evaluated while etcd quorum is unsafe"};
  }
  const op::BudgetDecision& decision = verdict.budget;
  std::string users;
  for (const op::SlotUse& use : decision.in_use) {
    users += (users.empty() ? "" : ", ") + use.holder + " (node " + use.node + ")";
  }
  std::string detail =
      fmt::format("{} of {} slots in use (--max-parallel-maintenances {}{})", decision.slots_used,
                  input.max_parallel, input.max_parallel,
                  input.max_parallel_source.empty() ? "" : ", " + input.max_parallel_source);
  if (!users.empty()) detail += ": " + users;
  if (!verdict.admitted) {
    const std::size_t ahead = decision.admit.size();
    detail += ahead > 0 ? fmt::format("; {} older maintenance(s) would be admitted first", ahead)
                        : "; it would wait for a slot (BlockedByNodeHealthCheck)";
  }
  return GatePlan{.gate = "budget", .open = verdict.admitted, .detail = detail};
}

// kubectl's notation of a taint a toleration names: "key", "key=value", with ":effect".
std::string taint_notation(const kube::Toleration& toleration) {
  std::string out = toleration.key;
  if (!toleration.value.empty()) out += "=" + toleration.value;
  if (!toleration.effect.empty()) out += ":" + toleration.effect;
  return out;
}

// The text after "ns/name on node: " for a pod that may be evicted twice.
constexpr std::string_view kRepeatEvictionConsequence =
    "it may be rescheduled onto a node the plan drains later and be evicted again";

}  // namespace

std::string_view to_string(PodVerdict verdict) noexcept {
  switch (verdict) {
    case PodVerdict::kEvict:
      return "evict";
    case PodVerdict::kSkip:
      return "skip";
    case PodVerdict::kBlock:
      return "block";
    case PodVerdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

bool Plan::would_start() const {
  return std::all_of(gates.begin(), gates.end(), [](const GatePlan& g) { return g.open; });
}

std::size_t Plan::count(PodVerdict verdict) const {
  return static_cast<std::size_t>(std::count_if(
      pods.begin(), pods.end(), [verdict](const PodPlan& p) { return p.verdict == verdict; }));
}

Plan make_plan(const PlanInput& input) {
  Plan plan{.node = input.node.meta.name, .maintenance_name = input.maintenance_name};
  std::vector<const kube::Pod*> pods;
  for (const auto& pod : input.pods) pods.push_back(&pod);
  std::sort(pods.begin(), pods.end(), [](const kube::Pod* a, const kube::Pod* b) {
    return std::tie(a->meta.namespace_, a->meta.name) < std::tie(b->meta.namespace_, b->meta.name);
  });
  std::map<std::string, std::int32_t> allowance;
  for (const kube::Pod* pod : pods) plan.pods.push_back(plan_pod(input, *pod, allowance));
  std::stable_sort(plan.pods.begin(), plan.pods.end(), [](const PodPlan& a, const PodPlan& b) {
    return rank(a.verdict) < rank(b.verdict);
  });

  const std::string& node = input.node.meta.name;
  std::string holder;
  for (const auto& nm : input.maintenances) {
    if (nm.spec.node_name == node) {
      holder = nm.meta.name;
      break;
    }
  }
  plan.gates.push_back(GatePlan{
      .gate = "existing maintenance",
      .open = holder.empty(),
      .detail = holder.empty() ? "none for node " + node : op::duplicate_message(node, holder)});

  const op::GateVerdict verdict =
      op::evaluate_gates(gate_world(input), input.maintenance_name, op::quorum_without_window);
  plan.gates.push_back(lease_gate(input, verdict));
  plan.gates.push_back(quorum_gate(input, verdict));
  plan.gates.push_back(budget_gate(input, verdict));
  return plan;
}

std::string plan_verdict(const Plan& plan) {
  for (const auto& gate : plan.gates) {
    if (!gate.open) return "would stay Pending: " + gate.detail;
  }
  const std::size_t blocked = plan.count(PodVerdict::kBlock);
  if (blocked > 0) {
    for (const auto& pod : plan.pods) {
      if (pod.verdict != PodVerdict::kBlock) continue;
      return fmt::format("would start, then block on {} pod{} (first: {}/{}: {})", blocked,
                         blocked == 1 ? "" : "s", pod.namespace_, pod.name, pod.detail);
    }
  }
  const std::size_t unknown = plan.count(PodVerdict::kUnknown);
  const std::size_t evicted = plan.count(PodVerdict::kEvict);
  if (unknown > 0) {
    return fmt::format("would start and drain {} pod{}; {} more may block (see above)", evicted,
                       evicted == 1 ? "" : "s", unknown);
  }
  return fmt::format("would start at once and drain {} pod{}", evicted, evicted == 1 ? "" : "s");
}

std::string plan_report(const Plan& plan) {
  std::string out =
      fmt::format("Plan for node {} (NodeMaintenance {}; a dry run: nothing was changed)\n",
                  plan.node, plan.maintenance_name);
  auto section = [&](PodVerdict verdict, std::string_view title) {
    const std::size_t n = plan.count(verdict);
    out += fmt::format("\n{} ({}):\n", title, n);
    if (n == 0) {
      out += "  none\n";
      return;
    }
    for (const auto& pod : plan.pods) {
      if (pod.verdict != verdict) continue;
      std::string line = fmt::format("  {}/{}", pod.namespace_, pod.name);
      if (!pod.reason.empty() && verdict != PodVerdict::kSkip) line += "  " + pod.reason;
      if (!pod.detail.empty()) line += "  " + pod.detail;
      out += line + "\n";
    }
  };
  section(PodVerdict::kEvict, "Pods to evict");
  section(PodVerdict::kBlock, "Pods that will block the drain");
  if (plan.count(PodVerdict::kUnknown) > 0) section(PodVerdict::kUnknown, "Pods that may block");
  section(PodVerdict::kSkip, "Pods skipped");
  out += "\nGates:\n";
  for (const auto& gate : plan.gates) {
    out +=
        fmt::format("  {:<7} {:<21} {}\n", gate.open ? "open" : "CLOSED", gate.gate, gate.detail);
  }
  out += "\nVerdict: " + plan_verdict(plan) + "\n";
  return out;
}

boost::json::value plan_to_json(const Plan& plan) {
  boost::json::array pods;
  for (const auto& pod : plan.pods) {
    boost::json::array pdbs;
    for (const auto& pdb : pod.pdbs) pdbs.emplace_back(pdb);
    pods.push_back(boost::json::object{{"namespace", pod.namespace_},
                                       {"name", pod.name},
                                       {"action", to_string(pod.verdict)},
                                       {"reason", pod.reason},
                                       {"detail", pod.detail},
                                       {"pdbs", std::move(pdbs)}});
  }
  boost::json::array gates;
  for (const auto& gate : plan.gates) {
    gates.push_back(
        boost::json::object{{"gate", gate.gate}, {"open", gate.open}, {"detail", gate.detail}});
  }
  return boost::json::object{{"node", plan.node},
                             {"maintenance", plan.maintenance_name},
                             {"pods", std::move(pods)},
                             {"gates", std::move(gates)},
                             {"wouldStart", plan.would_start()},
                             {"verdict", plan_verdict(plan)}};
}

std::vector<std::string> nodes_drained_before_others(const op::MaintenancePlan& plan) {
  std::vector<std::string> out;
  // Nodes still to drain since the last Waiting one: a Waiting node after them lets them in.
  std::vector<std::string> unfollowed;
  for (const op::PlanNodeStatus& entry : plan.status.nodes) {
    if (entry.phase == op::PlanNodePhase::kWaiting) {
      std::move(unfollowed.begin(), unfollowed.end(), std::back_inserter(out));
      unfollowed.clear();
    }
    if (entry.phase == op::PlanNodePhase::kWaiting || entry.phase == op::PlanNodePhase::kDraining) {
      unfollowed.push_back(entry.name);
    }
  }
  return out;
}

std::string describe_toleration(const kube::Toleration& toleration) {
  const std::string operator_name = toleration.operator_.empty() ? "Equal" : toleration.operator_;
  std::string taints;
  if (!toleration.key.empty()) {
    taints = "taint " + taint_notation(toleration);
  } else if (toleration.effect.empty()) {
    taints = "every taint";
  } else {
    taints = "every " + toleration.effect + " taint";
  }
  return taints + " (operator " + operator_name + ")";
}

RepeatEvictions find_repeat_evictions(const RepeatEvictionInput& input) {
  RepeatEvictions out{
      .plan = input.plan, .nodes_unknown = input.nodes_unknown, .nodes = input.nodes};
  const kube::Taint steering{.key = std::string(op::kSteeringTaintKey),
                             .effect = std::string(op::kPreferNoScheduleEffect)};
  std::vector<const kube::Pod*> pods;
  for (const auto& pod : input.pods) pods.push_back(&pod);
  std::map<std::string, std::size_t, std::less<>> position;
  for (std::size_t i = 0; i < input.nodes.size(); ++i) position.emplace(input.nodes[i], i);
  auto order = [&position](const kube::Pod* pod) {
    const auto found = position.find(pod->node_name);
    const std::size_t at = found == position.end() ? position.size() : found->second;
    return std::tuple<std::size_t, const std::string&, const std::string&>(at, pod->meta.namespace_,
                                                                           pod->meta.name);
  };
  std::sort(pods.begin(), pods.end(),
            [&order](const kube::Pod* a, const kube::Pod* b) { return order(a) < order(b); });
  for (const kube::Pod* pod : pods) {
    if (classify(input.daemon_sets, *pod) != op::PodAction::kEvict || op::has_finished(*pod) ||
        pod->controller() == nullptr) {
      continue;
    }
    const auto toleration = std::find_if(
        pod->tolerations.begin(), pod->tolerations.end(),
        [&steering](const kube::Toleration& t) { return kube::tolerates(t, steering); });
    if (toleration == pod->tolerations.end()) continue;
    out.pods.push_back(RepeatEviction{.namespace_ = pod->meta.namespace_,
                                      .name = pod->meta.name,
                                      .node = pod->node_name,
                                      .toleration = describe_toleration(*toleration)});
  }
  return out;
}

std::string repeat_evictions_report(const RepeatEvictions& evictions) {
  std::string out = fmt::format(
      "Pods MaintenancePlan {} may evict twice (a dry run: nothing was changed)\n"
      "While it runs, the nodes it takes later carry the taint\n"
      "{}:{} so that the pods evicted before go elsewhere;\n"
      "a pod that tolerates it may land on them all the same.\n",
      evictions.plan, op::kSteeringTaintKey, op::kPreferNoScheduleEffect);
  if (evictions.nodes_unknown) {
    out +=
        "\nThe operator has not listed the plan's nodes yet (its status has none): try again in "
        "a moment.\n";
    return out;
  }
  out += fmt::format("\nNodes whose pods leave while a later node waits ({}): {}\n",
                     evictions.nodes.size(),
                     evictions.nodes.empty() ? "none" : join(evictions.nodes, ", "));
  out += fmt::format("\nPods that tolerate the taint ({}):\n", evictions.pods.size());
  if (evictions.pods.empty()) out += "  none\n";
  for (const auto& pod : evictions.pods) {
    out += fmt::format("  {}/{} on {}: tolerates {}; {}\n", pod.namespace_, pod.name, pod.node,
                       pod.toleration, kRepeatEvictionConsequence);
  }
  return out;
}

boost::json::value repeat_evictions_to_json(const RepeatEvictions& evictions) {
  boost::json::value nodes;
  if (!evictions.nodes_unknown) {
    boost::json::array names;
    for (const auto& node : evictions.nodes) names.emplace_back(node);
    nodes = std::move(names);
  }
  boost::json::array pods;
  for (const auto& pod : evictions.pods) {
    pods.push_back(boost::json::object{{"namespace", pod.namespace_},
                                       {"name", pod.name},
                                       {"node", pod.node},
                                       {"toleration", pod.toleration}});
  }
  return boost::json::object{{"plan", evictions.plan},
                             {"nodes", std::move(nodes)},
                             {"mayBeEvictedAgain", std::move(pods)}};
}

}  // namespace nmo::cli
