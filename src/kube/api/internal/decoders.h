// Decoders for sub-structures that several projections share: label selectors, IntOrString and
// status conditions. Each takes the FieldPath of the value so errors name the field from the
// object's root ("spec.selector.matchExpressions[0].operator: ...").
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/result.h"
#include "kube/api/condition.h"
#include "kube/api/int_or_string.h"
#include "kube/api/internal/json_fields.h"
#include "kube/api/label_selector.h"

namespace nmo::kube::internal {

// decode_label_selector() for the value at `path`.
[[nodiscard]] Result<LabelSelector> decode_label_selector_at(const boost::json::value& selector,
                                                             const FieldPath& path);

// decode_int_or_string() for the value at `path`.
[[nodiscard]] Result<IntOrString> decode_int_or_string_at(const boost::json::value& value,
                                                          const FieldPath& path);

// Field `key` of `parent` (at `path`) as an IntOrString; std::nullopt when absent or null.
[[nodiscard]] Result<std::optional<IntOrString>> get_optional_int_or_string(
    const boost::json::object& parent, std::string_view key, const FieldPath& path);

// One metav1.Condition at `path`; type, status and lastTransitionTime required.
[[nodiscard]] Result<Condition> decode_condition_at(const boost::json::value& value,
                                                    const FieldPath& path);

// The entry of `status.conditions` whose `type` is `type`, as far as decoders need it.
struct ConditionEntry {
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
};

// That entry of the object `status` at `status_path`; std::nullopt when there is none. An entry
// that is not an object, or whose status, reason or message is not a string, is an error naming
// it.
[[nodiscard]] Result<std::optional<ConditionEntry>> find_condition_entry(
    const boost::json::object& status, std::string_view type, const FieldPath& status_path);

// The `status` string of the entry of `status.conditions` whose `type` is `type` ("True",
// "False", "Unknown"), or "" when there is no such entry. `status` is the object at
// `status_path`.
[[nodiscard]] Result<std::string> condition_status(const boost::json::object& status,
                                                   std::string_view type,
                                                   const FieldPath& status_path);

}  // namespace nmo::kube::internal
