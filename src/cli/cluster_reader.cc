#include "cli/cluster_reader.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "kube/api/resource.h"

// Coroutine arguments are named values: GCC 12 may destroy a temporary passed to a coroutine
// twice.
namespace nmo::cli {

ApiClusterReader::ApiClusterReader(kube::Client& client, std::string server)
    : client_(client), server_(std::move(server)) {}

asio::awaitable<Outcome<std::optional<boost::json::value>>> ApiClusterReader::get_optional(
    std::string path) {
  auto got = co_await client_.get_json(path);
  if (got) co_return std::optional<boost::json::value>(std::move(*got));
  if (is_not_found(got.error()) && got.error().http_status == 404) {
    co_return std::optional<boost::json::value>();
  }
  co_return describe_api_error(got.error(), server_);
}

template <typename T>
asio::awaitable<Outcome<std::optional<T>>> ApiClusterReader::object(
    std::string path, Result<T> (*decode)(const boost::json::value&)) {
  auto got = co_await get_optional(std::move(path));
  if (!got) co_return got.failure();
  if (!got->has_value()) co_return std::optional<T>();
  auto decoded = decode(**got);
  if (!decoded) co_return describe_api_error(decoded.error(), server_);
  co_return std::optional<T>(std::move(*decoded));
}

template <typename T>
asio::awaitable<Outcome<std::vector<T>>> ApiClusterReader::list(std::string ns,
                                                                kube::ListOptions options) {
  auto listed = co_await client_.list_all<T>(ns, options);
  if (!listed) co_return describe_api_error(listed.error(), server_);
  co_return std::move(listed->items);
}

asio::awaitable<Outcome<std::optional<kube::Node>>> ApiClusterReader::node(std::string name) {
  std::string path = kube::object_path<kube::Node>("", name);
  co_return co_await object<kube::Node>(std::move(path), &kube::decode_node);
}

asio::awaitable<Outcome<std::vector<kube::Node>>> ApiClusterReader::nodes_labelled(
    std::string label) {
  kube::ListOptions selected;
  selected.label_selector = std::move(label);
  std::string cluster_wide;
  co_return co_await list<kube::Node>(cluster_wide, std::move(selected));
}

asio::awaitable<Outcome<std::vector<kube::Pod>>> ApiClusterReader::pods_on(std::string node) {
  kube::ListOptions on_node;
  on_node.field_selector = "spec.nodeName=" + node;
  std::string every_namespace;
  co_return co_await list<kube::Pod>(every_namespace, std::move(on_node));
}

asio::awaitable<Outcome<std::vector<kube::Pod>>> ApiClusterReader::pods(
    std::string ns, std::string label_selector) {
  kube::ListOptions selected;
  selected.label_selector = std::move(label_selector);
  co_return co_await list<kube::Pod>(std::move(ns), std::move(selected));
}

asio::awaitable<Outcome<std::optional<kube::DaemonSet>>> ApiClusterReader::daemon_set(
    std::string ns, std::string name) {
  std::string path = kube::object_path<kube::DaemonSet>(ns, name);
  co_return co_await object<kube::DaemonSet>(std::move(path), &kube::decode_daemon_set);
}

asio::awaitable<Outcome<std::vector<kube::PodDisruptionBudget>>> ApiClusterReader::pdbs(
    std::string ns) {
  kube::ListOptions all;
  co_return co_await list<kube::PodDisruptionBudget>(std::move(ns), all);
}

asio::awaitable<Outcome<std::vector<kube::Lease>>> ApiClusterReader::leases(std::string ns) {
  kube::ListOptions all;
  co_return co_await list<kube::Lease>(std::move(ns), all);
}

asio::awaitable<Outcome<std::vector<op::NodeMaintenance>>> ApiClusterReader::maintenances() {
  std::string path = kube::collection_path<op::NodeMaintenance>();
  auto got = co_await get_optional(path);
  if (!got) co_return got.failure();
  if (!got->has_value()) co_return api_not_installed(op::kKind, op::kCrdName);
  std::vector<op::NodeMaintenance> items;
  if (const auto* object = (*got)->if_object()) {
    if (const auto* listed = object->if_contains("items"); listed && listed->is_array()) {
      for (const auto& item : listed->get_array()) {
        auto decoded = op::decode_node_maintenance(item);
        if (!decoded) co_return describe_api_error(decoded.error(), server_);
        items.push_back(std::move(*decoded));
      }
    }
  }
  std::sort(items.begin(), items.end(),
            [](const op::NodeMaintenance& a, const op::NodeMaintenance& b) {
              const kube::Time ta = a.meta.creation_timestamp.value_or(kube::Time{});
              const kube::Time tb = b.meta.creation_timestamp.value_or(kube::Time{});
              return std::tie(ta, a.meta.name) < std::tie(tb, b.meta.name);
            });
  co_return items;
}

asio::awaitable<Outcome<bool>> ApiClusterReader::served(std::string path) {
  auto got = co_await get_optional(std::move(path));
  if (!got) co_return got.failure();
  co_return got->has_value();
}

asio::awaitable<Outcome<std::optional<op::Vmi>>> ApiClusterReader::vmi(std::string ns,
                                                                       std::string name) {
  std::string path = kube::object_path<op::Vmi>(ns, name);
  co_return co_await object<op::Vmi>(std::move(path), &op::decode_vmi);
}

asio::awaitable<Outcome<std::optional<std::string>>>
ApiClusterReader::kubevirt_eviction_strategy() {
  // There is one KubeVirt CR per cluster; its spec.configuration.evictionStrategy is the VMIs'
  // default.
  std::string path = kube::collection_path<op::KubeVirtConfig>();
  auto got = co_await get_optional(path);
  if (!got) co_return got.failure();
  if (!got->has_value()) co_return std::optional<std::string>();
  co_return op::cluster_eviction_strategy(**got);
}

asio::awaitable<Outcome<std::optional<op::NodeMaintenance>>> ApiClusterReader::maintenance(
    std::string name) {
  std::string path = kube::object_path<op::NodeMaintenance>("", name);
  co_return co_await object<op::NodeMaintenance>(std::move(path), &op::decode_node_maintenance);
}

asio::awaitable<Outcome<std::optional<kube::Lease>>> ApiClusterReader::lease(std::string ns,
                                                                             std::string name) {
  std::string path = kube::object_path<kube::Lease>(ns, name);
  co_return co_await object<kube::Lease>(std::move(path), &kube::decode_lease);
}

asio::awaitable<Outcome<std::optional<kube::Pod>>> ApiClusterReader::pod(std::string ns,
                                                                         std::string name) {
  std::string path = kube::object_path<kube::Pod>(ns, name);
  co_return co_await object<kube::Pod>(std::move(path), &kube::decode_pod);
}

asio::awaitable<Outcome<std::vector<EventLine>>> ApiClusterReader::operator_events(
    std::string kind, std::string name) {
  // A NodeMaintenance's Events are selected by name only, as every Event of ours about one
  // names it (older ones without the kind in the selector's index included).
  std::string selector = "involvedObject.name=" + name;
  if (kind != op::kKind) selector = "involvedObject.kind=" + kind + "," + selector;
  std::string path =
      "/api/v1/namespaces/default/events?fieldSelector=" + kube::query_escape(selector);
  auto got = co_await client_.get_json(path);
  if (!got) co_return describe_api_error(got.error(), server_);
  co_return events_from_list(*got, kind);
}

asio::awaitable<std::optional<kube::ServerVersion>> ApiClusterReader::server_version() {
  std::string path(kube::kVersionPath);
  auto got = co_await client_.get_json(path);
  if (!got) co_return std::nullopt;
  auto decoded = kube::decode_server_version(*got);
  if (!decoded) co_return std::nullopt;
  co_return std::move(*decoded);
}

}  // namespace nmo::cli
