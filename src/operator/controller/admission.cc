// The gates of a Pending maintenance (docs/design.md §2.2): the per-node checks (node lease, etcd
// quorum with its stability window), the cluster budget, oldest first, and the admission that
// takes the slot and the node lease before Running.
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

using runtime::ReconcileAction;

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

// The Blocked condition's message during the stability window.
std::string etcd_quorum_stabilizing_message(std::chrono::seconds stable_for) {
  return "etcd quorum is safe; waiting until it has stayed so for " +
         std::to_string(stable_for.count()) + "s";
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
  for (const auto& store : control_plane_nodes_) {
    for (const auto& n : store->list()) node_ready[n->meta.name] = n->is_ready();
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

asio::awaitable<Result<ReconcileAction>> OperatorImpl::admit(NodeMaintenance nm,
                                                             NodeMaintenanceStatus status) {
  const log::Logger log = log_for(nm);
  const kube::Time now = wall_now();
  auto node_now = node(nm.spec.node_name);

  // Gate 1: per-node checks, changing nothing.
  std::optional<kube::Lease> lease;
  if (auto found = node_lease(nm.spec.node_name)) lease = *found;
  const NodeLeaseState lease_state = classify_node_lease(lease, now);
  const QuorumStabilityTracker::Verdict quorum = quorum_verdict(nm, *node_now);
  if (!quorum.open) {
    // While the stability window runs the condition says so, so that quorum turning unsafe
    // again is a change of the status on record, and announced as such.
    const std::string message =
        quorum.recheck_at ? etcd_quorum_stabilizing_message(options_.etcd_quorum_stable_for)
                          : etcd_quorum_blocked_message(nm.spec.node_name);
    const bool changed = set_condition(
        status.conditions, condition(kConditionBlocked, true, "EtcdQuorum", message), now);
    if (!quorum.recheck_at && changed) {
      announce(nm, events::blocked_by_etcd_quorum(message));
      log.info("waiting: etcd quorum would be lost");
    }
    NMO_CO_TRY_ASSIGN(const auto written, co_await write_status(nm, status));
    if (quorum.recheck_at) {
      log.info("etcd quorum is safe; waiting for it to stay so",
               {{"stable_for_seconds",
                 static_cast<std::int64_t>(options_.etcd_quorum_stable_for.count())}});
    }
    co_return after_until(quorum.recheck_at ? quorum.recheck_at : written, clock_.now());
  }

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
    const std::optional<std::string> node_name = lease_node(*l);
    if (!node_name) continue;
    foreign.push_back(ForeignNodeLease{.node = *node_name, .holder = lease_holder(*l)});
  }
  const BudgetDecision decision =
      decide_admissions(candidates, foreign, options_.max_parallel_maintenances);
  const bool admitted =
      std::find(decision.admit.begin(), decision.admit.end(), nm.meta.name) != decision.admit.end();
  if (!admitted) {
    events::Event blocked = events::blocked_by_node_health_check();
    const bool changed =
        set_condition(status.conditions,
                      condition(kConditionBlocked, true, "WaitingForLease", blocked.message), now);
    if (changed) {
      announce(nm, std::move(blocked));
      std::string users;
      for (const SlotUse& use : decision.in_use) {
        users += (users.empty() ? "" : ", ") + use.holder + " (node " + use.node + ")";
      }
      log.info("waiting for a maintenance slot or the node lease",
               {{"slots_used", decision.slots_used},
                {"max_parallel_maintenances", options_.max_parallel_maintenances},
                {"in_use", users},
                {"node_lease", to_string(lease_state)}});
    }
    NMO_CO_TRY_ASSIGN(const auto written, co_await write_status(nm, status));
    co_return after_until(written, clock_.now());
  }

  // Gate 3: take the slot, then the node lease; only then Running. Until the Running status is
  // in memory (or this reconcile ends), other admissions see this node as held.
  struct Admitting {
    std::set<std::string>& names;
    std::string name;
    ~Admitting() { names.erase(name); }
  } admitting{admitting_, nm.meta.name};
  admitting_.insert(nm.meta.name);
  // Held already when an earlier run took it and stopped before recording Running.
  const bool resumed = slot(nm.meta.name) != nullptr;
  NMO_CO_TRY(co_await take_slot(nm));
  auto leased = co_await take_node_lease(nm.spec.node_name);
  if (!leased || !*leased) {
    auto released = co_await release_slot(nm.meta.name);
    if (!released)
      log.warn("could not give the slot back", {{"error", released.error().describe()}});
    if (!leased) co_return leased.error();
    co_return ReconcileAction::after(kConflictRetry);
  }
  // Announced by whoever took it: an earlier run that stopped before recording Running left
  // both the slot and the lease to this one.
  if (!resumed || lease_state != NodeLeaseState::kOurs) {
    event(nm, events::lease_acquired(node_lease_ref(nm.spec.node_name), nm.spec.node_name));
  }
  NMO_CO_TRY(co_await watch_pods(nm.spec.node_name));
  status.phase = Phase::kRunning;
  status.totalpods = static_cast<std::int64_t>(pods_on(nm.spec.node_name).size());
  status.last_error.clear();
  set_condition(status.conditions, condition(kConditionBlocked, false, "Admitted", ""), now);
  log.info("admitted: slot and node lease taken",
           {{"slots_used", decision.slots_used + (resumed ? 0 : 1)}, {"resumed", resumed}});
  quorum_.forget(nm.meta.name);
  // Running is written by maintain() together with the first counters, so nobody sees
  // "Running, 0 of 0"; until then it lives in memory.
  state(nm).status = status;
  co_return co_await maintain(std::move(nm), std::move(status));
}

}  // namespace nmo::op::internal
