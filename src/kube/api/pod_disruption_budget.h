// PodDisruptionBudget: the projection of policy/v1 PodDisruptionBudget used to explain (and
// predict) eviction refusals: which pods it selects and how many disruptions it allows now.
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/int_or_string.h"
#include "kube/api/label_selector.h"
#include "kube/api/labels.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::kube {

// A PodDisruptionBudget as far as the operator cares.
struct PodDisruptionBudget {
  ObjectMeta meta;
  // spec.selector. std::nullopt when absent or null: in policy/v1 such a budget selects no pods,
  // while an empty selector ({}) selects every pod of the namespace.
  std::optional<LabelSelector> selector;
  std::optional<IntOrString> min_available;    // spec.minAvailable, `2` or `"50%"`
  std::optional<IntOrString> max_unavailable;  // spec.maxUnavailable
  // spec.unhealthyPodEvictionPolicy: "IfHealthyBudget", "AlwaysAllow", or "" (the server then
  // applies IfHealthyBudget).
  std::string unhealthy_pod_eviction_policy;
  std::int32_t disruptions_allowed = 0;  // status.disruptionsAllowed
  std::int32_t current_healthy = 0;      // status.currentHealthy
  std::int32_t desired_healthy = 0;      // status.desiredHealthy
  std::int32_t expected_pods = 0;        // status.expectedPods
  std::int64_t observed_generation = 0;  // status.observedGeneration
  // status.disruptedPods: pod name -> when the API server granted its eviction. The eviction
  // handler adds an entry before it deletes the pod; the disruption controller drops it once the
  // pod is deleting or two minutes later, and until then counts the pod as disrupted
  // (docs/design.md §2.4). Nearly always empty.
  std::map<std::string, Time, std::less<>> disrupted_pods;

  // True when an eviction under this budget can be granted now: a disruption is allowed and the
  // status is of the current spec (else the API answers 429 "still being processed").
  [[nodiscard]] bool allows_disruption() const {
    return disruptions_allowed > 0 && observed_generation >= meta.generation;
  }

  // True when this budget covers a pod with `pod_labels` (in the budget's namespace): false
  // without a selector, true for an empty one.
  [[nodiscard]] bool selects(const Labels& pod_labels) const {
    return selector.has_value() && selector->matches(pod_labels);
  }

  friend bool operator==(const PodDisruptionBudget&, const PodDisruptionBudget&) = default;
};

// Decodes a PodDisruptionBudget object. `kind`, when present, must be "PodDisruptionBudget".
// Errors are ErrorCode::kInvalid naming the field, e.g.
// "spec.minAvailable: expected an integer or a string, got bool".
[[nodiscard]] Result<PodDisruptionBudget> decode_pod_disruption_budget(
    const boost::json::value& object);

// policy/v1 poddisruptionbudgets.
template <>
struct ResourceInfo<PodDisruptionBudget> {
  static constexpr std::string_view kGroup = "policy";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "poddisruptionbudgets";
  static constexpr std::string_view kKind = "PodDisruptionBudget";
  static constexpr bool kNamespaced = true;
  // decode_pod_disruption_budget().
  static Result<PodDisruptionBudget> decode(const boost::json::value& object) {
    return decode_pod_disruption_budget(object);
  }
};

}  // namespace nmo::kube
