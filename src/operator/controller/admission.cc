// The facts behind the gates of a Pending maintenance (docs/design.md §2.2): the per-node checks
// (node lease, etcd quorum with its stability window) and the cluster budget, oldest first, as
// the gates library judges them from the caches. The state machine decides on them.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "operator/controller/internal/operator_impl.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"

namespace nmo::op::internal {
namespace {

BudgetPhase budget_phase(const std::optional<Phase>& phase) {
  if (!phase) return BudgetPhase::kNew;
  switch (*phase) {
    case Phase::kPending:
      return BudgetPhase::kPending;
    case Phase::kRunning:
      return BudgetPhase::kRunning;
    case Phase::kSucceeded:
      return BudgetPhase::kSucceeded;
    case Phase::kFailed:
      return BudgetPhase::kFailed;
  }
  return BudgetPhase::kNew;
}

}  // namespace

QuorumStabilityTracker::Verdict OperatorImpl::quorum_verdict(const NodeMaintenance& nm,
                                                             const kube::Node& node) {
  if (!options_.etcd_quorum_check || !is_control_plane(node)) {
    return QuorumStabilityTracker::Verdict{.open = true, .recheck_at = std::nullopt};
  }
  return quorum_.observe(nm.meta.name, quorum_safe(node), clock_.now());
}

bool OperatorImpl::quorum_safe(const kube::Node& node) const {
  std::map<std::string, bool> node_ready;  // control-plane nodes
  for (const auto& n : nodes_->by_index(kControlPlaneIndex, "true")) {
    node_ready[n->meta.name] = n->is_ready();
  }
  // Members on nodes other maintenances hold count as down: those nodes are on their way down.
  std::set<std::string> held;
  for (const auto& other : maintenances_->list()) {
    if (other->spec.node_name != node.meta.name && holds_its_node(*other)) {
      held.insert(other->spec.node_name);
    }
  }
  if (guard_pdbs_) {
    std::vector<kube::PodDisruptionBudget> pdbs;
    for (const auto& pdb : guard_pdbs_->list()) pdbs.push_back(*pdb);
    std::vector<kube::Pod> pods;
    for (const auto& pod : guard_pods_->list()) pods.push_back(*pod);
    const bool other_control_plane_held = std::any_of(
        held.begin(), held.end(), [&](const std::string& n) { return node_ready.contains(n); });
    return openshift_etcd_quorum_safe(pdbs, pods, node.meta.name, other_control_plane_held);
  }
  std::vector<EtcdMember> members;
  for (const auto& pod : etcd_pods_->list()) {
    if (!is_etcd_member_pod(*pod)) continue;
    auto ready = node_ready.find(pod->node_name);
    EtcdMember member = etcd_member(*pod, ready != node_ready.end() && ready->second);
    member.node_held = held.contains(pod->node_name);
    members.push_back(std::move(member));
  }
  return check_etcd_quorum(members, node.meta.name).safe;
}

bool OperatorImpl::holds_its_node(const NodeMaintenance& nm) const {
  if (admitting_.contains(nm.meta.name)) return true;
  if (slot(nm.meta.name) != nullptr) {
    return true;
  }
  const std::optional<Phase>& phase = believed_status(nm).phase;
  return phase == Phase::kRunning || phase == Phase::kSucceeded;
}

GateFacts OperatorImpl::gate_facts(const NodeMaintenance& nm, const NodeMaintenanceStatus& status,
                                   const kube::Node& own_node) {
  const kube::Time now = wall_now();
  GateFacts facts;
  std::optional<kube::Lease> lease;
  if (auto found = node_lease(nm.spec.node_name)) lease = *found;
  facts.lease = classify_node_lease(lease, now);
  facts.quorum = quorum_verdict(nm, own_node);
  if (!facts.quorum.open) return facts;
  const NodeLeaseState lease_state = facts.lease;

  // Gate 2: the cluster budget, oldest eligible first.
  std::vector<BudgetCandidate> candidates;
  for (const auto& other : maintenances_->list()) {
    BudgetCandidate c;
    c.name = other->meta.name;
    c.uid = other->meta.uid;
    c.node = other->spec.node_name;
    c.creation_time = other->meta.creation_timestamp.value_or(kube::Time{});
    const NodeMaintenanceStatus& other_status =
        other->meta.name == nm.meta.name ? status : believed_status(*other);
    c.phase = budget_phase(other_status.phase);
    c.holds_slot = slot(c.name) != nullptr;
    const std::optional<FailureKind> kind = failure_of(other_status);
    c.cleanup_finished = kind && cleanup_finished(*kind);
    c.deleting = other->meta.deletion_timestamp.has_value();
    if (other->meta.name == nm.meta.name) {
      c.node_checks_pass = node_lease_available(lease_state);
    } else if (c.phase == BudgetPhase::kNew || c.phase == BudgetPhase::kPending) {
      std::optional<kube::Lease> their_lease;
      if (auto found = node_lease(c.node)) their_lease = *found;
      bool pass = node_lease_available(classify_node_lease(their_lease, now));
      if (pass) {
        if (auto their_node = node(c.node)) {
          pass = quorum_verdict(*other, *their_node).open;
        } else {
          pass = false;
        }
      }
      c.node_checks_pass = pass;
    }
    candidates.push_back(std::move(c));
  }
  std::vector<ForeignNodeLease> foreign;
  for (const auto& l : node_leases_->list()) {
    if (classify_node_lease(*l, now) != NodeLeaseState::kHeldByOther) continue;
    if (const std::optional<kube::Time> expiry = lease_expiry(*l);
        expiry && (!facts.foreign_lease_expiry || *expiry < *facts.foreign_lease_expiry)) {
      facts.foreign_lease_expiry = expiry;
    }
    const std::optional<std::string> node_name = lease_node(*l);
    if (!node_name) continue;
    foreign.push_back(ForeignNodeLease{.node = *node_name, .holder = lease_holder(*l)});
  }
  const BudgetDecision decision =
      decide_admissions(candidates, foreign, options_.max_parallel_maintenances);
  facts.admitted =
      std::find(decision.admit.begin(), decision.admit.end(), nm.meta.name) != decision.admit.end();
  facts.holds_slot = slot(nm.meta.name) != nullptr;
  facts.slots_used = decision.slots_used;
  for (const SlotUse& use : decision.in_use) {
    facts.slots_in_use +=
        (facts.slots_in_use.empty() ? "" : ", ") + use.holder + " (node " + use.node + ")";
  }
  return facts;
}

}  // namespace nmo::op::internal
