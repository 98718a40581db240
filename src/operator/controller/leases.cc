// The leases of a maintenance (docs/design.md §2.2, §3.1): the medik8s node lease, the budget
// slot Leases, and the housekeeping that keeps slots for foreign node-lease holders and gives back
// node leases no maintenance holds.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include <boost/json.hpp>

#include "kube/api/namespace.h"
#include "kube/api/resource.h"
#include "operator/controller/internal/operator_impl.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"

namespace nmo::op::internal {
namespace {

namespace json = boost::json;
using runtime::ReconcileAction;

constexpr std::string_view kForeignSlot = "foreign";

}  // namespace

asio::awaitable<Result<bool>> OperatorImpl::take_node_lease(std::string node_name) {
  const kube::Time now = wall_now();
  std::optional<kube::Lease> current;
  if (auto cached = node_lease(node_name)) current = *cached;
  const NodeLeaseState state_now = classify_node_lease(current, now);
  if (state_now == NodeLeaseState::kHeldByOther) co_return false;
  const NodeLeaseSpec spec = node_lease_spec(current, now);
  // An update keeps what others put on the Lease (labels, annotations, owners): only the spec
  // is ours to write.
  kube::Lease lease;
  if (current) lease.meta = current->meta;
  lease.meta.name = node_lease_name(node_name);
  lease.meta.namespace_ = options_.lease_namespace;
  const auto n = node(node_name);
  const bool owned =
      std::any_of(lease.meta.owner_references.begin(), lease.meta.owner_references.end(),
                  [&](const kube::OwnerReference& owner) {
                    return owner.kind == "Node" && owner.name == node_name;
                  });
  if (n && !owned) {
    lease.meta.owner_references.push_back(kube::OwnerReference{
        .api_version = "v1", .kind = "Node", .name = node_name, .uid = n->meta.uid});
  }
  lease.holder_identity = spec.holder_identity;
  lease.lease_duration_seconds = spec.lease_duration_seconds;
  lease.acquire_time = spec.acquire_time;
  lease.renew_time = spec.renew_time;
  lease.lease_transitions = spec.lease_transitions;
  const kube::WriteOptions options;
  Result<json::value> written;
  if (!current) {
    const std::string path = kube::collection_path<kube::Lease>(options_.lease_namespace);
    written = co_await client_.create(path, kube::encode_lease(lease), options);
    // 404 on a create: the namespace is missing.
    if (!written && written.error().code == ErrorCode::kNotFound) {
      NMO_CO_TRY(co_await create_lease_namespace());
      written = co_await client_.create(path, kube::encode_lease(lease), options);
    }
    if (written) lease_problem_.reset();
  } else {
    const std::string path =
        kube::object_path<kube::Lease>(options_.lease_namespace, lease.meta.name);
    written = co_await client_.update(path, kube::encode_lease(lease), options);
  }
  if (!written) {
    if (written.error().code == ErrorCode::kConflict ||
        written.error().code == ErrorCode::kAlreadyExists) {
      // Someone wrote the lease meanwhile; the watch brings it and the next round decides.
      co_return Error(ErrorCode::kConflict, "the node lease changed while we wrote it");
    }
    co_return written.error();
  }
  co_return true;
}

asio::awaitable<Result<void>> OperatorImpl::release_node_lease(std::string node_name) {
  const std::string path =
      kube::object_path<kube::Lease>(options_.lease_namespace, node_lease_name(node_name));
  std::shared_ptr<const kube::Lease> lease = node_lease(node_name);
  if (!lease) {
    // Not in the cache: its watch may lag behind our own create (an API server restarting), so
    // the Lease is read afresh rather than taken for absent. A list by name, not a get: the
    // lease Role grants list and watch, as the cache needs, and no get (docs/rbac.md).
    std::string lease_namespace = options_.lease_namespace;
    kube::ListOptions by_name;
    by_name.field_selector = "metadata.name=" + node_lease_name(node_name);
    auto fresh = co_await client_.list<kube::Lease>(lease_namespace, by_name);
    if (!fresh) co_return fresh.error();
    if (fresh->items.empty()) co_return Result<void>();
    lease = std::make_shared<const kube::Lease>(std::move(fresh->items.front()));
  }
  if (lease_holder(*lease) != kNodeLeaseHolder) co_return Result<void>();
  kube::DeleteOptions options;
  options.precondition_uid = lease->meta.uid;
  auto removed = co_await client_.remove(path, options);
  if (removed || removed.error().code == ErrorCode::kNotFound) co_return Result<void>();
  if (removed.error().code != ErrorCode::kForbidden) co_return removed.error();
  // Upstream's RBAC (its manifests run this operator unchanged) grants no lease delete: free the
  // lease by clearing its holder, times and duration instead (as upstream invalidates one), so
  // the maintenance's deletion still ends.
  if (!said_lease_delete_forbidden_) {
    logger_.warn(
        "deleting node leases is forbidden; releasing them by clearing their holder "
        "instead (grant leases delete in the lease namespace: deploy/rbac)",
        {{"namespace", options_.lease_namespace}, {"error", removed.error().message}});
    said_lease_delete_forbidden_ = true;
  }
  kube::Lease freed = *lease;
  freed.holder_identity.reset();
  freed.lease_duration_seconds.reset();
  freed.acquire_time.reset();
  freed.renew_time.reset();
  json::value body = kube::encode_lease(freed);
  const kube::WriteOptions write;
  auto updated = co_await client_.update(path, std::move(body), write);
  if (!updated && updated.error().code != ErrorCode::kNotFound) co_return updated.error();
  co_return Result<void>();
}

asio::awaitable<Result<void>> OperatorImpl::create_lease_namespace() {
  const std::string& name = options_.lease_namespace;
  json::value object = json::object{
      {"apiVersion", "v1"},
      {"kind", "Namespace"},
      {"metadata",
       json::object{{"name", name},
                    {"labels", json::object{{"app.kubernetes.io/part-of", "medik8s"}}}}},
  };
  // Named arguments: GCC 12 and temporaries in co_await (docs/development.md).
  const std::string path = kube::collection_path<kube::Namespace>();
  const kube::WriteOptions options;
  auto created = co_await client_.create(path, std::move(object), options);
  if (created || created.error().code == ErrorCode::kAlreadyExists) {
    if (created) logger_.info("created the lease namespace", {{"namespace", name}});
    lease_problem_.reset();
    co_return Result<void>();
  }
  const std::string problem =
      "the lease namespace " + name +
      " does not exist, and creating it was refused: " + created.error().describe() +
      " (create it, or allow namespaces create: deploy/rbac)";
  if (lease_problem_ != problem) logger_.error(problem, {{"namespace", name}});
  lease_problem_ = problem;
  co_return Error(created.error().code, problem);
}

asio::awaitable<Result<void>> OperatorImpl::take_slot(NodeMaintenance nm) {
  const std::string name = slot_lease_name(nm.meta.name);
  if (slot(nm.meta.name)) co_return Result<void>();
  const kube::Time now = wall_now();
  kube::Lease lease;
  lease.meta.name = name;
  lease.meta.namespace_ = options_.namespace_;
  lease.meta.labels.set(std::string(kSlotLabel), "true");
  lease.meta.owner_references.push_back(
      kube::OwnerReference{.api_version = std::string(kApiVersion),
                           .kind = std::string(kKind),
                           .name = nm.meta.name,
                           .uid = nm.meta.uid});
  lease.holder_identity = slot_holder_identity(nm.meta.name, nm.spec.node_name);
  lease.acquire_time = now;
  lease.renew_time = now;
  const std::string path = kube::collection_path<kube::Lease>(options_.namespace_);
  const kube::WriteOptions options;
  auto created = co_await client_.create(path, kube::encode_lease(lease), options);
  if (!created && created.error().code != ErrorCode::kAlreadyExists) co_return created.error();
  co_return Result<void>();
}

asio::awaitable<Result<void>> OperatorImpl::release_slot(std::string cr_name) {
  const std::string name = slot_lease_name(cr_name);
  const std::string path = kube::object_path<kube::Lease>(options_.namespace_, name);
  const kube::DeleteOptions options;
  auto removed = co_await client_.remove(path, options);
  if (!removed && removed.error().code != ErrorCode::kNotFound) co_return removed.error();
  co_return Result<void>();
}

asio::awaitable<Result<ReconcileAction>> OperatorImpl::housekeeping() {
  const kube::Time now = wall_now();
  // Slot Leases that show foreign node-lease holders (docs/design.md §2.2).
  std::map<std::string, std::string> wanted;  // slot name -> holder identity
  for (const auto& l : node_leases_->list()) {
    const std::optional<std::string> node_name = lease_node(*l);
    if (!node_name) continue;
    const NodeLeaseState state_now = classify_node_lease(*l, now);
    if (state_now == NodeLeaseState::kHeldByOther) {
      wanted[foreign_slot_lease_name(*node_name)] =
          slot_holder_identity(lease_holder(*l), *node_name);
    } else if (state_now == NodeLeaseState::kOurs &&
               maintenances_->by_index(kLeaseIndex, l->meta.name).empty()) {
      // Ours without a NodeMaintenance behind it (a crash between steps): give it back.
      logger_.info("releasing a node lease no maintenance holds", {{"node", *node_name}});
      NMO_CO_TRY(co_await release_node_lease(*node_name));
    }
  }
  for (const auto& [name, holder] : wanted) {
    auto existing = slots_->get(options_.namespace_ + "/" + name);
    if (existing && existing->holder_identity == holder) continue;
    kube::Lease slot;
    slot.meta.name = name;
    slot.meta.namespace_ = options_.namespace_;
    slot.meta.labels.set(std::string(kSlotLabel), std::string(kForeignSlot));
    slot.holder_identity = holder;
    const kube::WriteOptions options;
    Result<json::value> written;
    if (existing) {
      slot.meta.resource_version = existing->meta.resource_version;
      const std::string path = kube::object_path<kube::Lease>(options_.namespace_, name);
      written = co_await client_.update(path, kube::encode_lease(slot), options);
    } else {
      const std::string path = kube::collection_path<kube::Lease>(options_.namespace_);
      written = co_await client_.create(path, kube::encode_lease(slot), options);
    }
    if (!written && written.error().code != ErrorCode::kAlreadyExists &&
        written.error().code != ErrorCode::kConflict) {
      co_return written.error();
    }
  }
  for (const auto& slot : slots_->list()) {
    const std::string* kind = slot->meta.labels.find(kSlotLabel);
    if (kind == nullptr || *kind != kForeignSlot || wanted.contains(slot->meta.name)) continue;
    kube::DeleteOptions options;
    options.precondition_uid = slot->meta.uid;
    auto removed = co_await client_.remove(
        kube::object_path<kube::Lease>(options_.namespace_, slot->meta.name), options);
    if (!removed && removed.error().code != ErrorCode::kNotFound) co_return removed.error();
  }
  co_return ReconcileAction::done();
}

}  // namespace nmo::op::internal
