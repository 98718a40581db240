#include "kube/api/condition.h"

#include <array>
#include <chrono>
#include <cstddef>
#include <utility>

#include "base/strings.h"

namespace nmo::kube {
namespace {

constexpr std::array<std::string_view, 3> kConditionStatusNames = {"True", "False", "Unknown"};

}  // namespace

std::string_view to_string(ConditionStatus status) noexcept {
  return kConditionStatusNames[static_cast<std::size_t>(status)];
}

Result<ConditionStatus> parse_condition_status(std::string_view text) {
  for (std::size_t i = 0; i < kConditionStatusNames.size(); ++i) {
    if (kConditionStatusNames[i] == text) return static_cast<ConditionStatus>(i);
  }
  return Error(ErrorCode::kInvalid, "unknown condition status \"" + printable_prefix(text, 64) +
                                        "\" (expected True, False or Unknown)");
}

const Condition* find_condition(const std::vector<Condition>& conditions,
                                std::string_view type) noexcept {
  for (const Condition& condition : conditions) {
    if (condition.type == type) {
      return &condition;
    }
  }
  return nullptr;
}

boost::json::object encode_condition(const Condition& condition) {
  boost::json::object out{
      {"type", condition.type},
      {"status", to_string(condition.status)},
      {"lastTransitionTime", format_time(condition.last_transition_time)},
      {"reason", condition.reason},
      {"message", condition.message},
  };
  if (condition.observed_generation != 0) {
    out["observedGeneration"] = condition.observed_generation;
  }
  return out;
}

bool set_condition(std::vector<Condition>& conditions, Condition condition, Time now) {
  const Time stamp = std::chrono::floor<std::chrono::seconds>(now);
  for (Condition& existing : conditions) {
    if (existing.type != condition.type) {
      continue;
    }
    bool changed = false;
    if (existing.status != condition.status) {
      existing.status = condition.status;
      existing.last_transition_time = stamp;
      changed = true;
    }
    if (existing.reason != condition.reason) {
      existing.reason = std::move(condition.reason);
      changed = true;
    }
    if (existing.message != condition.message) {
      existing.message = std::move(condition.message);
      changed = true;
    }
    if (existing.observed_generation != condition.observed_generation) {
      existing.observed_generation = condition.observed_generation;
      changed = true;
    }
    return changed;
  }
  condition.last_transition_time = stamp;
  conditions.push_back(std::move(condition));
  return true;
}

}  // namespace nmo::kube
