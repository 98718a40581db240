// Decoders for sub-structures that several projections share: label selectors, IntOrString and
// status conditions. Each takes the FieldPath of the value so errors name the field from the
// object's root ("spec.selector.matchExpressions[0].operator: ...").
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/result.h"
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

// The `status` string of the entry of `status.conditions` whose `type` is `type` ("True",
// "False", "Unknown"), or "" when there is no such entry. `status` is the object at
// `status_path`.
[[nodiscard]] Result<std::string> condition_status(const boost::json::object& status,
                                                   std::string_view type,
                                                   const FieldPath& status_path);

}  // namespace nmo::kube::internal
