#include "operator/api/failure.h"

#include <utility>

namespace nmo::op {
namespace {

// lastError prefixes of the failures before typed reasons; see failure_of().
constexpr std::string_view kTimeoutPrefix = "drain did not complete within";
constexpr std::string_view kLeaseLostPrefix = "maintenance failed: lease";
constexpr std::string_view kDuplicateInfix = "is already under maintenance by";

FailureKind from_last_error(const std::string& error) {
  if (error.starts_with("node \"") && error.ends_with("\" not found")) {
    return FailureKind::kNodeMissing;
  }
  if (error.starts_with(kTimeoutPrefix)) return FailureKind::kTimeout;
  if (error.starts_with(kLeaseLostPrefix)) return FailureKind::kLeaseLost;
  if (error.find(kDuplicateInfix) != std::string::npos) return FailureKind::kDuplicate;
  return FailureKind::kInvalid;
}

}  // namespace

std::string_view failure_reason(FailureKind kind) noexcept {
  switch (kind) {
    case FailureKind::kNodeMissing:
      return "NodeNotFound";
    case FailureKind::kTimeout:
      return "DrainTimeout";
    case FailureKind::kLeaseLost:
      return "NodeLeaseLost";
    case FailureKind::kDuplicate:
      return "DuplicateMaintenance";
    case FailureKind::kInvalid:
      return "InvalidSpec";
  }
  return "InvalidSpec";
}

std::optional<FailureKind> failure_of(const NodeMaintenanceStatus& status) {
  if (status.phase != Phase::kFailed) return std::nullopt;
  if (const Condition* ready = find_condition(status.conditions, kConditionReady);
      ready != nullptr && ready->status == ConditionStatus::kFalse) {
    for (FailureKind kind :
         {FailureKind::kNodeMissing, FailureKind::kTimeout, FailureKind::kLeaseLost,
          FailureKind::kDuplicate, FailureKind::kInvalid}) {
      if (ready->reason == failure_reason(kind)) return kind;
    }
  }
  return from_last_error(status.last_error);
}

bool cleanup_finished(FailureKind kind) noexcept { return kind != FailureKind::kTimeout; }

Condition failure_condition(FailureKind kind, std::string message) {
  return Condition{.type = std::string(kConditionReady),
                   .status = ConditionStatus::kFalse,
                   .reason = std::string(failure_reason(kind)),
                   .message = std::move(message)};
}

std::string node_not_found_message(std::string_view node) {
  return "node \"" + std::string(node) + "\" not found";
}

std::string duplicate_message(std::string_view node, std::string_view older) {
  return "node \"" + std::string(node) + "\" " + std::string(kDuplicateInfix) +
         " NodeMaintenance \"" + std::string(older) + "\"";
}

std::string drain_timeout_message(Duration timeout, std::int64_t pending) {
  return std::string(kTimeoutPrefix) + " " + format_duration(timeout) + ": " +
         std::to_string(pending) + " pods pending";
}

}  // namespace nmo::op
