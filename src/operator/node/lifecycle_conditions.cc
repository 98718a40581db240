#include "operator/node/lifecycle_conditions.h"

#include <array>
#include <chrono>
#include <utility>

#include <boost/json/array.hpp>

#include "operator/api/failure.h"
#include "operator/node/node_patch.h"

namespace nmo::op {
namespace {

// One condition as we want it on the node.
struct Wanted {
  std::string_view status;  // "True" or "False"
  std::string reason;
  std::string message;
};

// Our three types, in table order, with what `intent` wants of each (std::nullopt: absent).
std::array<std::pair<std::string_view, std::optional<Wanted>>, 3> wanted_of(
    const LifecycleIntent& intent) {
  std::array<std::pair<std::string_view, std::optional<Wanted>>, 3> wanted{{
      {kMaintenanceInProgressCondition, std::nullopt},
      {kDrainInProgressCondition, std::nullopt},
      {kDrainedNodeCondition, std::nullopt},
  }};
  if (intent.stage == NodeLifecycle::kNotHeld) return wanted;
  const std::string cr = std::string(kLifecycleReasonPrefix) + " " + intent.cr_name;
  wanted[0].second = Wanted{.status = "True",
                            .reason = std::string(kLifecycleReasonPrefix),
                            .message = intent.reason.empty() ? cr : cr + ": " + intent.reason};
  const std::string prefix(kLifecycleReasonPrefix);
  if (intent.stage == NodeLifecycle::kDraining) {
    wanted[1].second =
        intent.drain_timed_out
            ? Wanted{.status = "True",
                     .reason = prefix + std::string(failure_reason(FailureKind::kTimeout)),
                     .message = cr + " passed its drain timeout; the pods left are still evicted"}
            : Wanted{.status = "True",
                     .reason = prefix + std::string(kReasonDraining),
                     .message = cr + " is evicting the pods that must leave"};
  } else {
    const std::string drained = cr + " drained the node: every pod that must leave is gone";
    const std::string reason = prefix + std::string(kReasonDrained);
    wanted[1].second = Wanted{.status = "False", .reason = reason, .message = drained};
    wanted[2].second = Wanted{.status = "True", .reason = reason, .message = drained};
  }
  return wanted;
}

// Another NodeMaintenance holds the node (its prior-state annotation names it).
bool held_by_other(const kube::Node& node, std::string_view cr_uid) {
  const std::optional<PriorState> prior = prior_state_of(node);
  return prior.has_value() && prior->cr_uid != cr_uid;
}

// The patch entry that makes the node's `existing` condition of `type` what is `wanted` (absent
// when std::nullopt); std::nullopt when it already is. The transition time moves only with the
// status.
std::optional<boost::json::object> condition_entry(std::string_view type,
                                                   const kube::NodeCondition* existing,
                                                   const std::optional<Wanted>& wanted,
                                                   kube::Time now) {
  if (!wanted) {
    if (existing == nullptr) return std::nullopt;
    return boost::json::object{{"type", type}, {"$patch", "delete"}};
  }
  if (existing != nullptr && existing->status == wanted->status &&
      existing->reason == wanted->reason && existing->message == wanted->message) {
    return std::nullopt;
  }
  const std::string stamp = kube::format_time(std::chrono::floor<std::chrono::seconds>(now));
  const bool transition = existing == nullptr || existing->status != wanted->status ||
                          !existing->last_transition_time.has_value();
  return boost::json::object{
      {"type", type},
      {"status", wanted->status},
      {"reason", wanted->reason},
      {"message", wanted->message},
      {"lastHeartbeatTime", stamp},
      {"lastTransitionTime",
       transition ? stamp : kube::format_time(*existing->last_transition_time)}};
}

// A nodes/status strategic-merge patch of these condition entries, guarded by the node's
// resourceVersion.
boost::json::object status_patch(const kube::Node& node, boost::json::array conditions) {
  return boost::json::object{
      {"metadata", {{"resourceVersion", node.meta.resource_version}}},
      {"status", {{"conditions", std::move(conditions)}}},
  };
}

}  // namespace

LifecycleIntent lifecycle_intent(const NodeMaintenance& nm, const NodeMaintenanceStatus& status,
                                 bool drain_timed_out, bool enabled) {
  LifecycleIntent intent{.stage = NodeLifecycle::kNotHeld,
                         .cr_name = nm.meta.name,
                         .cr_uid = nm.meta.uid,
                         .reason = nm.spec.reason,
                         .drain_timed_out = false};
  if (!enabled || nm.meta.deletion_timestamp.has_value() || !status.phase) return intent;
  switch (*status.phase) {
    case Phase::kPending:
      break;
    case Phase::kRunning:
      intent.stage = NodeLifecycle::kDraining;
      break;
    case Phase::kSucceeded:
      intent.stage = NodeLifecycle::kDrained;
      break;
    case Phase::kFailed:
      if (drain_timed_out) {
        intent.stage = NodeLifecycle::kDraining;
        intent.drain_timed_out = true;
      }
      break;
  }
  return intent;
}

bool is_our_lifecycle_condition(const kube::NodeCondition& condition) noexcept {
  if (condition.type == kMaintenancePlannedCondition) {
    return condition.reason.starts_with(kPlannedReason);
  }
  const bool our_type = condition.type == kMaintenanceInProgressCondition ||
                        condition.type == kDrainInProgressCondition ||
                        condition.type == kDrainedNodeCondition;
  return our_type && condition.reason.starts_with(kLifecycleReasonPrefix);
}

std::vector<kube::NodeCondition> well_known_lifecycle_conditions(const kube::Node& node) {
  std::vector<kube::NodeCondition> out;
  for (const std::string_view type : kWellKnownLifecycleConditions) {
    if (const kube::NodeCondition* found = node.condition(type)) out.push_back(*found);
  }
  return out;
}

LifecyclePatch lifecycle_patch(const kube::Node& node, const LifecycleIntent& intent,
                               kube::Time now) {
  LifecyclePatch out;
  if (intent.stage == NodeLifecycle::kNotHeld && held_by_other(node, intent.cr_uid)) return out;
  boost::json::array conditions;
  for (const auto& [type, wanted] : wanted_of(intent)) {
    const kube::NodeCondition* existing = node.condition(type);
    if (existing != nullptr && !is_our_lifecycle_condition(*existing)) {
      if (wanted) out.foreign.emplace_back(type);
      continue;
    }
    if (auto entry = condition_entry(type, existing, wanted, now)) {
      conditions.push_back(std::move(*entry));
    }
  }
  if (conditions.empty()) return out;
  out.patch = status_patch(node, std::move(conditions));
  return out;
}

std::string planned_message(std::string_view plan, std::size_t place, std::size_t total,
                            std::string_view window) {
  std::string message = "plan " + std::string(plan) + ", node " + std::to_string(place) + " of " +
                        std::to_string(total);
  if (!window.empty()) message += ", window " + std::string(window);
  return message;
}

std::optional<boost::json::object> planned_patch(const kube::Node& node, std::string_view plan,
                                                 const std::optional<std::string>& message,
                                                 kube::Time now) {
  const kube::NodeCondition* existing = node.condition(kMaintenancePlannedCondition);
  if (existing != nullptr) {
    const std::string mine = "plan " + std::string(plan) + ", ";
    if (!is_our_lifecycle_condition(*existing) || !existing->message.starts_with(mine)) {
      return std::nullopt;  // another writer's, or another plan's
    }
  }
  std::optional<Wanted> wanted;
  if (message) {
    wanted = Wanted{.status = "True", .reason = std::string(kPlannedReason), .message = *message};
  }
  auto entry = condition_entry(kMaintenancePlannedCondition, existing, wanted, now);
  if (!entry) return std::nullopt;
  return status_patch(node, boost::json::array{std::move(*entry)});
}

}  // namespace nmo::op
