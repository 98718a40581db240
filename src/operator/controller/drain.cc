// The drain engine (docs/design.md §2.4): which pods must leave, concurrent bounded evictions that
// never block a reconcile, the answers turned into pending reasons, and the status counters.
#include <algorithm>
#include <utility>

#include "kube/api/daemon_set.h"
#include "operator/controller/internal/operator_impl.h"
#include "operator/drain/eviction_policy.h"
#include "operator/drain/pod_policy.h"

namespace nmo::op::internal {
namespace {

// A pod whose eviction could not even be sent (connection, timeout) is tried again after this.
constexpr std::chrono::seconds kTransportRetry{5};
// After an accepted eviction, the pod is evicted again only if it is still there, not
// terminating, this long after (an eviction whose deletion never came).
constexpr std::chrono::seconds kAcceptedRecheck{30};

LedgerSeed seed_of(const NodeMaintenanceStatus& status) {
  LedgerSeed seed;
  seed.total_pods = status.total_pods;
  seed.eviction_pods = status.eviction_pods;
  if (!status.pending_pods_refs.empty()) {
    for (const PendingPodRef& ref : status.pending_pods_refs) {
      LedgerSeed::PendingPod pod;
      pod.namespace_ = ref.namespace_;
      pod.name = ref.name;
      pod.reason = ref.reason.value_or(PendingPodReason::kEvicting);
      pod.message = ref.message;
      seed.pending.push_back(std::move(pod));
    }
  } else {
    for (const std::string& name : status.pending_pods) {
      seed.pending.push_back(LedgerSeed::PendingPod{.namespace_ = "", .name = name});
    }
  }
  return seed;
}

}  // namespace

asio::awaitable<bool> OperatorImpl::daemon_set_exists(std::string ns, std::string name,
                                                      std::string uid) {
  if (auto known = daemon_sets_.find(uid); known != daemon_sets_.end()) co_return known->second;
  auto found = co_await client_.get<kube::DaemonSet>(ns, name);
  if (!found) {
    // Not found: orphaned, evict it. Any other error: assume it exists (the safe side, as a
    // DaemonSet pod would come back anyway) and ask again next time.
    if (found.error().code == ErrorCode::kNotFound) daemon_sets_[uid] = false;
    co_return found.error().code != ErrorCode::kNotFound;
  }
  const bool same = found->meta.uid == uid;
  daemon_sets_[uid] = same;
  co_return same;
}

asio::awaitable<Result<std::optional<Clock::time_point>>> OperatorImpl::drain(
    const NodeMaintenance& nm, NodeMaintenanceStatus& status) {
  auto watched = co_await watch_pods(nm.spec.node_name);
  if (!watched) co_return watched.error();
  Maintenance& m = state(nm);
  const kube::Time now = wall_now();
  const Clock::time_point tick = clock_.now();
  const log::Logger log = log_for(nm);

  // Which pods must leave (DaemonSet ownership is looked up once per DaemonSet).
  std::vector<kube::Pod> leaving;
  for (const auto& pod : pods_on(nm.spec.node_name)) {
    bool ds_exists = false;
    if (auto owner = daemon_set_owner(*pod)) {
      ds_exists = co_await daemon_set_exists(owner->namespace_, owner->name, owner->uid);
    }
    if (must_leave(classify_pod(*pod, ds_exists))) leaving.push_back(*pod);
  }
  // A coroutine above may have let the CR's deletion in; the state is then gone or dead.
  if (!*m.alive) co_return std::optional<Clock::time_point>();

  const bool fresh = !m.ledger.has_value();
  if (fresh) {
    const bool restored =
        status.total_pods > 0 || status.phase == Phase::kSucceeded || !status.pending_pods.empty();
    m.ledger = restored ? DrainLedger::restore(seed_of(status)) : DrainLedger();
  }
  apply_evictions(nm, m);
  const bool announced = find_condition(status.conditions, kConditionDrained) != nullptr;
  const LedgerChanges changes = m.ledger->sync(leaving);
  if (!announced) {
    announce(nm, events::begin_eviction(m.ledger->total_pods(), nm.spec.node_name));
    set_condition(status.conditions,
                  Condition{.type = std::string(kConditionDrained),
                            .status = ConditionStatus::kFalse,
                            .reason = "Draining",
                            .message = ""},
                  now);
    log.info("drain started", {{"pods_to_evict", m.ledger->total_pods()}});
  } else if (!fresh) {
    for (const LedgerPodRef& pod : changes.newcomers) {
      log.info("a pod arrived on the node; it will be evicted too",
               {{"pod", pod.namespace_ + "/" + pod.name}});
      if (status.phase == Phase::kSucceeded) {
        event(nm,
              events::begin_newcomer_eviction(pod.namespace_ + "/" + pod.name, nm.spec.node_name));
      }
    }
  }

  // Evictions that are due, bounded per node; terminating pods are only watched. None before
  // the drain's start (Running, totalPods) is on record: a successor must find the counters of
  // pods already evicted, and must not announce the drain again.
  const NodeMaintenanceStatus& on_record = m.written ? *m.written : nm.status;
  const bool recorded = find_condition(on_record.conditions, kConditionDrained) != nullptr;
  std::optional<Clock::time_point> next;
  if (!recorded && !leaving.empty()) next = tick;
  for (const kube::Pod& pod : leaving) {
    const LedgerPod* entry = m.ledger->find(pod.meta.uid);
    if (entry == nullptr || entry->gone) continue;
    if (is_terminating(pod)) {
      m.ledger->set_pending(pod.meta.uid, PendingPodReason::kWaitingForTermination,
                            termination_message(pod, now));
      // The message counts the seconds: look again while the pod lingers.
      const Clock::time_point again = tick + std::chrono::seconds(5);
      if (!next || again < *next) next = again;
      continue;
    }
    PodEviction& eviction = m.evictions[pod.meta.uid];
    if (eviction.in_flight) continue;
    if (eviction.retry_at > tick) {
      if (!next || eviction.retry_at < *next) next = eviction.retry_at;
      continue;
    }
    if (m.in_flight >= options_.evictions_in_flight || !recorded) continue;
    start_eviction(nm, pod);
  }

  // The counters.
  status.total_pods = m.ledger->total_pods();
  status.eviction_pods = m.ledger->eviction_pods();
  status.drain_progress = m.ledger->drain_progress();
  status.pending_pods = m.ledger->pending_pod_names();
  status.pending_pods_refs.clear();
  bool blocked = false;
  std::string blocked_reason;
  for (const LedgerPod& pod : m.ledger->pending_pods()) {
    status.pending_pods_refs.push_back(PendingPodRef{.namespace_ = pod.namespace_,
                                                     .name = pod.name,
                                                     .reason = pod.reason,
                                                     .message = pod.message});
    if (pod.reason != PendingPodReason::kEvicting &&
        pod.reason != PendingPodReason::kWaitingForTermination) {
      blocked = true;
      if (blocked_reason.empty()) blocked_reason = std::string(to_string(pod.reason));
    }
  }
  // Once every pod is gone the refusals are history: a newcomer evicted later (after
  // Succeeded) must not bring back an error it never met.
  if (m.ledger->all_gone()) m.last_drain_error.clear();
  if (!m.last_drain_error.empty()) status.last_error = m.last_drain_error;
  if (status.phase == Phase::kRunning) {
    set_condition(status.conditions,
                  Condition{.type = std::string(kConditionBlocked),
                            .status = blocked ? ConditionStatus::kTrue : ConditionStatus::kFalse,
                            .reason = blocked ? blocked_reason : "Draining",
                            .message = blocked ? status.last_error : ""},
                  now);
  }
  co_return next;
}

void OperatorImpl::start_eviction(const NodeMaintenance& nm, const kube::Pod& pod) {
  Maintenance& m = state(nm);
  PodEviction& eviction = m.evictions[pod.meta.uid];
  eviction.in_flight = true;
  ++m.in_flight;
  // A retry keeps the pod's last reason (BlockedByPDB, EvictionDeferred, ...) until the answer
  // comes: the status must not flicker to Evicting on every attempt.
  asio::co_spawn(executor_,
                 evict(nm.meta.name, nm.meta.uid, pod, nm.spec.grace_period_seconds, m.alive),
                 asio::detached);
}

asio::awaitable<void> OperatorImpl::evict(std::string cr_name, std::string cr_uid, kube::Pod pod,
                                          std::optional<std::int64_t> grace,
                                          std::shared_ptr<bool> alive) {
  kube::EvictOptions options;
  options.grace_period_seconds = grace;
  options.precondition_uid = pod.meta.uid;
  options.fence = options_.may_evict;
  auto answer = co_await client_.evict(pod.meta.namespace_, pod.meta.name, options);
  if (options_.metrics != nullptr) {
    options_.metrics->on_eviction(answer ? std::optional(answer->outcome) : std::nullopt);
  }
  std::vector<kube::PodDisruptionBudget> covering;
  if (answer && (answer->outcome == kube::EvictionOutcome::kBlockedByPdb ||
                 answer->outcome == kube::EvictionOutcome::kMultiplePdbs)) {
    // The budgets only shape the message; without them the API's text still says enough.
    kube::ListOptions list_options;
    auto pdbs =
        co_await client_.list_all<kube::PodDisruptionBudget>(pod.meta.namespace_, list_options);
    if (pdbs) covering = covering_pdbs(pod, pdbs->items);
  }
  if (!*alive) co_return;
  auto found = maintenances_state_.find(cr_name);
  if (found == maintenances_state_.end() || found->second.uid != cr_uid) co_return;
  // Into the inbox: the next reconcile applies it (apply_evictions()), the only writer of the
  // maintenance's state.
  found->second.inbox.push_back(EvictionReport{
      .pod = std::move(pod), .answer = std::move(answer), .covering = std::move(covering)});
  controller_.enqueue(cr_name);
}

void OperatorImpl::apply_evictions(const NodeMaintenance& nm, Maintenance& m) {
  std::vector<EvictionReport> reports;
  reports.swap(m.inbox);
  for (EvictionReport& report : reports) {
    const kube::Pod& pod = report.pod;
    PodEviction& eviction = m.evictions[pod.meta.uid];
    eviction.in_flight = false;
    --m.in_flight;
    const log::Logger log = log_for(nm).with({{"pod", pod.meta.namespace_ + "/" + pod.meta.name}});
    if (!report.answer) {
      log.warn("could not send an eviction; retrying",
               {{"error", report.answer.error().describe()}});
      eviction.retry_at = clock_.now() + kTransportRetry;
      m.ledger->set_pending(pod.meta.uid, PendingPodReason::kError,
                            report.answer.error().describe());
      continue;
    }
    const EvictionDecision decision =
        decide_eviction(*report.answer, report.covering, eviction.refusals);
    eviction.refusals = decision.refusals;
    switch (decision.next) {
      case EvictionNext::kGone:
        m.ledger->mark_gone(pod.meta.uid);
        log.info("pod already gone");
        break;
      case EvictionNext::kWaitForDeletion:
        m.ledger->set_pending(pod.meta.uid, decision.reason, decision.message);
        // The pod's deletion reaches the cache a moment later; don't ask twice meanwhile.
        eviction.retry_at = clock_.now() + kAcceptedRecheck;
        log.info("pod evicted");
        break;
      case EvictionNext::kRetry:
        m.ledger->set_pending(pod.meta.uid, decision.reason, decision.message);
        eviction.retry_at = clock_.now() + decision.retry_after;
        log.info("eviction refused; will retry",
                 {{"reason", to_string(decision.reason)},
                  {"message", decision.message},
                  {"retry_after_ms", static_cast<std::int64_t>(decision.retry_after.count())}});
        // A pod waiting for a retry needs a reconcile at its time even without a watch event.
        controller_.enqueue_after(nm.meta.name, decision.retry_after);
        break;
    }
    if (decision.drain_error) {
      m.last_drain_error = decision.api_message;
      event(nm, events::drain_error(decision.api_message),
            runtime::ObjectRef{.api_version = "v1",
                               .kind = "Pod",
                               .namespace_ = pod.meta.namespace_,
                               .name = pod.meta.name,
                               .uid = pod.meta.uid});
    }
  }
}

}  // namespace nmo::op::internal
