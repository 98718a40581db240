// The housekeeping of the leases (docs/design.md §2.2, §3.1): slots kept for foreign node-lease
// holders, and node leases no maintenance holds given back. The Leases themselves are
// LeaseKeeper's (lease_keeper.h).
#include <map>
#include <string>
#include <utility>

#include "operator/controller/internal/controller_impl.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"

namespace nmo::op::internal {

using runtime::ReconcileAction;

asio::awaitable<Result<ReconcileAction>> ControllerImpl::housekeeping() {
  const kube::Time now = wall_now();
  // Slot Leases that show foreign node-lease holders (docs/design.md §2.2).
  std::map<std::string, std::string> wanted;  // slot name -> holder identity
  for (const auto& l : view_.node_leases()) {
    const std::optional<std::string> node_name = view_.lease_node(*l);
    if (!node_name) continue;
    const NodeLeaseState state_now = classify_node_lease(*l, now);
    if (state_now == NodeLeaseState::kHeldByOther) {
      wanted[foreign_slot_lease_name(*node_name)] =
          slot_holder_identity(lease_holder(*l), *node_name);
    } else if (state_now == NodeLeaseState::kOurs &&
               view_.maintenances_with_lease(l->meta.name).empty()) {
      // Ours without a NodeMaintenance behind it (a crash between steps): give it back.
      logger_.info("releasing a node lease no maintenance holds", {{"node", *node_name}});
      NMO_CO_TRY(co_await leases_->release_node_lease(*node_name));
    }
  }
  NMO_CO_TRY(co_await leases_->keep_foreign_slots(std::move(wanted)));
  co_return ReconcileAction::done();
}

}  // namespace nmo::op::internal
