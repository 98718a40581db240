// The node side of a maintenance (docs/design.md §2.3, §2.5, §2.6, §2.10): one guarded JSON patch
// to cordon and taint, the same to re-apply after tampering, the restore on deletion, and the node
// lifecycle conditions. The patches come from operator/node/node_patch.h and
// lifecycle_conditions.h; a failed `test` or resourceVersion precondition (someone changed the
// node meanwhile) comes back as an error and the caller retries from a fresh read.
#include <boost/json.hpp>

#include "kube/api/resource.h"
#include "operator/controller/internal/controller_impl.h"
#include "operator/node/lifecycle_conditions.h"
#include "operator/node/node_patch.h"

namespace nmo::op::internal {

asio::awaitable<Result<std::optional<kube::Node>>> ControllerImpl::write_lifecycle_conditions(
    const NodeMaintenance& nm, const kube::Node& current, const LifecycleIntent& intent) {
  using Written = std::optional<kube::Node>;
  LifecyclePatch plan = lifecycle_patch(current, intent, wall_now());
  if (!plan.foreign.empty() && !registry_.memory(nm).said_foreign_conditions) {
    // Said once per maintenance: the other writer's conditions stay as long as it wants them.
    std::string types;
    for (const std::string& type : plan.foreign) types += (types.empty() ? "" : ", ") + type;
    log_for(nm).warn("another writer holds node conditions of ours; leaving them",
                     {{"conditions", types}});
    registry_.memory(nm).said_foreign_conditions = true;
  }
  if (!plan.patch) co_return Written();
  const std::string path = kube::object_path<kube::Node>("", nm.spec.node_name) + "/status";
  const kube::WriteOptions options;
  auto written = co_await client_.patch(path, kube::PatchType::kStrategicMerge,
                                        boost::json::serialize(*plan.patch), options);
  if (!written) {
    if (written.error().code != ErrorCode::kForbidden) co_return written.error();
    // Roles without nodes/status patch (upstream medik8s NMO's): the maintenance goes on
    // without the conditions.
    if (!said_node_status_forbidden_) {
      logger_.warn(
          "writing node lifecycle conditions is forbidden; the maintenances go on without them "
          "(grant nodes/status patch: deploy/rbac, or run with --node-lifecycle-conditions=false)",
          {{"error", written.error().message}});
      said_node_status_forbidden_ = true;
    }
    co_return Written();
  }
  NMO_CO_TRY_ASSIGN(kube::Node patched, kube::decode_node(*written));
  co_return Written(std::move(patched));
}

asio::awaitable<Result<void>> ControllerImpl::sync_lifecycle_conditions(
    NodeMaintenance nm, NodeMaintenanceStatus status) {
  const LifecycleIntent intent = lifecycle_intent(
      nm, status, failure_of(status) == FailureKind::kTimeout, options_.node_lifecycle_conditions);
  // The cache decides first: every reconcile comes here, and a node that already says what it
  // should costs no request (our own patch reaches the cache a moment later).
  const auto cached = view_.node(nm.spec.node_name);
  if (cached == nullptr) co_return Result<void>();
  if (!lifecycle_patch(*cached, intent, wall_now()).patch) co_return Result<void>();
  auto current = co_await client_.get<kube::Node>("", nm.spec.node_name);
  if (!current) {
    if (is_not_found(current.error())) co_return Result<void>();
    co_return current.error();
  }
  auto written = co_await write_lifecycle_conditions(nm, *current, intent);
  if (!written && written.error().code == ErrorCode::kConflict) {
    // The node changed since the read (a kubelet's or kwok's status write): that change queues
    // this maintenance again, and its reconcile writes them from a fresh read. Restoring the node
    // (restore_node) says the same but fails: its conditions go before the finalizer.
    log_for(nm).info("the node changed while we wrote its lifecycle conditions");
    co_return Result<void>();
  }
  if (!written) co_return written.error();
  co_return Result<void>();
}

asio::awaitable<Result<bool>> ControllerImpl::apply_node_changes(NodeMaintenance nm) {
  // Every reconcile of a maintenance comes here (once per pod event during a drain), so the
  // cached node decides first: a node in the right shape costs no request. Someone undoing the
  // maintenance shows in the cache and queues this maintenance again.
  if (auto cached = view_.node(nm.spec.node_name);
      cached && !check_maintenance(*cached, nm.meta.uid).needs_patch()) {
    co_return false;
  }
  // A fresh read for the patch: the cache may lag behind our own last patch, and the patch
  // tests the taints it read.
  NMO_CO_TRY_ASSIGN(const kube::Node current,
                    co_await client_.get<kube::Node>("", nm.spec.node_name));
  const MaintenanceDrift drift = check_maintenance(current, nm.meta.uid);
  if (!drift.needs_patch()) co_return false;
  auto patch = maintenance_patch(current, nm.meta.name, nm.meta.uid);
  if (!patch) co_return false;
  const std::string path = kube::object_path<kube::Node>("", nm.spec.node_name);
  const kube::WriteOptions options;
  NMO_CO_TRY(co_await client_.patch(path, kube::PatchType::kJsonPatch,
                                    boost::json::serialize(*patch), options));
  co_return drift.tampered();
}

asio::awaitable<Result<bool>> ControllerImpl::restore_node(NodeMaintenance nm,
                                                           bool* left_cordoned) {
  auto current = co_await client_.get<kube::Node>("", nm.spec.node_name);
  if (!current) {
    if (is_not_found(current.error())) co_return false;
    co_return current.error();
  }
  // Our lifecycle conditions go first, while the prior-state annotation still tells whose they
  // are: a crash between the two writes finds the annotation and comes back here.
  const LifecycleIntent none{.stage = NodeLifecycle::kNotHeld,
                             .cr_name = nm.meta.name,
                             .cr_uid = nm.meta.uid,
                             .reason = nm.spec.reason,
                             .drain_timed_out = false};
  auto cleared = co_await write_lifecycle_conditions(nm, *current, none);
  if (!cleared) {
    if (is_not_found(cleared.error())) co_return false;
    if (cleared.error().code == ErrorCode::kConflict) {
      log_for(nm).info("the node changed while we wrote its lifecycle conditions");
    }
    co_return cleared.error();
  }
  // The restore patch tests what it read: read after our own write.
  if (cleared->has_value()) current = std::move(**cleared);
  const RestorePlan plan = restore_patch(*current, nm.meta.uid);
  if (left_cordoned != nullptr)
    *left_cordoned = plan.kind != RestoreKind::kNotOurs && plan.left_cordoned;
  if (plan.kind == RestoreKind::kNotOurs || !plan.patch) co_return false;
  const std::string path = kube::object_path<kube::Node>("", nm.spec.node_name);
  const kube::WriteOptions options;
  auto written = co_await client_.patch(path, kube::PatchType::kJsonPatch,
                                        boost::json::serialize(*plan.patch), options);
  if (!written) {
    if (is_not_found(written.error())) co_return false;
    co_return written.error();
  }
  log_for(nm).info("node restored",
                   {{"uncordoned", plan.uncordons},
                    {"left_cordoned", plan.left_cordoned},
                    {"adopted_upstream", plan.kind == RestoreKind::kAdoptedUpstream}});
  co_return plan.uncordons;
}

}  // namespace nmo::op::internal
