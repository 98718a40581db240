// The facts behind the gates of a Pending maintenance (docs/design.md §2.2): what the caches
// show, handed to the one gate evaluation the plugin's `plan` also uses
// (operator/gates/admission_gates.h), with this controller's etcd stability window. The state
// machine decides on them.
#include <string>
#include <utility>

#include "operator/controller/internal/controller_impl.h"
#include "operator/gates/admission_gates.h"

namespace nmo::op::internal {

GateWorld ControllerImpl::gate_world(const NodeMaintenance& asking,
                                     const NodeMaintenanceStatus& status) const {
  GateWorld world{.now = wall_now(),
                  .etcd_quorum_check = options_.etcd_quorum_check,
                  .max_parallel = options_.max_parallel_maintenances};
  for (const auto& nm : view_.maintenances()) {
    const bool self = nm->meta.name == asking.meta.name;
    GateMaintenance m = gate_maintenance(*nm, self ? status : believed_status(*nm),
                                         leases_->slot(nm->meta.name) != nullptr,
                                         view_.node(nm->spec.node_name) != nullptr);
    m.admitting = registry_.admitting(nm->meta.name);
    world.maintenances.push_back(std::move(m));
  }
  for (const auto& lease : view_.node_leases()) world.node_leases.push_back(*lease);
  world.etcd = view_.etcd();
  return world;
}

GateFacts ControllerImpl::gate_facts(const NodeMaintenance& nm,
                                     const NodeMaintenanceStatus& status) {
  const GateWorld world = gate_world(nm, status);
  const Clock::time_point now = clock_.now();
  const GateVerdict verdict =
      evaluate_gates(world, nm.meta.name, [&](const GateMaintenance& m, bool safe) {
        return registry_.quorum().observe(m.name, safe, now);
      });
  GateFacts facts{.lease = verdict.lease,
                  .quorum = verdict.quorum_window,
                  .admitted = verdict.admitted,
                  .holds_slot = verdict.holds_slot,
                  .slots_used = verdict.budget.slots_used,
                  .foreign_lease_expiry = verdict.foreign_lease_expiry};
  for (const SlotUse& use : verdict.budget.in_use) {
    facts.slots_in_use +=
        (facts.slots_in_use.empty() ? "" : ", ") + use.holder + " (node " + use.node + ")";
  }
  return facts;
}

}  // namespace nmo::op::internal
