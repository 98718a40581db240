#include "operator/node/internal/taint_patch.h"

#include <algorithm>
#include <utility>

#include "kube/api/time.h"

namespace nmo::op::internal {
namespace {

namespace json = boost::json;

json::value taint_json(const kube::Taint& taint) {
  // The API server's form: value and timeAdded are omitted when empty (omitempty), so `test`
  // compares equal to what it stores.
  json::object object;
  object["key"] = taint.key;
  if (!taint.value.empty()) object["value"] = taint.value;
  object["effect"] = taint.effect;
  if (taint.time_added) object["timeAdded"] = kube::format_time(*taint.time_added);
  return object;
}

}  // namespace

json::object patch_op(std::string_view name, std::string path) {
  json::object object;
  object["op"] = name;
  object["path"] = std::move(path);
  return object;
}

json::object patch_op(std::string_view name, std::string path, json::value value) {
  json::object object = patch_op(name, std::move(path));
  object["value"] = std::move(value);
  return object;
}

json::array taints_json(const std::vector<kube::Taint>& taints) {
  json::array array;
  array.reserve(taints.size());
  for (const kube::Taint& taint : taints) array.push_back(taint_json(taint));
  return array;
}

void add_test(const kube::Node& node, json::array& patch) {
  if (!node.taints.empty()) {
    patch.push_back(patch_op("test", "/spec/taints", taints_json(node.taints)));
  } else if (!node.meta.resource_version.empty()) {
    patch.push_back(
        patch_op("test", "/metadata/resourceVersion", json::value(node.meta.resource_version)));
  }
}

void set_taints(const kube::Node& node, const std::vector<kube::Taint>& taints,
                json::array& patch) {
  if (taints == node.taints) return;
  patch.push_back(
      patch_op(node.taints.empty() ? "add" : "replace", "/spec/taints", taints_json(taints)));
}

std::optional<json::array> unless_empty(json::array patch) {
  const bool changes = std::any_of(patch.begin(), patch.end(), [](const json::value& entry) {
    return entry.as_object().at("op").as_string() != "test";
  });
  if (!changes) return std::nullopt;
  return patch;
}

}  // namespace nmo::op::internal
