#include "operator/gates/admission_gates.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "operator/api/failure.h"

namespace nmo::op {
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

const GateMaintenance* find(const GateWorld& world, std::string_view name) {
  for (const auto& m : world.maintenances) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::optional<kube::Lease> lease_of(const GateWorld& world, std::string_view node) {
  const std::string name = node_lease_name(node);
  for (const auto& lease : world.node_leases) {
    if (lease.meta.name == name) return lease;
  }
  return std::nullopt;
}

// The nodes other maintenances hold: their etcd members count as down already.
std::set<std::string, std::less<>> held_elsewhere(const GateWorld& world,
                                                  const GateMaintenance& asking) {
  std::set<std::string, std::less<>> held;
  for (const auto& other : world.maintenances) {
    if (other.node != asking.node && other.holds_node()) held.insert(other.node);
  }
  return held;
}

QuorumAnswer openshift_answer(const GateWorld& world, const GateMaintenance& asking,
                              const std::set<std::string, std::less<>>& held) {
  const bool other_control_plane_held = std::any_of(
      held.begin(), held.end(),
      [&](const std::string& node) { return world.etcd.control_plane_ready.contains(node); });
  QuorumAnswer answer{.applies = true};
  answer.safe = openshift_etcd_quorum_safe(world.etcd.guard_pdbs, world.etcd.guard_pods,
                                           asking.node, other_control_plane_held);
  answer.detail = "OpenShift etcd guard PDB in " + std::string(kOpenShiftEtcdNamespace);
  if (other_control_plane_held) answer.detail += "; another control-plane node is held";
  return answer;
}

QuorumAnswer stacked_answer(const GateWorld& world, const GateMaintenance& asking,
                            const std::set<std::string, std::less<>>& held) {
  std::vector<EtcdMember> members;
  std::vector<std::string> held_members;
  for (const auto& pod : world.etcd.member_pods) {
    if (!is_etcd_member_pod(pod)) continue;
    const auto ready = world.etcd.control_plane_ready.find(pod.node_name);
    EtcdMember member =
        etcd_member(pod, ready != world.etcd.control_plane_ready.end() && ready->second);
    member.node_held = held.contains(pod.node_name);
    if (member.node_held) held_members.push_back(pod.node_name);
    members.push_back(std::move(member));
  }
  const QuorumCheck check = check_etcd_quorum(members, asking.node);
  QuorumAnswer answer{.applies = true, .safe = check.safe};
  if (check.members == 0) {
    answer.detail = "no stacked etcd members found (external or managed etcd)";
    return answer;
  }
  answer.detail = std::to_string(check.members) + " etcd members, " +
                  std::to_string(check.healthy) + " healthy, " +
                  std::to_string(check.healthy_after) + " left while it is down, " +
                  std::to_string(check.needed) + " needed";
  std::sort(held_members.begin(), held_members.end());
  for (std::size_t i = 0; i < held_members.size(); ++i) {
    answer.detail += (i == 0 ? " (held by another maintenance: " : ", ") + held_members[i];
  }
  if (!held_members.empty()) answer.detail += ")";
  return answer;
}

// Whether `m`'s own per-node checks pass now: its lease and its quorum (with the window).
bool node_checks_pass(const GateWorld& world, const GateMaintenance& m,
                      const QuorumWindow& window) {
  if (!node_lease_available(classify_node_lease(lease_of(world, m.node), world.now))) return false;
  if (!m.node_exists) return false;
  const QuorumAnswer quorum = etcd_quorum_answer(world, m);
  return !quorum.applies || window(m, quorum.safe).open;
}

// The nodes of the maintenances by their node lease's name: a hashed lease name cannot be
// turned back into its node (node_lease.h).
std::map<std::string, std::string, std::less<>> nodes_by_lease(const GateWorld& world) {
  std::map<std::string, std::string, std::less<>> nodes;
  for (const auto& m : world.maintenances) nodes.emplace(node_lease_name(m.node), m.node);
  return nodes;
}

void note_expiry(std::optional<kube::Time>& earliest, const kube::Lease& lease) {
  if (const std::optional<kube::Time> expiry = lease_expiry(lease);
      expiry && (!earliest || *expiry < *earliest)) {
    earliest = expiry;
  }
}

}  // namespace

bool GateMaintenance::holds_node() const noexcept {
  return admitting || holds_slot || phase == Phase::kRunning || phase == Phase::kSucceeded;
}

GateMaintenance gate_maintenance(const NodeMaintenance& nm, const NodeMaintenanceStatus& believed,
                                 bool holds_slot, bool node_exists) {
  const std::optional<FailureKind> failure = failure_of(believed);
  return GateMaintenance{.name = nm.meta.name,
                         .uid = nm.meta.uid,
                         .node = nm.spec.node_name,
                         .created = nm.meta.creation_timestamp.value_or(kube::Time{}),
                         .phase = believed.phase,
                         .cleanup_finished = failure && cleanup_finished(*failure),
                         .holds_slot = holds_slot,
                         .deleting = nm.meta.deletion_timestamp.has_value(),
                         .node_exists = node_exists};
}

QuorumAnswer etcd_quorum_answer(const GateWorld& world, const GateMaintenance& maintenance) {
  if (!world.etcd_quorum_check || !world.etcd.control_plane_ready.contains(maintenance.node)) {
    return QuorumAnswer{};
  }
  const auto held = held_elsewhere(world, maintenance);
  return world.etcd.openshift ? openshift_answer(world, maintenance, held)
                              : stacked_answer(world, maintenance, held);
}

QuorumStabilityTracker::Verdict quorum_without_window(const GateMaintenance& /*maintenance*/,
                                                      bool safe) {
  return QuorumStabilityTracker::Verdict{.open = safe, .recheck_at = std::nullopt};
}

GateVerdict evaluate_gates(const GateWorld& world, std::string_view name,
                           const QuorumWindow& window) {
  GateVerdict verdict;
  const GateMaintenance* self = find(world, name);
  if (self == nullptr) return verdict;
  verdict.lease_object = lease_of(world, self->node);
  verdict.lease = classify_node_lease(verdict.lease_object, world.now);
  verdict.holds_slot = self->holds_slot;
  verdict.quorum = etcd_quorum_answer(world, *self);
  if (verdict.quorum.applies) verdict.quorum_window = window(*self, verdict.quorum.safe);
  if (!verdict.quorum_window.open) return verdict;

  std::vector<BudgetCandidate> candidates;
  for (const auto& m : world.maintenances) {
    BudgetCandidate c{.name = m.name,
                      .uid = m.uid,
                      .node = m.node,
                      .creation_time = m.created,
                      .phase = budget_phase(m.phase),
                      .holds_slot = m.holds_slot,
                      .cleanup_finished = m.cleanup_finished,
                      .deleting = m.deleting};
    if (&m == self) {
      c.node_checks_pass = node_lease_available(verdict.lease);
    } else if (c.phase == BudgetPhase::kNew || c.phase == BudgetPhase::kPending) {
      c.node_checks_pass = node_checks_pass(world, m, window);
    }
    candidates.push_back(std::move(c));
  }
  std::vector<ForeignNodeLease> foreign;
  std::optional<std::map<std::string, std::string, std::less<>>> by_lease;  // when one is foreign
  for (const auto& lease : world.node_leases) {
    if (classify_node_lease(lease, world.now) != NodeLeaseState::kHeldByOther) continue;
    note_expiry(verdict.foreign_lease_expiry, lease);
    if (!by_lease) by_lease = nodes_by_lease(world);
    // The node of a maintenance whose lease it is, else what the Lease tells.
    const auto known = by_lease->find(lease.meta.name);
    const std::optional<std::string> node =
        known != by_lease->end() ? std::optional<std::string>(known->second) : node_of_lease(lease);
    if (!node) continue;
    foreign.push_back(ForeignNodeLease{.node = *node, .holder = lease_holder(lease)});
  }
  verdict.budget_evaluated = true;
  verdict.budget = decide_admissions(candidates, foreign, world.max_parallel);
  verdict.admitted = std::find(verdict.budget.admit.begin(), verdict.budget.admit.end(), name) !=
                     verdict.budget.admit.end();
  return verdict;
}

}  // namespace nmo::op
