#include "operator/api/failure.h"

#include <chrono>

#include <gtest/gtest.h>

namespace nmo::op {
namespace {

NodeMaintenanceStatus failed(std::optional<FailureKind> kind, std::string last_error) {
  NodeMaintenanceStatus status;
  status.phase = Phase::kFailed;
  status.last_error = last_error;
  if (kind) status.conditions.push_back(failure_condition(*kind, last_error));
  return status;
}

TEST(FailureTest, TheKindIsReadFromTheReadyReason) {
  for (FailureKind kind :
       {FailureKind::kNodeMissing, FailureKind::kTimeout, FailureKind::kLeaseLost,
        FailureKind::kDuplicate, FailureKind::kInvalid}) {
    // Whatever lastError says: the typed reason decides.
    EXPECT_EQ(failure_of(failed(kind, "node \"n\" not found")), kind) << failure_reason(kind);
  }
  const Condition ready = failure_condition(FailureKind::kTimeout, "m");
  EXPECT_EQ(ready.type, kConditionReady);
  EXPECT_EQ(ready.status, ConditionStatus::kFalse);
  EXPECT_EQ(ready.reason, "DrainTimeout");
  EXPECT_EQ(ready.message, "m");
}

TEST(FailureTest, OnlyAFailedPhaseHasAFailure) {
  NodeMaintenanceStatus status = failed(FailureKind::kInvalid, "bad");
  for (Phase phase : {Phase::kPending, Phase::kRunning, Phase::kSucceeded}) {
    status.phase = phase;
    EXPECT_EQ(failure_of(status), std::nullopt);
  }
  status.phase.reset();
  EXPECT_EQ(failure_of(status), std::nullopt);
}

// Statuses written before the typed reasons (Ready reason "Failed", or no Ready condition).
TEST(FailureTest, OlderStatusesAreReadFromLastError) {
  NodeMaintenanceStatus legacy = failed(std::nullopt, node_not_found_message("w1"));
  EXPECT_EQ(failure_of(legacy), FailureKind::kNodeMissing);
  legacy.conditions.push_back(Condition{.type = std::string(kConditionReady),
                                        .status = ConditionStatus::kFalse,
                                        .reason = "Failed",
                                        .message = ""});
  EXPECT_EQ(failure_of(legacy), FailureKind::kNodeMissing);
  EXPECT_EQ(failure_of(failed(std::nullopt, drain_timeout_message(std::chrono::minutes(90), 2))),
            FailureKind::kTimeout);
  EXPECT_EQ(failure_of(failed(std::nullopt, "maintenance failed: lease could not be extended")),
            FailureKind::kLeaseLost);
  EXPECT_EQ(failure_of(failed(std::nullopt, duplicate_message("w1", "older"))),
            FailureKind::kDuplicate);
  EXPECT_EQ(failure_of(failed(std::nullopt, "nodeName is required")), FailureKind::kInvalid);
}

TEST(FailureTest, MessagesAndCleanup) {
  EXPECT_EQ(node_not_found_message("w1"), "node \"w1\" not found");
  EXPECT_EQ(duplicate_message("w1", "a"),
            "node \"w1\" is already under maintenance by NodeMaintenance \"a\"");
  EXPECT_EQ(drain_timeout_message(std::chrono::minutes(90), 3),
            "drain did not complete within 1h30m0s: 3 pods pending");
  EXPECT_FALSE(cleanup_finished(FailureKind::kTimeout));
  EXPECT_TRUE(cleanup_finished(FailureKind::kNodeMissing));
  EXPECT_TRUE(cleanup_finished(FailureKind::kDuplicate));
}

}  // namespace
}  // namespace nmo::op
