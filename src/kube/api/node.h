// Node: the projection of core/v1 Node that cordoning and the quorum gates need:
// spec.unschedulable, the taints, the conditions (the Ready one in short), and the boot ID a fleet
// plan watches change.
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::kube {

// One entry of spec.taints.
struct Taint {
  std::string key;
  std::string value;
  std::string effect;              // NoSchedule, PreferNoSchedule or NoExecute
  std::optional<Time> time_added;  // set by the API server for NoExecute taints

  friend bool operator==(const Taint&, const Taint&) = default;
};

// One entry of status.conditions (core/v1 NodeCondition), without lastHeartbeatTime: it changes
// on every heartbeat of the kubelet and nobody here reads it.
struct NodeCondition {
  std::string type;
  std::string status;  // "True", "False", "Unknown" (as written; not validated)
  std::string reason;
  std::string message;
  std::optional<Time> last_transition_time;

  friend bool operator==(const NodeCondition&, const NodeCondition&) = default;
};

// A Node as far as the operator cares.
struct Node {
  ObjectMeta meta;
  bool unschedulable = false;  // spec.unschedulable: cordoned
  std::vector<Taint> taints;
  // status.conditions in the API's order.
  std::vector<NodeCondition> conditions;
  // status.nodeInfo.bootID: changes when the machine reboots; "" when not reported.
  std::string boot_id;

  // The condition of this type, or null.
  [[nodiscard]] const NodeCondition* condition(std::string_view type) const noexcept;
  // Status of the Ready condition: "True", "False", "Unknown", or "" when the condition is absent
  // (a node whose kubelet never reported).
  [[nodiscard]] std::string_view ready_status() const noexcept;
  // True when the Ready condition is "True".
  [[nodiscard]] bool is_ready() const noexcept { return ready_status() == "True"; }

  friend bool operator==(const Node&, const Node&) = default;
};

// Decodes a Node object. `kind`, when present, must be "Node". Errors are ErrorCode::kInvalid
// naming the field, e.g. "spec.taints[0].timeAdded: invalid RFC 3339 time ...".
[[nodiscard]] Result<Node> decode_node(const boost::json::value& object);

// core/v1 nodes (cluster-scoped).
template <>
struct ResourceInfo<Node> {
  static constexpr std::string_view kGroup = "";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "nodes";
  static constexpr std::string_view kKind = "Node";
  static constexpr bool kNamespaced = false;
  // decode_node().
  static Result<Node> decode(const boost::json::value& object) { return decode_node(object); }
};

}  // namespace nmo::kube
