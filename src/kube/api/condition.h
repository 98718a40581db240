// metav1.Condition (apimachinery pkg/apis/meta/v1), the condition type of custom resources'
// statuses, and meta.SetStatusCondition's semantics for keeping a list of them.
//
// Threading: plain values and pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "base/result.h"
#include "kube/api/time.h"

namespace nmo::kube {

// metav1.Condition's status.
enum class ConditionStatus { kTrue, kFalse, kUnknown };

// "True", "False", "Unknown".
[[nodiscard]] std::string_view to_string(ConditionStatus status) noexcept;

// The status named `text` (exact). ErrorCode::kInvalid otherwise.
[[nodiscard]] Result<ConditionStatus> parse_condition_status(std::string_view text);

// One entry of an object's status.conditions: a metav1.Condition.
struct Condition {
  std::string type;  // CamelCase, e.g. "Ready"
  ConditionStatus status = ConditionStatus::kUnknown;
  std::int64_t observed_generation = 0;  // 0 when unset; not written then
  Time last_transition_time{};
  std::string reason;   // CamelCase, must not be empty (CRD schema)
  std::string message;  // may be empty

  friend bool operator==(const Condition&, const Condition&) = default;
};

// The condition of `type`, or nullptr. Valid while `conditions` is alive and unmodified.
[[nodiscard]] const Condition* find_condition(const std::vector<Condition>& conditions,
                                              std::string_view type) noexcept;

// The condition as metav1.Condition's schema expects it (reason and message always written, even
// when empty; observedGeneration only when set).
[[nodiscard]] boost::json::object encode_condition(const Condition& condition);

// Sets `condition` in `conditions`, with metav1 semantics (apimachinery's
// meta.SetStatusCondition): a new type is appended with lastTransitionTime `now`; an existing
// one gets the new status, reason, message and observedGeneration, and its lastTransitionTime
// becomes `now` only when the status changes. condition.last_transition_time is ignored. `now`
// is truncated to whole seconds, the precision metav1.Time keeps on the wire, so a status built
// in memory compares equal to the one read back. Returns whether anything changed.
bool set_condition(std::vector<Condition>& conditions, Condition condition, Time now);

}  // namespace nmo::kube
