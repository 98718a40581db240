#include "operator/fleet/plan_events.h"

#include <array>
#include <cstddef>

#include "operator/api/maintenance_plan.h"

namespace nmo::op::fleet {
namespace {

struct ReasonInfo {
  PlanEventReason reason;
  std::string_view text;
  bool warning;
};

// In the enum's order: the table is indexed by the enumerator.
constexpr std::array kReasons = {
    ReasonInfo{PlanEventReason::kPlanStarted, "PlanStarted", false},
    ReasonInfo{PlanEventReason::kPlanResumed, "PlanResumed", false},
    ReasonInfo{PlanEventReason::kPlanDeleted, "PlanDeleted", false},
    ReasonInfo{PlanEventReason::kPlanSucceeded, "PlanSucceeded", false},
    ReasonInfo{PlanEventReason::kPlanFailed, "PlanFailed", true},
    ReasonInfo{PlanEventReason::kInvalidPlan, "InvalidPlan", true},
    ReasonInfo{PlanEventReason::kWaitingForWindow, "WaitingForWindow", false},
    ReasonInfo{PlanEventReason::kNodeStarted, "NodeStarted", false},
    ReasonInfo{PlanEventReason::kNodeNotStarted, "NodeNotStarted", true},
    ReasonInfo{PlanEventReason::kNameCollision, "NameCollision", true},
    ReasonInfo{PlanEventReason::kNodeDrained, "NodeDrained", false},
    ReasonInfo{PlanEventReason::kNodeWorkDone, "NodeWorkDone", false},
    ReasonInfo{PlanEventReason::kNodeDone, "NodeDone", false},
    ReasonInfo{PlanEventReason::kNodeFailed, kStoppedByNodeFailure, true},
    ReasonInfo{PlanEventReason::kHealthGateTimeout, kStoppedByHealthGate, true},
    ReasonInfo{PlanEventReason::kNodeHeld, "NodeHeld", false},
    ReasonInfo{PlanEventReason::kNodeResumed, "NodeResumed", false},
};

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    if (static_cast<std::size_t>(kReasons[i].reason) != i) return false;
  }
  return true;
}
static_assert(in_enum_order(), "kReasons must list PlanEventReason in declaration order");

const ReasonInfo& info(PlanEventReason reason) noexcept {
  return kReasons[static_cast<std::size_t>(reason)];
}

}  // namespace

std::string_view to_string(PlanEventReason reason) noexcept { return info(reason).text; }

bool is_warning(PlanEventReason reason) noexcept { return info(reason).warning; }

}  // namespace nmo::op::fleet
