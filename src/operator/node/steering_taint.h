// The steering taint (docs/design.md §10, "Steering"): while a MaintenancePlan runs, the nodes it
// takes later carry nodemaintenance.medik8s.io/planned:PreferNoSchedule with an empty value, so
// that kube-scheduler places the pods evicted from the plan's current node elsewhere when it can
// (TaintToleration outweighs the default profile's other scores) and still places them there
// when nothing else fits. The key is ours, in our API group's domain: a taint of that key and
// effect is the operator's, whoever wrote it; no other taint is ever touched.
//
// The value stays empty: taints are unique per key and effect, so one taint serves every plan
// that waits on the node, and a plan's name (up to 253 characters) would not fit in a value (63).
//
// steering_patch() is an RFC 6902 JSON Patch of spec.taints, guarded like the maintenance's
// cordon (node_patch.h): `test /spec/taints` as read, or `test /metadata/resourceVersion` when
// the node has no taints, so a concurrent change (the NodeMaintenance controller's cordon)
// fails it with 422 and nothing is lost.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <optional>
#include <string_view>

#include <boost/json/array.hpp>

#include "kube/api/node.h"

namespace nmo::op {

inline constexpr std::string_view kSteeringTaintKey = "nodemaintenance.medik8s.io/planned";
inline constexpr std::string_view kPreferNoScheduleEffect = "PreferNoSchedule";

// True when the node carries the steering taint (any value).
[[nodiscard]] bool has_steering_taint(const kube::Node& node) noexcept;

// The patch that puts the steering taint on `node` (`wanted`) or takes it off, leaving every
// other taint as it is; std::nullopt when the node already is as wanted.
[[nodiscard]] std::optional<boost::json::array> steering_patch(const kube::Node& node, bool wanted);

}  // namespace nmo::op
