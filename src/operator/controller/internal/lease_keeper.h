// LeaseKeeper: the Leases the maintenances hold (docs/design.md §2.2, §3.1): the medik8s node
// lease of each node under maintenance, the budget slot Lease of each admitted maintenance and
// the slots that stand for foreign node-lease holders; and the lease namespace, created when a
// node lease create finds it missing. It reads the Leases from the shared cache and writes them
// through the API; what to hold when is the state machine's, what housekeeping wants leases.cc's.
//
// Threading: on the controller's one executor (controller_impl.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/log.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/client/client.h"
#include "operator/api/node_maintenance.h"
#include "operator/controller/node_maintenance_controller.h"
#include "runtime/store.h"

namespace nmo::op::internal {

// The label of slot Leases: "true" on a maintenance's, "foreign" on one a foreign node lease
// uses. The slot cache watches only Leases that carry it, so the leader Lease's renewals (every
// two seconds, in the same namespace) wake no waiting maintenance.
inline constexpr std::string_view kSlotLabel = "nodemaintenance.medik8s.io/slot";

class LeaseKeeper {
 public:
  // The stores are the shared cache's: the node leases (options.lease_namespace), the slot
  // Leases (options.namespace_, kSlotLabel) and the nodes. `client` and `options` must outlive
  // the keeper.
  LeaseKeeper(kube::Client& client, const OperatorOptions& options, log::Logger logger,
              std::shared_ptr<runtime::Store<kube::Lease>> node_leases,
              std::shared_ptr<runtime::Store<kube::Lease>> slots,
              std::shared_ptr<runtime::Store<kube::Node>> nodes);

  // The node lease of `node` as cached, or null.
  [[nodiscard]] std::shared_ptr<const kube::Lease> node_lease(const std::string& node) const;
  // The budget slot Lease of the NodeMaintenance named `cr`, or null while it holds none.
  [[nodiscard]] std::shared_ptr<const kube::Lease> slot(const std::string& cr) const;
  // "<lease namespace>/<lease name>" of the node's lease, as Events name it.
  [[nodiscard]] std::string node_lease_ref(const std::string& node) const;
  // Why node leases cannot be taken (the lease namespace is missing and may not be created), or
  // std::nullopt.
  [[nodiscard]] const std::optional<std::string>& problem() const { return problem_; }

  // Takes (or renews) the node lease of `node`; false when another holder has it.
  asio::awaitable<Result<bool>> take_node_lease(std::string node);
  // Deletes our node lease of `node`; where deleting is forbidden (upstream's RBAC has no lease
  // delete), frees it by an update that clears its holder and times, which every medik8s lease
  // user reads as free (docs/design.md §2.2).
  asio::awaitable<Result<void>> release_node_lease(std::string node);
  // The budget slot Lease of `nm`, unless the cache shows it.
  asio::awaitable<Result<void>> take_slot(NodeMaintenance nm);
  asio::awaitable<Result<void>> release_slot(std::string cr_name);
  // Makes the foreign slots those of `wanted` (slot name -> holder identity): writes the ones
  // the cache does not show so, deletes the others.
  asio::awaitable<Result<void>> keep_foreign_slots(std::map<std::string, std::string> wanted);

 private:
  // Creates the lease namespace, which a node lease create found missing (upstream's operator
  // creates it at run time; our manifests at install time). Sets or clears problem_.
  asio::awaitable<Result<void>> create_lease_namespace();

  kube::Client& client_;
  const OperatorOptions& options_;
  const log::Logger logger_;
  std::shared_ptr<runtime::Store<kube::Lease>> node_leases_;
  std::shared_ptr<runtime::Store<kube::Lease>> slots_;
  std::shared_ptr<runtime::Store<kube::Node>> nodes_;
  std::optional<std::string> problem_;
  bool said_delete_forbidden_ = false;
};

}  // namespace nmo::op::internal
