// The pieces of RFC 6902 JSON Patches of a node's taints that node_patch.cc (the maintenance's
// cordon and taints) and steering_taint.cc (the plan's steering taint) share: the guard against
// lost updates and the write of the whole taint list. Both writers guard the same way, so the
// loser of a race fails its `test` (422, Invalid) and retries from a fresh read, and neither
// ever drops the other's taint.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/node.h"

namespace nmo::op::internal {

// One operation {"op": name, "path": path}.
[[nodiscard]] boost::json::object patch_op(std::string_view name, std::string path);
// One operation {"op": name, "path": path, "value": value}.
[[nodiscard]] boost::json::object patch_op(std::string_view name, std::string path,
                                           boost::json::value value);

// The taints as the API server stores them (value and timeAdded omitted when empty), so that a
// `test` of /spec/taints compares equal to what it read.
[[nodiscard]] boost::json::array taints_json(const std::vector<kube::Taint>& taints);

// Appends the guard: `test /spec/taints` as read, or `test /metadata/resourceVersion` when the
// node has no taints (a `test` of a missing member would fail).
void add_test(const kube::Node& node, boost::json::array& patch);

// Appends the write of spec.taints as `taints` (`add` when the node has none, `replace`
// otherwise); nothing when they equal the node's.
void set_taints(const kube::Node& node, const std::vector<kube::Taint>& taints,
                boost::json::array& patch);

// `patch`, or std::nullopt when it does nothing but its `test`.
[[nodiscard]] std::optional<boost::json::array> unless_empty(boost::json::array patch);

}  // namespace nmo::op::internal
