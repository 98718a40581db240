// MaintenanceRegistry: everything the operator remembers about each NodeMaintenance between
// reconciles, in one place with one forget(). Memory only: everything needed after a restart is
// in the cluster (status, node annotation, Leases).
//
// Keyed by the object's name, the key of the work queue; a memory belongs to one uid, and a new
// object under an old name starts afresh.
//
// Threading: not synchronised; used on the controller's one executor (controller_impl.h).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "operator/api/node_maintenance.h"
#include "operator/controller/events.h"
#include "operator/controller/state_machine.h"
#include "operator/drain/status_coalescer.h"
#include "operator/gates/etcd_quorum.h"

namespace nmo::op::internal {

// What the operator remembers about one NodeMaintenance (one uid) between reconciles.
struct MaintenanceMemory {
  std::string uid;
  // The status as the reconciler wants it, and as last written (or read at first sight). The
  // operator means to be the only writer of the status, so these are fresher than the cache,
  // which lags behind our own writes; `status` runs ahead of `written` while a write is
  // coalesced.
  std::optional<NodeMaintenanceStatus> status;
  std::optional<NodeMaintenanceStatus> written;
  // The resourceVersions the cache may show without news: the one seen before our status writes
  // and those they produced, the newest last (the precondition of the next write). A cached
  // object at any other version was written after them; when its status is not `written`,
  // someone else wrote it (a deposed leader that has not noticed yet, an admin) and `written`
  // is no longer what is on record (see ControllerImpl::current_status()).
  std::vector<std::string> own_versions;
  // The resourceVersion our finalizer was added to: a cache still showing it has not seen the
  // patch yet (a reconcile queued while it was in flight), and the watch will bring it.
  std::string finalizer_added_to;
  // The drain's bookkeeping and the inbox of eviction answers (state_machine.h).
  DrainMemory drain;
  // What the deletion gave back, until the finalizer goes (state_machine.h).
  Removal removal;
  // Set to false when the drain stops (deletion, failure, forget()): eviction coroutines still
  // running then drop their answers.
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  // Events announcing what the next status write records (BeginMaintenance, BlockedBy...,
  // BeginEviction, SucceedMaintenance, FailedMaintenance), sent once it is written: a successor
  // (after a crash or a failover) that finds the status on record does not announce them again.
  // At most once, like the actions themselves.
  std::vector<events::Event> announcements;
  // Between its admission decision and the end of that reconcile (its slot Lease reaches the
  // cache only later): a concurrent admission sees its node as held.
  bool admitting = false;
  // Its drain held a due eviction back for the bound across maintenances: a freed eviction
  // slot wakes it.
  bool waits_for_eviction_slot = false;
  // Another writer's node conditions of our types were logged (once per maintenance).
  bool said_foreign_conditions = false;
};

class MaintenanceRegistry {
 public:
  // `etcd_quorum_stable_for`: the etcd quorum gate's stability window (gates/etcd_quorum.h).
  explicit MaintenanceRegistry(std::chrono::seconds etcd_quorum_stable_for);

  // The memory of `nm`: a fresh one for a new object under an old name (the old object is
  // forgotten first).
  MaintenanceMemory& memory(const NodeMaintenance& nm);
  // The memory of the maintenance `name` with `uid`; null when there is none (forgotten, or
  // replaced by a new object under the name).
  [[nodiscard]] MaintenanceMemory* find(std::string_view name, std::string_view uid);
  // The memory of `nm` without making one; null when there is none.
  [[nodiscard]] const MaintenanceMemory* find(const NodeMaintenance& nm) const;
  // Every memory, by name.
  [[nodiscard]] const std::map<std::string, MaintenanceMemory, std::less<>>& memories() const {
    return memories_;
  }

  // Whether the maintenance `name` is between its admission decision and the end of that
  // reconcile.
  [[nodiscard]] bool admitting(std::string_view name) const;
  // The names of the maintenances waiting for an eviction slot, no longer marked as waiting.
  [[nodiscard]] std::vector<std::string> take_eviction_slot_waiters();

  // The status writes of each maintenance, spaced (drain/status_coalescer.h).
  StatusCoalescer& status_writes() { return status_writes_; }
  // The etcd quorum stability window of each maintenance that waits on the gate.
  QuorumStabilityTracker& quorum() { return quorum_; }

  // Forgets the maintenance `name`, then remembers only that the object `uid` is finalized (our
  // finalizer was removed; the cache may still show it) until forget(name).
  void finalize(std::string_view name, std::string_view uid);
  // Whether our finalizer was removed from this very object.
  [[nodiscard]] bool finalized(const NodeMaintenance& nm) const;

  // Drops everything remembered about the maintenance `name`: its memory (its evictions and
  // migrations in flight drop their answers), its status writes' spacing, its etcd quorum
  // window and its finalized mark.
  void forget(std::string_view name);
  // Whether a memory, a finalized mark or the spacing of status writes is remembered about
  // `name` (the quorum tracker cannot be asked without observing).
  [[nodiscard]] bool remembers(std::string_view name) const;

 private:
  std::map<std::string, MaintenanceMemory, std::less<>> memories_;
  StatusCoalescer status_writes_;
  QuorumStabilityTracker quorum_;
  std::map<std::string, std::string, std::less<>> finalized_;  // name -> uid
};

}  // namespace nmo::op::internal
