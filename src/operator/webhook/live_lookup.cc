#include "operator/webhook/live_lookup.h"

#include <utility>

#include "kube/api/node.h"
#include "operator/api/node_maintenance.h"

namespace nmo::op::webhook {

asio::awaitable<Result<bool>> LiveClusterLookup::node_exists(std::string node) {
  // The raw object: whether it exists is all that matters, not whether it decodes.
  std::string path = kube::object_path<kube::Node>("", node);
  Result<boost::json::value> found = co_await client_.get_json(std::move(path));
  if (found) co_return true;
  if (found.error().code == ErrorCode::kNotFound) co_return false;
  co_return found.error();
}

asio::awaitable<Result<std::vector<ExistingMaintenance>>> LiveClusterLookup::maintenances_for_node(
    std::string node) {
  kube::ListOptions options;
  options.field_selector = "spec.nodeName=" + node;
  Result<kube::ListPage<NodeMaintenance>> page =
      co_await client_.list_all<NodeMaintenance>("", options);
  if (!page) co_return page.error();
  std::vector<ExistingMaintenance> existing;
  existing.reserve(page->items.size());
  for (const NodeMaintenance& maintenance : page->items) {
    existing.push_back({.name = maintenance.meta.name,
                        .created = maintenance.meta.creation_timestamp,
                        .deleting = maintenance.meta.deletion_timestamp.has_value()});
  }
  co_return existing;
}

}  // namespace nmo::op::webhook
