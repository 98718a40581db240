#include "operator/controller/internal/lease_keeper.h"

#include <algorithm>
#include <utility>

#include <boost/json.hpp>

#include "kube/api/namespace.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"

namespace nmo::op::internal {
namespace {

namespace json = boost::json;
using kube::wall_now;

// The kSlotLabel value of a slot that stands for a foreign node-lease holder.
constexpr std::string_view kForeignSlot = "foreign";

}  // namespace

LeaseKeeper::LeaseKeeper(kube::Client& client, const OperatorOptions& options, log::Logger logger,
                         std::shared_ptr<runtime::Store<kube::Lease>> node_leases,
                         std::shared_ptr<runtime::Store<kube::Lease>> slots,
                         std::shared_ptr<runtime::Store<kube::Node>> nodes)
    : client_(client),
      options_(options),
      logger_(std::move(logger)),
      node_leases_(std::move(node_leases)),
      slots_(std::move(slots)),
      nodes_(std::move(nodes)) {}

std::shared_ptr<const kube::Lease> LeaseKeeper::node_lease(const std::string& node) const {
  return node_leases_->get(options_.lease_namespace + "/" + node_lease_name(node));
}

std::shared_ptr<const kube::Lease> LeaseKeeper::slot(const std::string& cr) const {
  return slots_->get(options_.namespace_ + "/" + slot_lease_name(cr));
}

std::string LeaseKeeper::node_lease_ref(const std::string& node) const {
  return options_.lease_namespace + "/" + node_lease_name(node);
}

asio::awaitable<Result<bool>> LeaseKeeper::take_node_lease(std::string node_name) {
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
  const auto n = nodes_->get(node_name);
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
    if (!written && is_not_found(written.error())) {
      NMO_CO_TRY(co_await create_lease_namespace());
      written = co_await client_.create(path, kube::encode_lease(lease), options);
    }
    if (written) problem_.reset();
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

asio::awaitable<Result<void>> LeaseKeeper::release_node_lease(std::string node_name) {
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
  if (removed || is_not_found(removed.error())) co_return Result<void>();
  if (removed.error().code != ErrorCode::kForbidden) co_return removed.error();
  // Upstream's RBAC (its manifests run this operator unchanged) grants no lease delete: free the
  // lease by clearing its holder, times and duration instead (as upstream invalidates one), so
  // the maintenance's deletion still ends.
  if (!said_delete_forbidden_) {
    logger_.warn(
        "deleting node leases is forbidden; releasing them by clearing their holder "
        "instead (grant leases delete in the lease namespace: deploy/rbac)",
        {{"namespace", options_.lease_namespace}, {"error", removed.error().message}});
    said_delete_forbidden_ = true;
  }
  kube::Lease freed = *lease;
  freed.holder_identity.reset();
  freed.lease_duration_seconds.reset();
  freed.acquire_time.reset();
  freed.renew_time.reset();
  json::value body = kube::encode_lease(freed);
  const kube::WriteOptions write;
  auto updated = co_await client_.update(path, std::move(body), write);
  if (!updated && !is_not_found(updated.error())) co_return updated.error();
  co_return Result<void>();
}

asio::awaitable<Result<void>> LeaseKeeper::create_lease_namespace() {
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
    problem_.reset();
    co_return Result<void>();
  }
  const std::string problem =
      "the lease namespace " + name +
      " does not exist, and creating it was refused: " + created.error().describe() +
      " (create it, or allow namespaces create: deploy/rbac)";
  if (problem_ != problem) logger_.error(problem, {{"namespace", name}});
  problem_ = problem;
  co_return Error(created.error().code, problem);
}

asio::awaitable<Result<void>> LeaseKeeper::take_slot(NodeMaintenance nm) {
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

asio::awaitable<Result<void>> LeaseKeeper::release_slot(std::string cr_name) {
  const std::string name = slot_lease_name(cr_name);
  const std::string path = kube::object_path<kube::Lease>(options_.namespace_, name);
  const kube::DeleteOptions options;
  auto removed = co_await client_.remove(path, options);
  if (!removed && !is_not_found(removed.error())) co_return removed.error();
  co_return Result<void>();
}

asio::awaitable<Result<void>> LeaseKeeper::keep_foreign_slots(
    std::map<std::string, std::string> wanted) {
  for (const auto& [name, holder] : wanted) {
    auto existing = slots_->get(options_.namespace_ + "/" + name);
    if (existing && existing->holder_identity == holder) continue;
    kube::Lease foreign;
    foreign.meta.name = name;
    foreign.meta.namespace_ = options_.namespace_;
    foreign.meta.labels.set(std::string(kSlotLabel), std::string(kForeignSlot));
    foreign.holder_identity = holder;
    const kube::WriteOptions options;
    Result<json::value> written;
    if (existing) {
      foreign.meta.resource_version = existing->meta.resource_version;
      const std::string path = kube::object_path<kube::Lease>(options_.namespace_, name);
      written = co_await client_.update(path, kube::encode_lease(foreign), options);
    } else {
      const std::string path = kube::collection_path<kube::Lease>(options_.namespace_);
      written = co_await client_.create(path, kube::encode_lease(foreign), options);
    }
    if (!written && written.error().code != ErrorCode::kAlreadyExists &&
        written.error().code != ErrorCode::kConflict) {
      co_return written.error();
    }
  }
  for (const auto& foreign : slots_->list()) {
    const std::string* kind = foreign->meta.labels.find(kSlotLabel);
    if (kind == nullptr || *kind != kForeignSlot || wanted.contains(foreign->meta.name)) continue;
    kube::DeleteOptions options;
    options.precondition_uid = foreign->meta.uid;
    auto removed = co_await client_.remove(
        kube::object_path<kube::Lease>(options_.namespace_, foreign->meta.name), options);
    if (!removed && !is_not_found(removed.error())) co_return removed.error();
  }
  co_return Result<void>();
}

}  // namespace nmo::op::internal
