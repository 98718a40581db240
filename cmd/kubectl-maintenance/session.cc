#include "session.h"

#include <algorithm>
#include <tuple>

#include "cli/cluster_reader.h"
#include "cli/exit_code.h"
#include "kube/api/resource.h"

namespace nmo::cli {

std::string maintenance_path(const std::string& name) {
  return name.empty() ? kube::collection_path<op::NodeMaintenance>()
                      : kube::object_path<op::NodeMaintenance>("", name);
}

namespace {

// "/apis/<group>/<version>": served when the kind's CRD is installed.
template <kube::Resource T>
std::string group_version_path() {
  return kube::api_root_path<T>();
}

}  // namespace

asio::awaitable<Outcome<std::optional<boost::json::value>>> Session::get_optional(
    std::string path) {
  ApiClusterReader reader(client_, server_);
  co_return co_await reader.get_optional(std::move(path));
}

asio::awaitable<Outcome<bool>> Session::served(std::string path) {
  ApiClusterReader reader(client_, server_);
  co_return co_await reader.served(std::move(path));
}

asio::awaitable<Outcome<Done>> Session::require_api() {
  const std::string root = group_version_path<op::NodeMaintenance>();
  auto served_now = co_await served(root);
  if (!served_now) co_return served_now.failure();
  if (!*served_now) co_return api_not_installed(op::kKind, op::kCrdName);
  co_return Done{};
}

asio::awaitable<Outcome<std::optional<Session::Maintenance>>> Session::find_maintenance(
    std::string name) {
  std::string path = maintenance_path(name);
  auto got = co_await get_optional(path);
  if (!got) co_return got.failure();
  if (!got->has_value()) {
    // A 404 also comes when the CRD is missing; tell the two apart.
    auto api = co_await require_api();
    if (!api) co_return api.failure();
    co_return std::optional<Maintenance>();
  }
  auto decoded = op::decode_node_maintenance(**got);
  if (!decoded) co_return failure(decoded.error());
  co_return std::optional<Maintenance>(Maintenance{.raw = std::move(**got), .nm = *decoded});
}

asio::awaitable<Outcome<Session::Maintenance>> Session::maintenance(std::string name) {
  auto found = co_await find_maintenance(name);
  if (!found) co_return found.failure();
  if (!found->has_value()) {
    co_return Failure{
        .message = "NodeMaintenance \"" + name + "\" not found",
        .exit_code = describe_api_error(Error(ErrorCode::kNotFound, "", 404), "").exit_code};
  }
  co_return std::move(**found);
}

asio::awaitable<Outcome<Session::Maintenances>> Session::maintenances() {
  std::string path = maintenance_path();
  auto got = co_await get_optional(path);
  if (!got) co_return got.failure();
  if (!got->has_value()) co_return api_not_installed(op::kKind, op::kCrdName);
  Maintenances all{.raw = std::move(**got), .items = {}};
  if (const auto* object = all.raw.if_object()) {
    if (const auto* items = object->if_contains("items"); items && items->is_array()) {
      for (const auto& item : items->get_array()) {
        auto decoded = op::decode_node_maintenance(item);
        if (!decoded) co_return failure(decoded.error());
        all.items.push_back(std::move(*decoded));
      }
    }
  }
  std::sort(all.items.begin(), all.items.end(),
            [](const op::NodeMaintenance& a, const op::NodeMaintenance& b) {
              const kube::Time ta = a.meta.creation_timestamp.value_or(kube::Time{});
              const kube::Time tb = b.meta.creation_timestamp.value_or(kube::Time{});
              return std::tie(ta, a.meta.name) < std::tie(tb, b.meta.name);
            });
  co_return all;
}

asio::awaitable<Outcome<Session::Plan>> Session::maintenance_plan(std::string name) {
  std::string path = kube::object_path<op::MaintenancePlan>("", name);
  auto got = co_await get_optional(path);
  if (!got) co_return got.failure();
  if (!got->has_value()) {
    // A 404 also comes when the MaintenancePlan CRD is missing; tell the two apart.
    const std::string root = group_version_path<op::MaintenancePlan>();
    auto served_now = co_await served(root);
    if (!served_now) co_return served_now.failure();
    if (!*served_now) co_return api_not_installed(op::kPlanKind, op::kPlanCrdName);
    co_return Failure{.message = "MaintenancePlan \"" + name + "\" not found",
                      .exit_code = kExitNotFound};
  }
  auto decoded = op::decode_maintenance_plan(**got);
  if (!decoded) co_return failure(decoded.error());
  co_return Plan{.raw = std::move(**got), .plan = std::move(*decoded)};
}

}  // namespace nmo::cli
