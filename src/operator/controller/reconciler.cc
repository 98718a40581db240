// The reconcile of one NodeMaintenance (docs/design.md §2): gather the inputs from the caches,
// let the state machine (state_machine.h) decide, execute its actions in order, and decide again
// when it asks to.
#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <utility>

#include "base/check.h"
#include "kube/api/resource.h"
#include "operator/controller/internal/operator_impl.h"
#include "runtime/finalizer.h"

namespace nmo::op::internal {
namespace {

using runtime::ReconcileAction;

// A decision asks to decide again at most once per step that needs an outcome or a fact (the
// gates, the admission, the pods, the node patch, the node lease, the restore); more is a loop.
constexpr int kMaxDecisions = 8;

// A failed `test` of the resourceVersion, or a write that raced another: look again shortly.
bool conflicted(const Error& error) {
  return error.code == ErrorCode::kConflict || error.code == ErrorCode::kInvalid;
}

ReconcileAction after_until(std::optional<Clock::time_point> when, Clock::time_point now) {
  if (!when) return ReconcileAction::done();
  return ReconcileAction::after(
      std::max<Clock::duration>(*when - now, std::chrono::milliseconds(1)));
}

void sooner(std::optional<Clock::time_point>& next, Clock::time_point when) {
  if (!next || when < *next) next = when;
}

// Releases the maintenance's admission mark when the reconcile ends.
struct Admitting {
  Admitting(std::set<std::string>& admitting, std::string cr)
      : names(admitting), name(std::move(cr)) {}
  Admitting(const Admitting&) = delete;
  Admitting& operator=(const Admitting&) = delete;
  ~Admitting() { names.erase(name); }

  std::set<std::string>& names;
  std::string name;
};

}  // namespace

Inputs OperatorImpl::inputs(const NodeMaintenance& nm, NodeMaintenanceStatus status,
                            Outcomes done) {
  Maintenance& m = state(nm);
  Inputs in;
  in.nm = nm;
  in.status = std::move(status);
  in.on_record = m.written ? *m.written : nm.status;
  in.has_finalizer = runtime::has_finalizer(nm.meta, kFinalizer);
  in.finalizer_in_flight = m.finalizer_added_to == nm.meta.resource_version;
  in.finalized = finalized(nm);
  for (const auto& other : maintenances_->by_index(kNodeIndex, nm.spec.node_name)) {
    if (other->meta.uid == nm.meta.uid) continue;
    in.siblings.push_back(Sibling{.name = other->meta.name,
                                  .uid = other->meta.uid,
                                  .created = other->meta.creation_timestamp.value_or(kube::Time{}),
                                  .status = believed_status(*other)});
  }
  in.node_synced = nodes_->has_synced();
  if (auto found = node(nm.spec.node_name)) in.node = *found;
  if (auto found = node_lease(nm.spec.node_name)) in.node_lease = *found;
  in.holds_slot = slot(nm.meta.name) != nullptr;
  in.done = done;
  in.drain = std::move(m.drain);
  in.node_lease_renew_interval = options_.node_lease_renew_interval;
  in.etcd_quorum_stable_for = options_.etcd_quorum_stable_for;
  in.max_parallel_maintenances = options_.max_parallel_maintenances;
  in.evictions_in_flight = options_.evictions_in_flight;
  in.evictions_in_flight_total = options_.evictions_in_flight_total;
  for (const auto& [name, other] : maintenances_state_) {
    if (name != nm.meta.name && *other.alive)
      in.evictions_in_flight_elsewhere += other.drain.in_flight;
  }
  in.node_lease_ref = node_lease_ref(nm.spec.node_name);
  in.now = Now{.tick = clock_.now(), .wall = wall_now()};
  return in;
}

asio::awaitable<Result<ReconcileAction>> OperatorImpl::reconcile(std::string key) {
  if (key == kHousekeepingKey) co_return co_await housekeeping();
  auto cached = maintenances_->get(key);
  if (!cached) {
    forget(key);
    finalized_.erase(key);
    co_return ReconcileAction::done();
  }
  const NodeMaintenance nm = *cached;
  const bool deleting = nm.meta.deletion_timestamp.has_value();
  const bool live = runtime::has_finalizer(nm.meta, kFinalizer) && !(deleting && finalized(nm));
  NodeMaintenanceStatus status = live ? current_status(nm) : nm.status;
  // Until the Running status is believed (or this reconcile ends), other admissions see this
  // node as held: its slot Lease reaches the cache only later.
  const Admitting admitting(admitting_, nm.meta.name);
  Outcomes done;
  std::optional<Clock::time_point> next;
  std::optional<GateFacts> gates;
  std::optional<PodFacts> pods;
  for (int round = 0; round < kMaxDecisions; ++round) {
    Inputs in = inputs(nm, std::move(status), done);
    in.gates = gates ? &*gates : nullptr;
    in.pods = pods ? &*pods : nullptr;
    const int in_flight_before = in.drain.in_flight;
    Decision decision = deleting ? decide_deletion(std::move(in)) : decide(std::move(in));
    const bool freed = decision.drain.in_flight < in_flight_before;
    const bool waits = decision.drain.waits_for_total;
    state(nm).drain = std::move(decision.drain);
    if (freed) wake_eviction_waiters();
    if (waits) eviction_waiters_.insert(nm.meta.name);
    status = std::move(decision.status);
    done = decision.done;
    const bool again =
        !decision.actions.empty() && decision.actions.back().kind == ActionKind::kDecideAgain;
    const Need need = again ? decision.actions.back().need : Need::kNothing;
    if (auto stopped = co_await execute(nm, std::move(decision.actions), done, next)) {
      co_return std::move(*stopped);
    }
    if (!again) {
      // The node's lifecycle conditions follow the status this reconcile ends with
      // (docs/design.md §2.10); a deletion removes them in its restore, before the finalizer.
      if (!deleting) {
        if (auto synced = co_await sync_lifecycle_conditions(nm, status); !synced) {
          if (conflicted(synced.error())) co_return ReconcileAction::after(kConflictRetry);
          co_return synced.error();
        }
      }
      co_return after_until(next, clock_.now());
    }
    if (need == Need::kGates) {
      // The node may have gone meanwhile; deciding again without gates sees that first.
      if (auto n = node(nm.spec.node_name)) gates = gate_facts(nm, status, *n);
    } else if (need == Need::kPods) {
      NMO_CO_TRY_ASSIGN(pods, co_await pod_facts(nm));
      // The lookups above may have let the deletion or a stop in: the drain is over.
      if (!*state(nm).alive) co_return ReconcileAction::done();
    }
  }
  NMO_CHECK(false, "the state machine of " + nm.meta.name + " decided again without end");
  co_return ReconcileAction::done();  // not reached
}

asio::awaitable<std::optional<Result<ReconcileAction>>> OperatorImpl::execute(
    const NodeMaintenance& nm, std::vector<Action> actions, Outcomes& done,
    std::optional<Clock::time_point>& next) {
  using Stop = std::optional<Result<ReconcileAction>>;
  const std::string path = kube::object_path<NodeMaintenance>("", nm.meta.name);
  // Whether the status of the last kWriteStatus is on record (written, or found so).
  bool on_record = false;
  for (auto at = actions.begin(); at != actions.end(); ++at) {
    Action& action = *at;
    switch (action.kind) {
      case ActionKind::kAddFinalizer: {
        auto added =
            co_await runtime::add_finalizer(client_, path, nm.meta, std::string(kFinalizer));
        if (!added) {
          if (conflicted(added.error())) co_return Stop(ReconcileAction::after(kConflictRetry));
          co_return Stop(added.error());
        }
        state(nm).finalizer_added_to = nm.meta.resource_version;
        break;
      }
      case ActionKind::kWriteStatus: {
        auto written = co_await write_status(nm, std::move(action.status));
        if (!written) {
          // The status is believed and goes out with the next write: so do its Events.
          for (auto next_action = std::next(at);
               next_action != actions.end() && next_action->kind == ActionKind::kAnnounce;
               ++next_action) {
            announce(nm, std::move(next_action->event));
          }
          co_return Stop(written.error());
        }
        on_record = !written->has_value();
        if (written->has_value() && action.wake_for_delayed_write) sooner(next, **written);
        break;
      }
      case ActionKind::kBelieve:
        state(nm).status = std::move(action.status);
        break;
      case ActionKind::kAnnounce:
        if (on_record) {
          event(nm, std::move(action.event));
        } else {
          announce(nm, std::move(action.event));
        }
        break;
      case ActionKind::kEvent:
        if (action.on_node) {
          const auto n = node(nm.spec.node_name);
          event(runtime::ObjectRef{.api_version = "v1",
                                   .kind = "Node",
                                   .namespace_ = "",
                                   .name = nm.spec.node_name,
                                   .uid = n != nullptr ? n->meta.uid : std::string()},
                std::move(action.event));
        } else if (action.pod) {
          event(nm, std::move(action.event),
                runtime::ObjectRef{.api_version = "v1",
                                   .kind = "Pod",
                                   .namespace_ = action.pod->meta.namespace_,
                                   .name = action.pod->meta.name,
                                   .uid = action.pod->meta.uid});
        } else {
          event(nm, std::move(action.event));
        }
        break;
      case ActionKind::kCordon: {
        auto patched = co_await apply_node_changes(nm);
        if (!patched) {
          if (conflicted(patched.error())) {
            log_for(nm).info("the node changed while we patched it; trying again",
                             {{"error", patched.error().describe()}});
            co_return Stop(ReconcileAction::after(kConflictRetry));
          }
          co_return Stop(patched.error());
        }
        done.cordoned = *patched;
        break;
      }
      case ActionKind::kRestoreNode: {
        RestoreOutcome restored;
        auto uncordoned = co_await restore_node(nm, &restored.left_cordoned);
        if (!uncordoned) {
          if (action.retry_conflicts && conflicted(uncordoned.error())) {
            co_return Stop(ReconcileAction::after(kConflictRetry));
          }
          co_return Stop(uncordoned.error());
        }
        restored.uncordoned = *uncordoned;
        done.restored = restored;
        break;
      }
      case ActionKind::kTakeSlot:
        admitting_.insert(nm.meta.name);
        if (auto taken = co_await take_slot(nm); !taken) co_return Stop(taken.error());
        break;
      case ActionKind::kTakeNodeLease: {
        auto leased = co_await take_node_lease(nm.spec.node_name);
        if (!leased || !*leased) {
          // A step of the admission that fails gives the slot back (docs/design.md §2.2).
          if (auto released = co_await release_slot(nm.meta.name); !released) {
            log_for(nm).warn("could not give the slot back",
                             {{"error", released.error().describe()}});
          }
          // The missing lease namespace is logged and on /readyz (create_lease_namespace()).
          if (!leased && lease_problem_)
            co_return Stop(ReconcileAction::after(kLeaseNamespaceRetry));
          if (!leased) co_return Stop(leased.error());
          co_return Stop(ReconcileAction::after(kConflictRetry));
        }
        done.admitted = true;
        break;
      }
      case ActionKind::kRenewNodeLease: {
        auto renewed = co_await take_node_lease(nm.spec.node_name);
        if (!renewed) {
          log_for(nm).warn("could not renew the node lease; retrying",
                           {{"error", renewed.error().describe()}});
          done.renewal = LeaseRenewal::kFailed;
        } else {
          done.renewal = *renewed ? LeaseRenewal::kRenewed : LeaseRenewal::kHeldByOther;
        }
        break;
      }
      case ActionKind::kReleaseNodeLease:
        if (auto released = co_await release_node_lease(nm.spec.node_name); !released) {
          co_return Stop(released.error());
        }
        break;
      case ActionKind::kReleaseSlot:
        if (auto released = co_await release_slot(nm.meta.name); !released) {
          co_return Stop(released.error());
        }
        break;
      case ActionKind::kStopEvictions:
        *state(nm).alive = false;
        wake_eviction_waiters();
        break;
      case ActionKind::kResetEvictions: {
        Maintenance& m = state(nm);
        *m.alive = false;
        m.alive = std::make_shared<bool>(true);
        wake_eviction_waiters();
        break;
      }
      case ActionKind::kStartEviction:
        start_eviction(nm, *action.pod);
        break;
      case ActionKind::kCreateMigration:
        start_migration(nm, *action.migration);
        break;
      case ActionKind::kMigrationEnded:
        if (options_.metrics != nullptr) {
          options_.metrics->on_migration(action.succeeded ? "succeeded" : "failed");
        }
        break;
      case ActionKind::kCancelMigrations:
        done.cancelled = co_await cancel_migrations(nm);
        break;
      case ActionKind::kWakeAfter:
        controller_.enqueue_after(nm.meta.name, action.after);
        break;
      case ActionKind::kDrainCompleted:
        if (options_.metrics != nullptr) {
          options_.metrics->on_drain_completed(
              std::chrono::duration_cast<std::chrono::nanoseconds>(action.after));
        }
        break;
      case ActionKind::kForgetQuorum:
        quorum_.forget(nm.meta.name);
        break;
      case ActionKind::kRemoveFinalizer:
        if (auto removed =
                co_await runtime::remove_finalizer(client_, path, nm.meta, std::string(kFinalizer));
            !removed) {
          co_return Stop(removed.error());
        }
        finalized_[nm.meta.name] = nm.meta.uid;
        break;
      case ActionKind::kForget:
        forget(nm.meta.name);
        break;
      case ActionKind::kLog:
        log_note(nm, action.log);
        break;
      case ActionKind::kRequeue:
        sooner(next, action.at);
        break;
      case ActionKind::kDecideAgain:
        break;
    }
  }
  co_return Stop();
}

bool OperatorImpl::finalized(const NodeMaintenance& nm) const {
  const auto found = finalized_.find(nm.meta.name);
  return found != finalized_.end() && found->second == nm.meta.uid;
}

void OperatorImpl::log_note(const NodeMaintenance& nm, const LogNote& note) const {
  const log::Logger log = log_for(nm).with(note.fields);
  switch (note.level) {
    case LogNote::Level::kInfo:
      log.info(note.message);
      break;
    case LogNote::Level::kWarn:
      log.warn(note.message);
      break;
  }
}

}  // namespace nmo::op::internal
