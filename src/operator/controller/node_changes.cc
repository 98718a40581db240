// The node side of a maintenance (docs/design.md §2.3, §2.5, §2.6): one guarded JSON patch to
// cordon and taint, the same to re-apply after tampering, and the restore on deletion. The patches
// come from operator/node/node_patch.h; a failed `test` (someone changed the node meanwhile) comes
// back as an error and the caller retries from a fresh read.
#include <boost/json.hpp>

#include "kube/api/resource.h"
#include "operator/controller/internal/operator_impl.h"
#include "operator/node/node_patch.h"

namespace nmo::op::internal {

asio::awaitable<Result<bool>> OperatorImpl::apply_node_changes(NodeMaintenance nm) {
  // Every reconcile of a maintenance comes here (once per pod event during a drain), so the
  // cached node decides first: a node in the right shape costs no request. Someone undoing the
  // maintenance shows in the cache and queues this maintenance again.
  if (auto cached = node(nm.spec.node_name);
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

asio::awaitable<Result<bool>> OperatorImpl::restore_node(NodeMaintenance nm, bool* left_cordoned) {
  auto current = co_await client_.get<kube::Node>("", nm.spec.node_name);
  if (!current) {
    if (current.error().code == ErrorCode::kNotFound) co_return false;
    co_return current.error();
  }
  const RestorePlan plan = restore_patch(*current, nm.meta.uid);
  if (left_cordoned != nullptr)
    *left_cordoned = plan.kind != RestoreKind::kNotOurs && plan.left_cordoned;
  if (plan.kind == RestoreKind::kNotOurs || !plan.patch) co_return false;
  const std::string path = kube::object_path<kube::Node>("", nm.spec.node_name);
  const kube::WriteOptions options;
  auto written = co_await client_.patch(path, kube::PatchType::kJsonPatch,
                                        boost::json::serialize(*plan.patch), options);
  if (!written) {
    if (written.error().code == ErrorCode::kNotFound) co_return false;
    co_return written.error();
  }
  log_for(nm).info("node restored",
                   {{"uncordoned", plan.uncordons},
                    {"left_cordoned", plan.left_cordoned},
                    {"adopted_upstream", plan.kind == RestoreKind::kAdoptedUpstream}});
  co_return plan.uncordons;
}

}  // namespace nmo::op::internal
