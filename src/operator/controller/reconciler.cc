// The reconcile of one NodeMaintenance (SPEC §2): first sight -> Pending -> gates -> Running ->
// drain -> Succeeded, the promises kept while the CR exists, and the cleanup on deletion.
#include <algorithm>
#include <set>
#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/json.hpp>
#include <boost/system/error_code.hpp>

#include "kube/api/resource.h"
#include "kube/api/watch.h"
#include "operator/controller/internal/operator_impl.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"

namespace nmo::op::internal {
namespace {

namespace json = boost::json;
using runtime::ReconcileAction;

// Retry pace of steps that wait on something without a watch event (a write that conflicted).
constexpr std::chrono::seconds kConflictRetry{1};
// How often a node lease found held by another holder is checked (and counted) again.
constexpr std::chrono::seconds kLeaseConflictRecheck{5};

std::string node_not_found(const std::string& node) { return "node \"" + node + "\" not found"; }

std::string duplicate_message(const std::string& node, const std::string& older) {
  return "node \"" + node + "\" is already under maintenance by NodeMaintenance \"" + older + "\"";
}

bool starts_with(const std::string& text, std::string_view prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// Why a Failed maintenance failed, from its lastError (the status is all that survives a restart).
enum class FailureKind { kNone, kNodeMissing, kTimeout, kLeaseLost, kDuplicate, kInvalid };

FailureKind failure_kind(const NodeMaintenance& nm, const NodeMaintenanceStatus& status) {
  if (status.phase != Phase::kFailed) return FailureKind::kNone;
  const std::string& error = status.last_error;
  if (error == node_not_found(nm.spec.node_name)) return FailureKind::kNodeMissing;
  if (starts_with(error, "drain did not complete within")) return FailureKind::kTimeout;
  if (starts_with(error, "maintenance failed: lease")) return FailureKind::kLeaseLost;
  if (error.find("is already under maintenance by") != std::string::npos) {
    return FailureKind::kDuplicate;
  }
  return FailureKind::kInvalid;
}

bool older_than(const NodeMaintenance& a, const NodeMaintenance& b) {
  const kube::Time ta = a.meta.creation_timestamp.value_or(kube::Time{});
  const kube::Time tb = b.meta.creation_timestamp.value_or(kube::Time{});
  if (ta != tb) return ta < tb;
  return a.meta.name < b.meta.name;
}

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

Condition condition(std::string_view type, bool status, std::string reason, std::string message) {
  return Condition{.type = std::string(type),
                   .status = status ? ConditionStatus::kTrue : ConditionStatus::kFalse,
                   .reason = std::move(reason),
                   .message = std::move(message)};
}

ReconcileAction after_until(std::optional<Clock::time_point> when, Clock::time_point now) {
  if (!when) return ReconcileAction::done();
  return ReconcileAction::after(
      std::max<Clock::duration>(*when - now, std::chrono::milliseconds(1)));
}

}  // namespace

log::Logger OperatorImpl::log_for(const NodeMaintenance& nm) const {
  return logger_.with({{"nodemaintenance", nm.meta.name}, {"node", nm.spec.node_name}});
}

void OperatorImpl::event(const NodeMaintenance& nm, std::string type, std::string reason,
                         std::string message, std::optional<runtime::ObjectRef> related) {
  const runtime::ObjectRef regarding{.api_version = std::string(kApiVersion),
                                     .kind = std::string(kKind),
                                     .namespace_ = "",
                                     .name = nm.meta.name,
                                     .uid = nm.meta.uid};
  recorder_.record(regarding, runtime::EventOptions{.type = std::move(type),
                                                    .reason = std::move(reason),
                                                    .message = std::move(message),
                                                    .related = std::move(related)});
}

Maintenance& OperatorImpl::state(const NodeMaintenance& nm) {
  Maintenance& m = maintenances_state_[nm.meta.name];
  if (m.uid != nm.meta.uid) {
    // A new CR under an old name starts afresh.
    if (m.alive) *m.alive = false;
    m = Maintenance{};
    m.uid = nm.meta.uid;
    coalescer_.forget(nm.meta.name);
  }
  return m;
}

NodeMaintenanceStatus OperatorImpl::current_status(const NodeMaintenance& nm) {
  Maintenance& m = state(nm);
  if (!m.status) m.status = nm.status;
  const std::string& seen = nm.meta.resource_version;
  if (!m.own_versions.empty() && seen == m.own_versions.back()) {
    m.own_versions = {seen};  // the cache shows our last write
  } else if (m.written && std::find(m.own_versions.begin(), m.own_versions.end(), seen) ==
                              m.own_versions.end()) {
    // The cache has caught up with our writes and moved on. Its status is what is on record
    // now: when another writer changed it, the next write_status() puts ours back whole.
    NodeMaintenanceStatus on_record = nm.status;
    on_record.last_update = m.written->last_update;
    if (!(on_record == *m.written)) {
      log_for(nm).warn("the status was written by someone else; writing it again",
                       {{"phase", nm.status.phase ? to_string(*nm.status.phase) : ""},
                        {"resource_version", seen}});
      m.written = nm.status;
    }
    m.own_versions = {seen};
  }
  return *m.status;
}

asio::awaitable<Result<ReconcileAction>> OperatorImpl::reconcile(std::string key) {
  if (key == kHousekeepingKey) co_return co_await housekeeping();
  if (!options_.wedge_reconcile_of.empty() && key == options_.wedge_reconcile_of) {
    logger_.warn("test hook: this reconcile never finishes", {{"nodemaintenance", key}});
    asio::steady_timer forever(executor_, asio::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await forever.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return Error(ErrorCode::kCancelled, "the wedged reconcile was cancelled");
  }
  auto cached = maintenances_->get(key);
  if (!cached) {
    if (auto found = maintenances_state_.find(key); found != maintenances_state_.end()) {
      *found->second.alive = false;
      maintenances_state_.erase(found);
    }
    coalescer_.forget(key);
    quorum_.forget(key);
    finalized_.erase(key);
    co_return ReconcileAction::done();
  }
  NodeMaintenance nm = *cached;
  if (nm.meta.deletion_timestamp) co_return co_await finalize(std::move(nm));

  if (std::find(nm.meta.finalizers.begin(), nm.meta.finalizers.end(), kFinalizer) ==
      nm.meta.finalizers.end()) {
    // Added already, and the watch brings the updated object back with the next reconcile.
    if (state(nm).finalizer_added_to == nm.meta.resource_version) co_return ReconcileAction::done();
    auto added = co_await add_finalizer(nm);
    if (!added) {
      // A failed `test` of the resourceVersion: our cache was behind; look again shortly.
      if (added.error().code == ErrorCode::kInvalid || added.error().code == ErrorCode::kConflict) {
        co_return ReconcileAction::after(kConflictRetry);
      }
      co_return added.error();
    }
    state(nm).finalizer_added_to = nm.meta.resource_version;
    co_return ReconcileAction::done();
  }

  NodeMaintenanceStatus status = current_status(nm);
  const log::Logger log = log_for(nm);

  if (!status.phase) {
    status.phase = Phase::kPending;
    std::string message = "Begin a node maintenance for node " + nm.spec.node_name;
    if (!nm.spec.reason.empty()) message += ": " + nm.spec.reason;
    event(nm, std::string(kEventNormal), "BeginMaintenance", message);
    log.info("maintenance requested", {{"reason", nm.spec.reason}});
    // Recorded at once, so a reconcile that returns early below never announces it again.
    auto written = co_await write_status(nm, status);
    if (!written) co_return written.error();
  }

  if (std::string invalid = nm.spec.validation_error(); !invalid.empty()) {
    if (status.phase == Phase::kPending) {
      co_return co_await fail(std::move(nm), std::move(status), invalid, false);
    }
  }

  // The controller is the final arbiter between two CRs for one node (SPEC §4): the older wins,
  // unless a younger one was already admitted (the cache showed it first): a maintenance that
  // touched the node keeps it. Duplicates never count as winners.
  if (status.phase == Phase::kPending || failure_kind(nm, status) == FailureKind::kDuplicate) {
    std::optional<NodeMaintenance> older;
    bool admitted_sibling = false;
    for (const auto& other : maintenances_->by_index("node", nm.spec.node_name)) {
      if (other->meta.uid == nm.meta.uid) continue;
      NodeMaintenanceStatus seen = other->status;
      if (auto known = maintenances_state_.find(other->meta.name);
          known != maintenances_state_.end() && known->second.uid == other->meta.uid &&
          known->second.status) {
        seen = *known->second.status;
      }
      if (failure_kind(*other, seen) == FailureKind::kDuplicate) continue;
      const bool admitted = seen.phase == Phase::kRunning || seen.phase == Phase::kSucceeded;
      if (admitted && !admitted_sibling) {
        admitted_sibling = true;
        older = *other;
      } else if (!admitted_sibling && older_than(*other, nm) &&
                 (!older || older_than(*other, *older))) {
        older = *other;
      }
    }
    if (older) {
      // The cache may have shown the winner only after another sibling: the message always
      // names the current winner (fail() is a no-op when it already does).
      std::string message = duplicate_message(nm.spec.node_name, older->meta.name);
      co_return co_await fail(std::move(nm), std::move(status), std::move(message), false);
    }
  }

  if (!node_synced(nm.spec.node_name)) {
    watch_node(nm.spec.node_name);
    co_return ReconcileAction::after(std::chrono::milliseconds(200));
  }
  auto node_now = node(nm.spec.node_name);
  const FailureKind failure = failure_kind(nm, status);
  if (!node_now) {
    if (failure == FailureKind::kNodeMissing) co_return ReconcileAction::done();
    const bool touched = status.phase == Phase::kRunning || status.phase == Phase::kSucceeded ||
                         failure == FailureKind::kTimeout;
    log.info("the node does not exist", {{"phase", to_string(*status.phase)}});
    std::string message = node_not_found(nm.spec.node_name);
    co_return co_await fail(std::move(nm), std::move(status), std::move(message), touched);
  }
  if (failure == FailureKind::kNodeMissing) {
    log.info("the node exists again; the maintenance waits for its gates");
    // A fresh start: the failure undid everything on the node, so nothing of the earlier drain
    // is true any more (Pending means the node is untouched).
    const NodeMaintenanceStatus failed = status;
    status = NodeMaintenanceStatus{};
    status.phase = Phase::kPending;
    status.error_on_lease_count = failed.error_on_lease_count;
    for (const Condition& c : failed.conditions) {
      if (c.type == kConditionBlocked) status.conditions.push_back(c);
    }
    Maintenance& m = state(nm);
    *m.alive = false;
    m.alive = std::make_shared<bool>(true);
    m.ledger.reset();
    m.evictions.clear();
    m.in_flight = 0;
    m.last_drain_error.clear();
  }

  switch (failure_kind(nm, status)) {
    case FailureKind::kNone:
    case FailureKind::kTimeout:
      break;
    default:
      // A failure that undid everything (or never touched anything): nothing more to do.
      {
        auto written = co_await write_status(nm, status);
        if (!written) co_return written.error();
      }
      co_return ReconcileAction::done();
  }

  if (status.phase == Phase::kPending) co_return co_await admit(std::move(nm), std::move(status));
  co_return co_await maintain(std::move(nm), std::move(status));
}

QuorumStabilityTracker::Verdict OperatorImpl::quorum_verdict(const NodeMaintenance& nm,
                                                             const kube::Node& node) {
  if (!options_.etcd_quorum_check || !is_control_plane(node)) {
    return QuorumStabilityTracker::Verdict{.open = true, .recheck_at = std::nullopt};
  }
  return quorum_.observe(nm.meta.name, quorum_safe(node), clock_.now());
}

bool OperatorImpl::quorum_safe(const kube::Node& node) const {
  if (guard_pdbs_) {
    // Upstream's rule: the one guard PDB, and the guard pod on this node.
    std::vector<kube::PodDisruptionBudget> pdbs;
    for (const auto& pdb : guard_pdbs_->store()->list()) pdbs.push_back(*pdb);
    std::vector<GuardPod> guards;
    if (pdbs.size() == 1) {
      for (const auto& pod : guard_pods_->store()->list()) {
        if (guard_pdb_selects(pdbs.front(), pod->meta.labels)) guards.push_back(guard_pod(*pod));
      }
    }
    return openshift_etcd_disruption_allowed(pdbs, guards, node.meta.name);
  }
  std::map<std::string, bool> node_ready;
  for (const auto& reflector : control_plane_reflectors_) {
    for (const auto& n : reflector->store()->list()) node_ready[n->meta.name] = n->is_ready();
  }
  // Members on nodes other maintenances hold count as down: those nodes are on their way down.
  std::set<std::string> held;
  for (const auto& other : maintenances_->list()) {
    if (other->spec.node_name != node.meta.name && holds_its_node(*other)) {
      held.insert(other->spec.node_name);
    }
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
  if (slots_->get(options_.namespace_ + "/" + slot_lease_name(nm.meta.name)) != nullptr) {
    return true;
  }
  std::optional<Phase> phase = nm.status.phase;
  if (auto known = maintenances_state_.find(nm.meta.name); known != maintenances_state_.end() &&
                                                           known->second.uid == nm.meta.uid &&
                                                           known->second.status) {
    phase = known->second.status->phase;
  }
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
    const std::string message = etcd_quorum_blocked_message(nm.spec.node_name);
    const bool changed = set_condition(
        status.conditions, condition(kConditionBlocked, true, "EtcdQuorum", message), now);
    if (!quorum.recheck_at && changed) {
      event(nm, std::string(kEventWarning), "BlockedByEtcdQuorum", message);
      log.info("waiting: etcd quorum would be lost");
    }
    auto written = co_await write_status(nm, status);
    if (!written) co_return written.error();
    if (quorum.recheck_at) {
      log.info("etcd quorum is safe; waiting for it to stay so",
               {{"stable_for_seconds",
                 static_cast<std::int64_t>(options_.etcd_quorum_stable_for.count())}});
    }
    co_return after_until(quorum.recheck_at ? quorum.recheck_at : *written, clock_.now());
  }

  // Gate 2: the cluster budget, oldest eligible first.
  std::vector<BudgetCandidate> candidates;
  for (const auto& other : maintenances_->list()) {
    BudgetCandidate c;
    c.name = other->meta.name;
    c.uid = other->meta.uid;
    c.node = other->spec.node_name;
    c.creation_time = other->meta.creation_timestamp.value_or(kube::Time{});
    NodeMaintenanceStatus other_status = other->meta.name == nm.meta.name ? status : other->status;
    if (auto known = maintenances_state_.find(other->meta.name);
        other->meta.name != nm.meta.name && known != maintenances_state_.end() &&
        known->second.uid == other->meta.uid && known->second.status) {
      other_status = *known->second.status;
    }
    c.phase = budget_phase(other_status.phase);
    c.holds_slot = slots_->get(options_.namespace_ + "/" + slot_lease_name(c.name)) != nullptr;
    const FailureKind kind = failure_kind(*other, other_status);
    c.cleanup_finished = kind == FailureKind::kNodeMissing || kind == FailureKind::kLeaseLost ||
                         kind == FailureKind::kDuplicate || kind == FailureKind::kInvalid;
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
    const std::string prefix = "node-";
    if (!starts_with(l->meta.name, prefix)) continue;
    foreign.push_back(
        ForeignNodeLease{.node = l->meta.name.substr(prefix.size()), .holder = lease_holder(*l)});
  }
  const BudgetDecision decision =
      decide_admissions(candidates, foreign, options_.max_parallel_maintenances);
  const bool admitted =
      std::find(decision.admit.begin(), decision.admit.end(), nm.meta.name) != decision.admit.end();
  if (!admitted) {
    const std::string message =
        "Waiting to acquire lease for node maintenance. Other maintenance or node health check "
        "is in progress.";
    const bool changed = set_condition(
        status.conditions, condition(kConditionBlocked, true, "WaitingForLease", message), now);
    if (changed) {
      event(nm, std::string(kEventNormal), "BlockedByNodeHealthCheck", message);
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
    auto written = co_await write_status(nm, status);
    if (!written) co_return written.error();
    co_return after_until(*written, clock_.now());
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
  const bool resumed =
      slots_->get(options_.namespace_ + "/" + slot_lease_name(nm.meta.name)) != nullptr;
  auto slot = co_await take_slot(nm);
  if (!slot) co_return slot.error();
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
    event(nm, std::string(kEventNormal), "LeaseAcquired",
          "Lease " + options_.lease_namespace + "/" + node_lease_name(nm.spec.node_name) +
              " acquired for node " + nm.spec.node_name);
  }
  auto pods = co_await watch_pods(nm.spec.node_name);
  if (!pods) co_return pods.error();
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

asio::awaitable<Result<ReconcileAction>> OperatorImpl::maintain(NodeMaintenance nm,
                                                                NodeMaintenanceStatus status) {
  const log::Logger log = log_for(nm);
  Maintenance& m = state(nm);
  const kube::Time now = wall_now();
  std::optional<Clock::time_point> next;
  auto sooner = [&next](std::optional<Clock::time_point> when) {
    if (when && (!next || *when < *next)) next = when;
  };

  // The node: cordoned and tainted, and kept so (SPEC §2.3, §2.5).
  const bool first_time =
      find_condition(status.conditions, kConditionCordoned) == nullptr ||
      find_condition(status.conditions, kConditionCordoned)->status != ConditionStatus::kTrue;
  auto patched = co_await apply_node_changes(nm);
  if (!patched) {
    if (patched.error().code == ErrorCode::kConflict ||
        patched.error().code == ErrorCode::kInvalid) {
      log.info("the node changed while we patched it; trying again",
               {{"error", patched.error().describe()}});
      co_return ReconcileAction::after(kConflictRetry);
    }
    co_return patched.error();
  }
  if (first_time) {
    // Not patched: an earlier run of this maintenance cordoned it and stopped before recording
    // that (and announced it, or not: at most once).
    if (*patched) {
      event(nm, std::string(kEventNormal), "NodeCordoned",
            "Node " + nm.spec.node_name +
                " cordoned and tainted with node.kubernetes.io/unschedulable:NoSchedule and "
                "medik8s.io/drain=draining:NoSchedule");
    }
    set_condition(status.conditions, condition(kConditionCordoned, true, "Cordoned", ""), now);
    log.info("node cordoned and tainted");
  } else if (*patched) {
    event(
        nm, std::string(kEventWarning), "MaintenanceReapplied",
        "Node " + nm.spec.node_name +
            " was uncordoned or lost its maintenance taint while under maintenance; applied again");
    log.warn("someone undid the cordon or the taint; applied again");
  }

  // The node lease, renewed on time. Found held by another holder after draining started: one
  // error per check (checks are kLeaseConflictRecheck apart, however many events arrive), and
  // more than kMaxLeaseErrors fail the maintenance (SPEC §3.1). API errors are only retried.
  auto lease = node_lease(nm.spec.node_name);
  const bool foreign = lease && lease_holder(*lease) != kNodeLeaseHolder &&
                       classify_node_lease(*lease, now) == NodeLeaseState::kHeldByOther;
  if (foreign && clock_.now() < m.lease_recheck_at) {
    sooner(m.lease_recheck_at);
  } else if (!lease || foreign || should_renew_node_lease(*lease, now)) {
    auto renewed = co_await take_node_lease(nm.spec.node_name);
    if (!renewed) {
      log.warn("could not renew the node lease; retrying", {{"error", renewed.error().describe()}});
      sooner(clock_.now() + kNodeLeaseRetryInterval);
    } else {
      const LeaseCheck check = *renewed ? LeaseCheck::kAcquired : LeaseCheck::kHeldByOther;
      status.error_on_lease_count =
          next_error_on_lease_count(static_cast<int>(status.error_on_lease_count), check, true);
      if (!*renewed) {
        status.last_error = "the node lease is held by another holder";
        log.warn("the node lease is held by another holder",
                 {{"holder", lease ? lease_holder(*lease) : std::string()},
                  {"error_on_lease_count", status.error_on_lease_count}});
        if (lease_errors_exceeded(static_cast<int>(status.error_on_lease_count))) {
          std::string message =
              lease_failure_message(static_cast<int>(status.error_on_lease_count));
          co_return co_await fail(std::move(nm), std::move(status), std::move(message), true);
        }
        m.lease_recheck_at = clock_.now() + kLeaseConflictRecheck;
        sooner(m.lease_recheck_at);
      }
    }
  } else {
    const auto until = next_node_lease_renewal(*lease, now) - now;
    sooner(clock_.now() + std::chrono::duration_cast<Clock::duration>(until));
  }

  // The drain.
  const bool was_running = status.phase == Phase::kRunning;
  auto drained = co_await drain(nm, status);
  if (!drained) co_return drained.error();
  sooner(*drained);

  if (was_running && m.ledger && m.ledger->all_gone()) {
    status.phase = Phase::kSucceeded;
    status.last_error.clear();
    set_condition(status.conditions, condition(kConditionDrained, true, "Drained", ""), now);
    set_condition(status.conditions, condition(kConditionReady, true, "Succeeded", ""), now);
    set_condition(status.conditions, condition(kConditionBlocked, false, "Drained", ""), now);
    if (options_.metrics != nullptr) {
      const Condition* cordoned = find_condition(status.conditions, kConditionCordoned);
      if (cordoned != nullptr) {
        options_.metrics->on_drain_completed(std::chrono::duration_cast<std::chrono::nanoseconds>(
            now - cordoned->last_transition_time));
      }
    }
    m.announcements.push_back(Maintenance::Announcement{
        .type = std::string(kEventNormal),
        .reason = "SucceedMaintenance",
        .message = "Node " + nm.spec.node_name +
                   " is drained: " + std::to_string(status.total_pods) + " pods left it"});
    log.info("maintenance succeeded", {{"total_pods", status.total_pods}});
  } else if (was_running && nm.spec.drain_timeout) {
    const Condition* cordoned = find_condition(status.conditions, kConditionCordoned);
    const kube::Time since = cordoned != nullptr ? cordoned->last_transition_time : now;
    const auto elapsed = now - since;
    if (elapsed >= *nm.spec.drain_timeout) {
      std::string message =
          "drain did not complete within " + format_duration(*nm.spec.drain_timeout) + ": " +
          std::to_string(status.total_pods - status.eviction_pods) + " pods pending";
      status.phase = Phase::kFailed;
      status.last_error = message;
      event(nm, std::string(kEventWarning), "FailedMaintenance", message);
      log.warn("maintenance failed: drain timeout",
               {{"pending", status.total_pods - status.eviction_pods}});
    } else {
      sooner(clock_.now() +
             std::chrono::duration_cast<Clock::duration>(*nm.spec.drain_timeout - elapsed));
    }
  }

  auto written = co_await write_status(nm, status);
  if (!written) co_return written.error();
  sooner(*written);
  if (!written->has_value()) {
    // Written (or nothing new to write): what the announcements announce is on record.
    for (Maintenance::Announcement& a : m.announcements) {
      event(nm, std::move(a.type), std::move(a.reason), std::move(a.message));
    }
    m.announcements.clear();
  }
  co_return after_until(next, clock_.now());
}

asio::awaitable<Result<ReconcileAction>> OperatorImpl::fail(NodeMaintenance nm,
                                                            NodeMaintenanceStatus status,
                                                            std::string message, bool undo) {
  const log::Logger log = log_for(nm);
  Maintenance& m = state(nm);
  if (undo) {
    *m.alive = false;
    bool left_cordoned = false;
    auto restored = co_await restore_node(nm, &left_cordoned);
    if (!restored) co_return restored.error();
    auto released = co_await release_node_lease(nm.spec.node_name);
    if (!released) co_return released.error();
    auto slot = co_await release_slot(nm.meta.name);
    if (!slot) co_return slot.error();
  }
  const bool changed = status.phase != Phase::kFailed || status.last_error != message;
  if (undo) {
    set_condition(status.conditions,
                  condition(kConditionCordoned, false, "Restored", "the maintenance was undone"),
                  wall_now());
  }
  status.phase = Phase::kFailed;
  status.last_error = message;
  set_condition(status.conditions, condition(kConditionReady, false, "Failed", message),
                wall_now());
  if (changed) {
    event(nm, std::string(kEventWarning), "FailedMaintenance", message);
    log.warn("maintenance failed", {{"error", message}, {"undone", undo}});
  }
  auto written = co_await write_status(nm, status);
  if (!written) co_return written.error();
  co_return after_until(*written, clock_.now());
}

asio::awaitable<Result<ReconcileAction>> OperatorImpl::finalize(NodeMaintenance nm) {
  const log::Logger log = log_for(nm);
  if (std::find(nm.meta.finalizers.begin(), nm.meta.finalizers.end(), kFinalizer) ==
      nm.meta.finalizers.end()) {
    co_return ReconcileAction::done();
  }
  // The cache may still show the finalizer we removed a moment ago.
  if (auto done = finalized_.find(nm.meta.name);
      done != finalized_.end() && done->second == nm.meta.uid) {
    co_return ReconcileAction::done();
  }
  NodeMaintenanceStatus status = current_status(nm);
  Maintenance& m = state(nm);
  *m.alive = false;

  std::string message = "Node maintenance removed for node " + nm.spec.node_name;
  if (!node_synced(nm.spec.node_name)) {
    watch_node(nm.spec.node_name);
    co_return ReconcileAction::after(std::chrono::milliseconds(200));
  }
  if (node(nm.spec.node_name)) {
    bool left_cordoned = false;
    auto uncordoned = co_await restore_node(nm, &left_cordoned);
    if (!uncordoned) {
      if (uncordoned.error().code == ErrorCode::kConflict ||
          uncordoned.error().code == ErrorCode::kInvalid) {
        co_return ReconcileAction::after(kConflictRetry);
      }
      co_return uncordoned.error();
    }
    if (*uncordoned) {
      const runtime::ObjectRef node_ref{.api_version = "v1",
                                        .kind = "Node",
                                        .namespace_ = "",
                                        .name = nm.spec.node_name,
                                        .uid = node(nm.spec.node_name)->meta.uid};
      recorder_.record(node_ref, runtime::EventOptions{.type = std::string(kEventNormal),
                                                       .reason = "UncordonNode",
                                                       .message = "Node " + nm.spec.node_name +
                                                                  " uncordoned: maintenance " +
                                                                  nm.meta.name + " removed",
                                                       .related = std::nullopt});
      log.info("node uncordoned");
    }
    if (left_cordoned) {
      message += "; the node stays cordoned because it was cordoned before the maintenance";
    }
  }
  // Only a maintenance that was admitted holds the node lease; a duplicate or one that never
  // left Pending must not release the lease of the maintenance that has it.
  const FailureKind failure = failure_kind(nm, status);
  const bool admitted =
      slots_->get(options_.namespace_ + "/" + slot_lease_name(nm.meta.name)) != nullptr ||
      status.phase == Phase::kRunning || status.phase == Phase::kSucceeded ||
      failure == FailureKind::kTimeout;
  auto lease = node_lease(nm.spec.node_name);
  if (admitted && lease && lease_holder(*lease) == kNodeLeaseHolder) {
    auto released = co_await release_node_lease(nm.spec.node_name);
    if (!released) co_return released.error();
    event(nm, std::string(kEventNormal), "LeaseReleased",
          "Lease " + options_.lease_namespace + "/" + node_lease_name(nm.spec.node_name) +
              " released");
  }
  auto slot = co_await release_slot(nm.meta.name);
  if (!slot) co_return slot.error();
  event(nm, std::string(kEventNormal), "RemovedMaintenance", message);
  auto removed = co_await remove_finalizer(nm);
  if (!removed) co_return removed.error();
  finalized_[nm.meta.name] = nm.meta.uid;
  log.info("maintenance removed");
  maintenances_state_.erase(nm.meta.name);
  coalescer_.forget(nm.meta.name);
  quorum_.forget(nm.meta.name);
  co_return ReconcileAction::done();
}

asio::awaitable<Result<std::optional<Clock::time_point>>> OperatorImpl::write_status(
    NodeMaintenance nm, NodeMaintenanceStatus status) {
  Maintenance& m = state(nm);
  if (!m.written) {
    m.written = nm.status;
    m.own_versions = {nm.meta.resource_version};
  }
  m.status = status;
  NodeMaintenanceStatus compare = status;
  compare.last_update = m.written->last_update;
  const bool changed = !(compare == *m.written);
  const bool phase_changed = status.phase != m.written->phase;
  const StatusWriteDecision decision =
      coalescer_.decide(nm.meta.name, changed, phase_changed, clock_.now());
  if (decision.kind == StatusWriteDecision::Kind::kSkip) {
    co_return std::optional<Clock::time_point>();
  }
  if (decision.kind == StatusWriteDecision::Kind::kLater) {
    co_return std::optional<Clock::time_point>(decision.at);
  }
  status.last_update = std::chrono::floor<std::chrono::seconds>(wall_now());
  // On the newest version we know of (ours, when the cache lags behind our last write): a writer
  // that has missed a newer write, such as a leader paused past its lease, gets 409 Conflict
  // instead of overwriting it.
  json::object patch = status_merge_patch(status);
  patch["metadata"] = json::object{{"resourceVersion", m.own_versions.back()}};
  const std::string path = kube::object_path<NodeMaintenance>("", nm.meta.name) + "/status";
  const kube::WriteOptions options;
  auto written =
      co_await client_.patch(path, kube::PatchType::kMergePatch, json::serialize(patch), options);
  if (!written) co_return written.error();
  m.status = status;
  m.written = status;
  m.own_versions.push_back(kube::resource_version_of(*written));
  coalescer_.record_write(nm.meta.name, clock_.now());
  co_return std::optional<Clock::time_point>();
}

asio::awaitable<Result<void>> OperatorImpl::add_finalizer(NodeMaintenance nm) {
  json::array patch;
  patch.push_back(
      {{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", nm.meta.resource_version}});
  if (nm.meta.finalizers.empty()) {
    patch.push_back({{"op", "add"},
                     {"path", "/metadata/finalizers"},
                     {"value", json::array{json::string(kFinalizer)}}});
  } else {
    patch.push_back(
        {{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", json::string(kFinalizer)}});
  }
  const std::string path = kube::object_path<NodeMaintenance>("", nm.meta.name);
  const kube::WriteOptions options;
  auto written =
      co_await client_.patch(path, kube::PatchType::kJsonPatch, json::serialize(patch), options);
  if (!written) co_return written.error();
  co_return Result<void>();
}

asio::awaitable<Result<void>> OperatorImpl::remove_finalizer(NodeMaintenance nm) {
  const auto it = std::find(nm.meta.finalizers.begin(), nm.meta.finalizers.end(), kFinalizer);
  if (it == nm.meta.finalizers.end()) co_return Result<void>();
  const std::string index = std::to_string(it - nm.meta.finalizers.begin());
  json::array patch;
  patch.push_back({{"op", "test"},
                   {"path", "/metadata/finalizers/" + index},
                   {"value", json::string(kFinalizer)}});
  patch.push_back({{"op", "remove"}, {"path", "/metadata/finalizers/" + index}});
  const std::string path = kube::object_path<NodeMaintenance>("", nm.meta.name);
  const kube::WriteOptions options;
  auto written =
      co_await client_.patch(path, kube::PatchType::kJsonPatch, json::serialize(patch), options);
  if (!written && written.error().code != ErrorCode::kNotFound) co_return written.error();
  co_return Result<void>();
}

asio::awaitable<Result<bool>> OperatorImpl::take_node_lease(std::string node_name) {
  const kube::Time now = wall_now();
  std::optional<kube::Lease> current;
  if (auto cached = node_lease(node_name)) current = *cached;
  const NodeLeaseState state_now = classify_node_lease(current, now);
  if (state_now == NodeLeaseState::kHeldByOther) co_return false;
  const NodeLeaseSpec spec = node_lease_spec(current, now);
  json::object body{
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", node_lease_name(node_name)}, {"namespace", options_.lease_namespace}}},
      {"spec",
       {{"holderIdentity", spec.holder_identity},
        {"leaseDurationSeconds", spec.lease_duration_seconds},
        {"acquireTime", kube::format_micro_time(spec.acquire_time)},
        {"renewTime", kube::format_micro_time(spec.renew_time)},
        {"leaseTransitions", spec.lease_transitions}}}};
  if (auto n = node(node_name)) {
    body["metadata"].as_object()["ownerReferences"] = json::array{
        {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node_name}, {"uid", n->meta.uid}}};
  }
  const kube::WriteOptions options;
  Result<json::value> written;
  if (!current) {
    const std::string path = kube::collection_path<kube::Lease>(options_.lease_namespace);
    written = co_await client_.create(path, json::value(std::move(body)), options);
  } else {
    body["metadata"].as_object()["resourceVersion"] = current->meta.resource_version;
    const std::string path =
        kube::object_path<kube::Lease>(options_.lease_namespace, node_lease_name(node_name));
    written = co_await client_.update(path, json::value(std::move(body)), options);
  }
  if (!written) {
    if (written.error().code == ErrorCode::kConflict ||
        written.error().code == ErrorCode::kAlreadyExists) {
      // Someone wrote the lease meanwhile; the watch brings it and the next round decides.
      co_return Error(ErrorCode::kConflict, "the node lease changed while we wrote it");
    }
    co_return written.error();
  }
  co_return true;
}

asio::awaitable<Result<void>> OperatorImpl::release_node_lease(std::string node_name) {
  auto lease = node_lease(node_name);
  if (!lease || lease_holder(*lease) != kNodeLeaseHolder) co_return Result<void>();
  kube::DeleteOptions options;
  options.precondition_uid = lease->meta.uid;
  const std::string path =
      kube::object_path<kube::Lease>(options_.lease_namespace, node_lease_name(node_name));
  auto removed = co_await client_.remove(path, options);
  if (!removed && removed.error().code != ErrorCode::kNotFound) co_return removed.error();
  co_return Result<void>();
}

asio::awaitable<Result<void>> OperatorImpl::take_slot(NodeMaintenance nm) {
  const std::string name = slot_lease_name(nm.meta.name);
  if (slots_->get(options_.namespace_ + "/" + name)) co_return Result<void>();
  const kube::Time now = wall_now();
  json::object body{{"apiVersion", "coordination.k8s.io/v1"},
                    {"kind", "Lease"},
                    {"metadata",
                     {{"name", name},
                      {"namespace", options_.namespace_},
                      {"labels", {{"nodemaintenance.medik8s.io/slot", "true"}}},
                      {"ownerReferences", json::array{{{"apiVersion", kApiVersion},
                                                       {"kind", kKind},
                                                       {"name", nm.meta.name},
                                                       {"uid", nm.meta.uid}}}}}},
                    {"spec",
                     {{"holderIdentity", slot_holder_identity(nm.meta.name, nm.spec.node_name)},
                      {"acquireTime", kube::format_micro_time(now)},
                      {"renewTime", kube::format_micro_time(now)}}}};
  const std::string path = kube::collection_path<kube::Lease>(options_.namespace_);
  const kube::WriteOptions options;
  auto created = co_await client_.create(path, json::value(std::move(body)), options);
  if (!created && created.error().code != ErrorCode::kAlreadyExists) co_return created.error();
  co_return Result<void>();
}

asio::awaitable<Result<void>> OperatorImpl::release_slot(std::string cr_name) {
  const std::string name = slot_lease_name(cr_name);
  const std::string path = kube::object_path<kube::Lease>(options_.namespace_, name);
  const kube::DeleteOptions options;
  auto removed = co_await client_.remove(path, options);
  if (!removed && removed.error().code != ErrorCode::kNotFound) co_return removed.error();
  co_return Result<void>();
}

asio::awaitable<Result<ReconcileAction>> OperatorImpl::housekeeping() {
  const kube::Time now = wall_now();
  // Slot Leases that show foreign node-lease holders (SPEC §2.2).
  std::map<std::string, std::string> wanted;  // slot name -> holder identity
  for (const auto& l : node_leases_->list()) {
    const std::string prefix = "node-";
    if (!starts_with(l->meta.name, prefix)) continue;
    const std::string node_name = l->meta.name.substr(prefix.size());
    const NodeLeaseState state_now = classify_node_lease(*l, now);
    if (state_now == NodeLeaseState::kHeldByOther) {
      wanted[foreign_slot_lease_name(node_name)] =
          slot_holder_identity(lease_holder(*l), node_name);
    } else if (state_now == NodeLeaseState::kOurs &&
               maintenances_->by_index("node", node_name).empty()) {
      // Ours without a NodeMaintenance behind it (a crash between steps): give it back.
      logger_.info("releasing a node lease no maintenance holds", {{"node", node_name}});
      auto released = co_await release_node_lease(node_name);
      if (!released) co_return released.error();
    }
  }
  for (const auto& [name, holder] : wanted) {
    auto existing = slots_->get(options_.namespace_ + "/" + name);
    if (existing && existing->holder_identity == holder) continue;
    json::object body{{"apiVersion", "coordination.k8s.io/v1"},
                      {"kind", "Lease"},
                      {"metadata",
                       {{"name", name},
                        {"namespace", options_.namespace_},
                        {"labels", {{"nodemaintenance.medik8s.io/slot", "foreign"}}}}},
                      {"spec", {{"holderIdentity", holder}}}};
    const kube::WriteOptions options;
    Result<json::value> written;
    if (existing) {
      body["metadata"].as_object()["resourceVersion"] = existing->meta.resource_version;
      written = co_await client_.update(kube::object_path<kube::Lease>(options_.namespace_, name),
                                        json::value(std::move(body)), options);
    } else {
      written = co_await client_.create(kube::collection_path<kube::Lease>(options_.namespace_),
                                        json::value(std::move(body)), options);
    }
    if (!written && written.error().code != ErrorCode::kAlreadyExists &&
        written.error().code != ErrorCode::kConflict) {
      co_return written.error();
    }
  }
  for (const auto& slot : slots_->list()) {
    const std::string* kind = slot->meta.labels.find("nodemaintenance.medik8s.io/slot");
    if (kind == nullptr || *kind != "foreign" || wanted.contains(slot->meta.name)) continue;
    kube::DeleteOptions options;
    options.precondition_uid = slot->meta.uid;
    auto removed = co_await client_.remove(
        kube::object_path<kube::Lease>(options_.namespace_, slot->meta.name), options);
    if (!removed && removed.error().code != ErrorCode::kNotFound) co_return removed.error();
  }
  co_return ReconcileAction::done();
}

}  // namespace nmo::op::internal
