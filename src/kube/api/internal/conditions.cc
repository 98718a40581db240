#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>

#include "kube/api/internal/decoders.h"

namespace nmo::kube::internal {

Result<Condition> decode_condition_at(const boost::json::value& value, const FieldPath& path) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return type_error(path, "an object", value);
  }
  Condition condition;
  NMO_TRY_ASSIGN(condition.type, get_string(*object, "type", path));
  NMO_TRY_ASSIGN(const std::string status, get_string(*object, "status", path));
  if (status.empty()) {
    return field_error(path.field("status"), "required");
  }
  Result<ConditionStatus> parsed = parse_condition_status(status);
  if (!parsed.has_value()) {
    return field_error(path.field("status"), parsed.error().message);
  }
  condition.status = *parsed;
  NMO_TRY_ASSIGN(condition.observed_generation,
                 get_int<std::int64_t>(*object, "observedGeneration", path));
  NMO_TRY_ASSIGN(const std::optional<Time> transition,
                 get_optional_time(*object, "lastTransitionTime", path));
  if (!transition.has_value()) {
    return field_error(path.field("lastTransitionTime"), "required");
  }
  condition.last_transition_time = *transition;
  NMO_TRY_ASSIGN(condition.reason, get_string(*object, "reason", path));
  NMO_TRY_ASSIGN(condition.message, get_string(*object, "message", path));
  return condition;
}

Result<std::optional<ConditionEntry>> find_condition_entry(const boost::json::object& status,
                                                           std::string_view type,
                                                           const FieldPath& status_path) {
  NMO_TRY_ASSIGN(const boost::json::array* conditions,
                 get_array(status, "conditions", status_path));
  if (conditions == nullptr) return std::optional<ConditionEntry>();
  const FieldPath conditions_path = status_path.field("conditions");
  for (std::size_t i = 0; i < conditions->size(); ++i) {
    const boost::json::value& entry = (*conditions)[i];
    const boost::json::object* condition = entry.if_object();
    if (condition == nullptr) {
      return type_error(conditions_path.element(i), "an object", entry);
    }
    const boost::json::value* entry_type = find_field(*condition, "type");
    const boost::json::string* type_text = entry_type ? entry_type->if_string() : nullptr;
    if (type_text == nullptr || *type_text != type) continue;
    const FieldPath at = conditions_path.element(i);
    ConditionEntry found;
    NMO_TRY_ASSIGN(found.status, get_string(*condition, "status", at));
    NMO_TRY_ASSIGN(found.reason, get_string(*condition, "reason", at));
    NMO_TRY_ASSIGN(found.message, get_string(*condition, "message", at));
    return std::optional<ConditionEntry>(std::move(found));
  }
  return std::optional<ConditionEntry>();
}

Result<std::string> condition_status(const boost::json::object& status, std::string_view type,
                                     const FieldPath& status_path) {
  NMO_TRY_ASSIGN(std::optional<ConditionEntry> entry,
                 find_condition_entry(status, type, status_path));
  return entry ? std::move(entry->status) : std::string();
}

}  // namespace nmo::kube::internal
