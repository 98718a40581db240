#include "kube/api/node.h"

#include <cstddef>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"

namespace nmo::kube {
namespace {

using internal::FieldPath;

Result<Taint> decode_taint(const boost::json::value& value, const FieldPath& path) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return internal::type_error(path, "an object", value);
  }
  Taint taint;
  NMO_TRY_ASSIGN(taint.key, internal::get_string(*object, "key", path));
  NMO_TRY_ASSIGN(taint.value, internal::get_string(*object, "value", path));
  NMO_TRY_ASSIGN(taint.effect, internal::get_string(*object, "effect", path));
  NMO_TRY_ASSIGN(taint.time_added, internal::get_optional_time(*object, "timeAdded", path));
  return taint;
}

Result<NodeCondition> decode_node_condition(const boost::json::value& value,
                                            const FieldPath& path) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return internal::type_error(path, "an object", value);
  }
  NodeCondition condition;
  NMO_TRY_ASSIGN(condition.type, internal::get_string(*object, "type", path));
  NMO_TRY_ASSIGN(condition.status, internal::get_string(*object, "status", path));
  NMO_TRY_ASSIGN(condition.reason, internal::get_string(*object, "reason", path));
  NMO_TRY_ASSIGN(condition.message, internal::get_string(*object, "message", path));
  NMO_TRY_ASSIGN(condition.last_transition_time,
                 internal::get_optional_time(*object, "lastTransitionTime", path));
  return condition;
}

}  // namespace

const NodeCondition* Node::condition(std::string_view type) const noexcept {
  for (const NodeCondition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

std::string_view Node::ready_status() const noexcept {
  const NodeCondition* ready = condition("Ready");
  return ready == nullptr ? std::string_view() : std::string_view(ready->status);
}

Result<Node> decode_node(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* top, internal::object_of_kind(object, "Node"));
  const FieldPath root;
  Node node;
  NMO_TRY_ASSIGN(node.meta, decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* spec, internal::get_object(*top, "spec", root));
  if (spec != nullptr) {
    const FieldPath spec_path = root.field("spec");
    NMO_TRY_ASSIGN(node.unschedulable, internal::get_bool(*spec, "unschedulable", spec_path));
    NMO_TRY_ASSIGN(const boost::json::array* taints,
                   internal::get_array(*spec, "taints", spec_path));
    if (taints != nullptr) {
      const FieldPath taints_path = spec_path.field("taints");
      node.taints.reserve(taints->size());
      for (std::size_t i = 0; i < taints->size(); ++i) {
        NMO_TRY_ASSIGN(Taint taint, decode_taint((*taints)[i], taints_path.element(i)));
        node.taints.push_back(std::move(taint));
      }
    }
  }
  NMO_TRY_ASSIGN(const boost::json::object* status, internal::get_object(*top, "status", root));
  if (status != nullptr) {
    const FieldPath status_path = root.field("status");
    NMO_TRY_ASSIGN(const boost::json::array* conditions,
                   internal::get_array(*status, "conditions", status_path));
    if (conditions != nullptr) {
      const FieldPath conditions_path = status_path.field("conditions");
      node.conditions.reserve(conditions->size());
      for (std::size_t i = 0; i < conditions->size(); ++i) {
        NMO_TRY_ASSIGN(NodeCondition condition,
                       decode_node_condition((*conditions)[i], conditions_path.element(i)));
        node.conditions.push_back(std::move(condition));
      }
    }
    NMO_TRY_ASSIGN(const boost::json::object* info,
                   internal::get_object(*status, "nodeInfo", status_path));
    if (info != nullptr) {
      NMO_TRY_ASSIGN(node.boot_id,
                     internal::get_string(*info, "bootID", status_path.field("nodeInfo")));
    }
  }
  return node;
}

}  // namespace nmo::kube
