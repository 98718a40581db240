#include "operator/controller/internal/maintenance_registry.h"

#include <utility>

namespace nmo::op::internal {

MaintenanceRegistry::MaintenanceRegistry(std::chrono::seconds etcd_quorum_stable_for)
    : quorum_(etcd_quorum_stable_for) {}

MaintenanceMemory& MaintenanceRegistry::memory(const NodeMaintenance& nm) {
  if (auto found = memories_.find(nm.meta.name); found != memories_.end()) {
    if (found->second.uid == nm.meta.uid) return found->second;
    // A new object under an old name starts afresh in everything keyed by the name too: its
    // quorum window starts anew rather than inheriting the old object's.
    forget(nm.meta.name);
  }
  MaintenanceMemory& fresh = memories_[nm.meta.name];
  fresh.uid = nm.meta.uid;
  return fresh;
}

MaintenanceMemory* MaintenanceRegistry::find(std::string_view name, std::string_view uid) {
  const auto found = memories_.find(name);
  if (found == memories_.end() || found->second.uid != uid) return nullptr;
  return &found->second;
}

const MaintenanceMemory* MaintenanceRegistry::find(const NodeMaintenance& nm) const {
  const auto found = memories_.find(nm.meta.name);
  if (found == memories_.end() || found->second.uid != nm.meta.uid) return nullptr;
  return &found->second;
}

bool MaintenanceRegistry::admitting(std::string_view name) const {
  const auto found = memories_.find(name);
  return found != memories_.end() && found->second.admitting;
}

std::vector<std::string> MaintenanceRegistry::take_eviction_slot_waiters() {
  std::vector<std::string> waiters;
  for (auto& [name, memory] : memories_) {
    if (!memory.waits_for_eviction_slot) continue;
    memory.waits_for_eviction_slot = false;
    waiters.push_back(name);
  }
  return waiters;
}

void MaintenanceRegistry::finalize(std::string_view name, std::string_view uid) {
  forget(name);
  finalized_.emplace(std::string(name), std::string(uid));
}

bool MaintenanceRegistry::finalized(const NodeMaintenance& nm) const {
  const auto found = finalized_.find(nm.meta.name);
  return found != finalized_.end() && found->second == nm.meta.uid;
}

void MaintenanceRegistry::forget(std::string_view name) {
  if (auto found = memories_.find(name); found != memories_.end()) {
    *found->second.alive = false;
    memories_.erase(found);
  }
  if (auto found = finalized_.find(name); found != finalized_.end()) finalized_.erase(found);
  status_writes_.forget(name);
  quorum_.forget(name);
}

bool MaintenanceRegistry::remembers(std::string_view name) const {
  return memories_.contains(name) || finalized_.contains(name) ||
         status_writes_.last_write(name).has_value();
}

}  // namespace nmo::op::internal
