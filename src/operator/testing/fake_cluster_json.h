// Reading what the controllers wrote into a kube::testing::FakeApiServer, for the unit tests of
// the operator's shells (controller/node_maintenance_controller_test.cc,
// fleet/plan_controller_test.cc): the paths of the objects they touch and JSON-pointer reads that
// give "" for a missing field, so a failed expectation prints a value rather than crashing.
//
// Threading: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "kube/api/node.h"
#include "kube/api/resource.h"
#include "operator/api/node_maintenance.h"

namespace nmo::op::testing {

// An enum of the API as its JSON spells it, "(unset)" for none: readable test failures.
template <typename Enum>
std::string text(const std::optional<Enum>& value) {
  return value ? std::string(to_string(*value)) : std::string("(unset)");
}
template <typename Enum>
std::string text(Enum value) {
  return std::string(to_string(value));
}

inline std::string maintenances_path() { return kube::collection_path<NodeMaintenance>(); }
inline std::string maintenance_path(std::string_view name) {
  return kube::object_path<NodeMaintenance>("", name);
}
inline std::string node_path(std::string_view name) {
  return kube::object_path<kube::Node>("", name);
}

// The value at `pointer` in `object`, or null.
inline const boost::json::value* at(const boost::json::value& object, std::string_view pointer) {
  boost::system::error_code ec;
  return object.find_pointer(pointer, ec);
}

// The string at `pointer` in `object`, "" when absent or not a string.
inline std::string string_at(const boost::json::value& object, std::string_view pointer) {
  const boost::json::value* found = at(object, pointer);
  return found != nullptr && found->is_string() ? std::string(found->as_string()) : std::string();
}

}  // namespace nmo::op::testing
