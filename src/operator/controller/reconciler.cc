// The reconcile of one NodeMaintenance (docs/design.md §2): gather the inputs from the caches
// (and the facts that cost a look when the state machine needs them), let the state machine
// (state_machine.h) decide once, and execute its actions in order.
#include <algorithm>
#include <string>
#include <utility>

#include "operator/controller/internal/controller_impl.h"
#include "runtime/finalizer.h"

namespace nmo::op::internal {
namespace {

using runtime::ReconcileAction;

ReconcileAction after_until(std::optional<Clock::time_point> when, Clock::time_point now) {
  if (!when) return ReconcileAction::done();
  return ReconcileAction::after(
      std::max<Clock::duration>(*when - now, std::chrono::milliseconds(1)));
}

// Releases the maintenance's admission mark when the reconcile ends.
struct Admitting {
  Admitting(MaintenanceRegistry& maintenances, const NodeMaintenance& nm)
      : registry(maintenances), name(nm.meta.name), uid(nm.meta.uid) {}
  Admitting(const Admitting&) = delete;
  Admitting& operator=(const Admitting&) = delete;
  ~Admitting() {
    if (MaintenanceMemory* memory = registry.find(name, uid)) memory->admitting = false;
  }

  MaintenanceRegistry& registry;
  std::string name;
  std::string uid;
};

}  // namespace

Inputs ControllerImpl::inputs(const NodeMaintenance& nm, NodeMaintenanceStatus status) {
  MaintenanceMemory& m = registry_.memory(nm);
  Inputs in;
  in.nm = nm;
  in.status = std::move(status);
  in.on_record = m.written ? *m.written : nm.status;
  in.has_finalizer = runtime::has_finalizer(nm.meta, kFinalizer);
  in.finalizer_in_flight = m.finalizer_added_to == nm.meta.resource_version;
  in.finalized = registry_.finalized(nm);
  for (const auto& other : view_.maintenances_of_node(nm.spec.node_name)) {
    if (other->meta.uid == nm.meta.uid) continue;
    in.siblings.push_back(Sibling{.name = other->meta.name,
                                  .uid = other->meta.uid,
                                  .created = other->meta.creation_timestamp.value_or(kube::Time{}),
                                  .status = believed_status(*other)});
  }
  in.node_synced = view_.nodes_synced();
  if (auto found = view_.node(nm.spec.node_name)) in.node = *found;
  if (auto found = leases_->node_lease(nm.spec.node_name)) in.node_lease = *found;
  in.holds_slot = leases_->slot(nm.meta.name) != nullptr;
  in.drain = std::move(m.drain);
  in.removal = m.removal;
  in.node_lease_renew_interval = options_.node_lease_renew_interval;
  in.etcd_quorum_stable_for = options_.etcd_quorum_stable_for;
  in.max_parallel_maintenances = options_.max_parallel_maintenances;
  in.evictions_in_flight = options_.evictions_in_flight;
  in.evictions_in_flight_total = options_.evictions_in_flight_total;
  for (const auto& [name, other] : registry_.memories()) {
    if (name != nm.meta.name && *other.alive)
      in.evictions_in_flight_elsewhere += other.drain.in_flight;
  }
  in.node_lease_ref = leases_->node_lease_ref(nm.spec.node_name);
  in.now = Now{.tick = clock_.now(), .wall = wall_now()};
  return in;
}

asio::awaitable<Result<ReconcileAction>> ControllerImpl::reconcile(std::string key) {
  if (key == kHousekeepingKey) co_return co_await housekeeping();
  auto cached = view_.maintenance(key);
  if (!cached) {
    registry_.forget(key);
    evictions_.wake_waiters();
    co_return ReconcileAction::done();
  }
  const NodeMaintenance nm = *cached;
  const bool deleting = nm.meta.deletion_timestamp.has_value();
  const bool live =
      runtime::has_finalizer(nm.meta, kFinalizer) && !(deleting && registry_.finalized(nm));
  NodeMaintenanceStatus status = live ? current_status(nm) : nm.status;
  // Until the Running status is believed (or this reconcile ends), other admissions see this
  // node as held: its slot Lease reaches the cache only later.
  const Admitting admitting(registry_, nm);
  std::optional<GateFacts> gates;
  std::optional<PodFacts> pods;
  if (!deleting && live) {
    NMO_CO_TRY_ASSIGN(const bool going_on, co_await gather(nm, status, gates, pods));
    if (!going_on) co_return ReconcileAction::done();
  }
  Inputs in = inputs(nm, std::move(status));
  in.gates = gates ? &*gates : nullptr;
  in.pods = pods ? &*pods : nullptr;
  const int in_flight_before = in.drain.in_flight;
  Decision decision = deleting ? decide_deletion(std::move(in)) : decide(std::move(in));
  const bool freed = decision.drain.in_flight < in_flight_before;
  const bool waits = decision.drain.waits_for_total;
  registry_.memory(nm).drain = std::move(decision.drain);
  if (freed) evictions_.wake_waiters();
  if (waits) registry_.memory(nm).waits_for_eviction_slot = true;
  std::optional<Clock::time_point> next;
  if (auto stopped = co_await execute(nm, std::move(decision.actions), next)) {
    co_return std::move(*stopped);
  }
  // The node's lifecycle conditions follow the status this reconcile ends with
  // (docs/design.md §2.10); a deletion removes them in its restore, before the finalizer.
  if (!deleting) {
    if (auto synced = co_await sync_lifecycle_conditions(nm, decision.status); !synced) {
      if (is_write_conflict(synced.error())) co_return ReconcileAction::after(kConflictRetry);
      co_return synced.error();
    }
  }
  co_return after_until(next, clock_.now());
}

asio::awaitable<Result<bool>> ControllerImpl::gather(const NodeMaintenance& nm,
                                                     const NodeMaintenanceStatus& status,
                                                     std::optional<GateFacts>& gates,
                                                     std::optional<PodFacts>& pods) {
  // Without its node the decision fails the maintenance first; it needs neither.
  if (!view_.node(nm.spec.node_name)) co_return true;
  if (needs_gates(status)) gates = gate_facts(nm, status);
  if (!needs_pods(status, gates ? &*gates : nullptr)) co_return true;
  NMO_CO_TRY_ASSIGN(pods, co_await pod_facts(nm));
  // The lookups may have let the deletion or a stop in: the drain is over.
  const MaintenanceMemory* memory = registry_.find(nm);
  co_return memory != nullptr&& * memory->alive;
}

void ControllerImpl::log_note(const NodeMaintenance& nm, const LogNote& note) const {
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
