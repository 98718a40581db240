// The reconcile of one NodeMaintenance (docs/design.md §2): first sight -> Pending -> gates ->
// Running -> drain -> Succeeded, the promises kept while the CR exists, and the cleanup on
// deletion.
#include <algorithm>
#include <set>
#include <utility>

#include "kube/api/resource.h"
#include "operator/controller/failure.h"
#include "operator/controller/internal/operator_impl.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"
#include "runtime/finalizer.h"

namespace nmo::op::internal {
namespace {

using runtime::ReconcileAction;

// How often a node lease found held by another holder is checked (and counted) again.
constexpr std::chrono::seconds kLeaseConflictRecheck{5};

bool older_than(const NodeMaintenance& a, const NodeMaintenance& b) {
  const kube::Time ta = a.meta.creation_timestamp.value_or(kube::Time{});
  const kube::Time tb = b.meta.creation_timestamp.value_or(kube::Time{});
  if (ta != tb) return ta < tb;
  return a.meta.name < b.meta.name;
}

}  // namespace

asio::awaitable<Result<ReconcileAction>> OperatorImpl::reconcile(std::string key) {
  if (key == kHousekeepingKey) co_return co_await housekeeping();
  auto cached = maintenances_->get(key);
  if (!cached) {
    forget(key);
    finalized_.erase(key);
    co_return ReconcileAction::done();
  }
  NodeMaintenance nm = *cached;
  if (nm.meta.deletion_timestamp) co_return co_await finalize(std::move(nm));

  if (!runtime::has_finalizer(nm.meta, kFinalizer)) {
    // Added already, and the watch brings the updated object back with the next reconcile.
    if (state(nm).finalizer_added_to == nm.meta.resource_version) co_return ReconcileAction::done();
    const std::string path = kube::object_path<NodeMaintenance>("", nm.meta.name);
    auto added = co_await runtime::add_finalizer(client_, path, nm.meta, std::string(kFinalizer));
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
    announce(nm, events::begin_maintenance(nm.spec.node_name, nm.spec.reason));
    log.info("maintenance requested", {{"reason", nm.spec.reason}});
    // Recorded at once, so a reconcile that returns early below never announces it again.
    NMO_CO_TRY(co_await write_status(nm, status));
  }

  if (std::string invalid = nm.spec.validation_error(); !invalid.empty()) {
    if (status.phase == Phase::kPending) {
      co_return co_await fail(std::move(nm), std::move(status), FailureKind::kInvalid, invalid,
                              false);
    }
  }

  // The controller is the final arbiter between two CRs for one node (docs/design.md §4): the older
  // wins, unless a younger one was already admitted (the cache showed it first): a maintenance that
  // touched the node keeps it. Duplicates never count as winners.
  if (status.phase == Phase::kPending || failure_of(status) == FailureKind::kDuplicate) {
    std::optional<NodeMaintenance> older;
    bool admitted_sibling = false;
    for (const auto& other : maintenances_->by_index(kNodeIndex, nm.spec.node_name)) {
      if (other->meta.uid == nm.meta.uid) continue;
      const NodeMaintenanceStatus& seen = believed_status(*other);
      if (failure_of(seen) == FailureKind::kDuplicate) continue;
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
      co_return co_await fail(std::move(nm), std::move(status), FailureKind::kDuplicate,
                              std::move(message), false);
    }
  }

  if (!node_synced(nm.spec.node_name)) {
    watch_node(nm.spec.node_name);
    co_return ReconcileAction::after(std::chrono::milliseconds(200));
  }
  auto node_now = node(nm.spec.node_name);
  const std::optional<FailureKind> failure = failure_of(status);
  if (!node_now) {
    if (failure == FailureKind::kNodeMissing) co_return ReconcileAction::done();
    const bool touched = status.phase == Phase::kRunning || status.phase == Phase::kSucceeded ||
                         failure == FailureKind::kTimeout;
    log.info("the node does not exist", {{"phase", to_string(*status.phase)}});
    std::string message = node_not_found_message(nm.spec.node_name);
    co_return co_await fail(std::move(nm), std::move(status), FailureKind::kNodeMissing,
                            std::move(message), touched);
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
    m.inbox.clear();
    m.in_flight = 0;
    m.last_drain_error.clear();
  }

  if (const std::optional<FailureKind> now_failed = failure_of(status);
      now_failed && cleanup_finished(*now_failed)) {
    // A failure that undid everything (or never touched anything): nothing more to do.
    NMO_CO_TRY(co_await write_status(nm, status));
    co_return ReconcileAction::done();
  }

  if (status.phase == Phase::kPending) co_return co_await admit(std::move(nm), std::move(status));
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

  // The node: cordoned and tainted, and kept so (docs/design.md §2.3, §2.5).
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
      event(nm, events::node_cordoned(nm.spec.node_name));
    }
    set_condition(status.conditions, condition(kConditionCordoned, true, "Cordoned", ""), now);
    log.info("node cordoned and tainted");
  } else if (*patched) {
    event(nm, events::maintenance_reapplied(nm.spec.node_name));
    log.warn("someone undid the cordon or the taint; applied again");
  }

  // The node lease, renewed on time. Found held by another holder after draining started: one
  // error per check (checks are kLeaseConflictRecheck apart, however many events arrive), and
  // more than kMaxLeaseErrors fail the maintenance (docs/design.md §3.1). API errors are only
  // retried.
  auto lease = node_lease(nm.spec.node_name);
  const bool foreign = lease && lease_holder(*lease) != kNodeLeaseHolder &&
                       classify_node_lease(*lease, now) == NodeLeaseState::kHeldByOther;
  if (foreign && clock_.now() < m.lease_recheck_at) {
    sooner(m.lease_recheck_at);
  } else if (!lease || foreign ||
             should_renew_node_lease(*lease, now, options_.node_lease_renew_interval)) {
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
          co_return co_await fail(std::move(nm), std::move(status), FailureKind::kLeaseLost,
                                  std::move(message), true);
        }
        m.lease_recheck_at = clock_.now() + kLeaseConflictRecheck;
        sooner(m.lease_recheck_at);
      }
    }
  } else {
    const auto until =
        next_node_lease_renewal(*lease, now, options_.node_lease_renew_interval) - now;
    sooner(clock_.now() + std::chrono::duration_cast<Clock::duration>(until));
  }

  // The drain.
  const bool was_running = status.phase == Phase::kRunning;
  NMO_CO_TRY_ASSIGN(const auto drained, co_await drain(nm, status));
  sooner(drained);

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
    announce(nm, events::succeed_maintenance(nm.spec.node_name, status.total_pods));
    log.info("maintenance succeeded", {{"total_pods", status.total_pods}});
  } else if (was_running && nm.spec.drain_timeout) {
    const Condition* cordoned = find_condition(status.conditions, kConditionCordoned);
    const kube::Time since = cordoned != nullptr ? cordoned->last_transition_time : now;
    const auto elapsed = now - since;
    if (elapsed >= *nm.spec.drain_timeout) {
      // The same failure as any other, but the node stays cordoned and tainted and keeps its
      // slot (the safe side), and the maintenance goes on being kept: no return here.
      record_failure(
          nm, status, FailureKind::kTimeout,
          drain_timeout_message(*nm.spec.drain_timeout, status.total_pods - status.eviction_pods),
          false);
    } else {
      sooner(clock_.now() +
             std::chrono::duration_cast<Clock::duration>(*nm.spec.drain_timeout - elapsed));
    }
  }

  NMO_CO_TRY_ASSIGN(const auto written, co_await write_status(nm, status));
  sooner(written);
  co_return after_until(next, clock_.now());
}

asio::awaitable<Result<ReconcileAction>> OperatorImpl::fail(NodeMaintenance nm,
                                                            NodeMaintenanceStatus status,
                                                            FailureKind kind, std::string message,
                                                            bool undo) {
  Maintenance& m = state(nm);
  if (undo) {
    *m.alive = false;
    bool left_cordoned = false;
    NMO_CO_TRY(co_await restore_node(nm, &left_cordoned));
    NMO_CO_TRY(co_await release_node_lease(nm.spec.node_name));
    NMO_CO_TRY(co_await release_slot(nm.meta.name));
    set_condition(status.conditions,
                  condition(kConditionCordoned, false, "Restored", "the maintenance was undone"),
                  wall_now());
  }
  record_failure(nm, status, kind, std::move(message), undo);
  NMO_CO_TRY_ASSIGN(const auto written, co_await write_status(nm, status));
  co_return after_until(written, clock_.now());
}

void OperatorImpl::record_failure(const NodeMaintenance& nm, NodeMaintenanceStatus& status,
                                  FailureKind kind, std::string message, bool undone) {
  if (failure_of(status) == kind && status.last_error == message) return;
  status.phase = Phase::kFailed;
  status.last_error = message;
  set_condition(status.conditions, failure_condition(kind, message), wall_now());
  log_for(nm).warn("maintenance failed",
                   {{"error", message}, {"reason", failure_reason(kind)}, {"undone", undone}});
  announce(nm, events::failed_maintenance(std::move(message)));
}

asio::awaitable<Result<ReconcileAction>> OperatorImpl::finalize(NodeMaintenance nm) {
  const log::Logger log = log_for(nm);
  if (!runtime::has_finalizer(nm.meta, kFinalizer)) co_return ReconcileAction::done();
  // The cache may still show the finalizer we removed a moment ago.
  if (auto done = finalized_.find(nm.meta.name);
      done != finalized_.end() && done->second == nm.meta.uid) {
    co_return ReconcileAction::done();
  }
  NodeMaintenanceStatus status = current_status(nm);
  Maintenance& m = state(nm);
  *m.alive = false;

  bool left_cordoned = false;
  if (!node_synced(nm.spec.node_name)) {
    watch_node(nm.spec.node_name);
    co_return ReconcileAction::after(std::chrono::milliseconds(200));
  }
  if (node(nm.spec.node_name)) {
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
      event(node_ref, events::uncordon_node(nm.spec.node_name, nm.meta.name));
      log.info("node uncordoned");
    }
  }
  // Only a maintenance that was admitted holds the node lease; a duplicate or one that never
  // left Pending must not release the lease of the maintenance that has it.
  const std::optional<FailureKind> failure = failure_of(status);
  const bool admitted = slot(nm.meta.name) != nullptr || status.phase == Phase::kRunning ||
                        status.phase == Phase::kSucceeded || failure == FailureKind::kTimeout;
  auto lease = node_lease(nm.spec.node_name);
  if (admitted && lease && lease_holder(*lease) == kNodeLeaseHolder) {
    NMO_CO_TRY(co_await release_node_lease(nm.spec.node_name));
    event(nm, events::lease_released(node_lease_ref(nm.spec.node_name)));
  }
  NMO_CO_TRY(co_await release_slot(nm.meta.name));
  const std::string path = kube::object_path<NodeMaintenance>("", nm.meta.name);
  NMO_CO_TRY(co_await runtime::remove_finalizer(client_, path, nm.meta, std::string(kFinalizer)));
  event(nm, events::removed_maintenance(nm.spec.node_name, left_cordoned));
  finalized_[nm.meta.name] = nm.meta.uid;
  log.info("maintenance removed");
  forget(nm.meta.name);
  co_return ReconcileAction::done();
}

}  // namespace nmo::op::internal
