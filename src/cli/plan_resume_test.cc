#include "cli/plan_resume.h"

#include <string>

#include <gtest/gtest.h>

namespace nmo::cli {
namespace {

op::MaintenancePlan stopped_plan() {
  op::MaintenancePlan plan;
  plan.meta.name = "memory-upgrade";
  plan.status.conditions.push_back({.type = std::string(op::kStoppedCondition),
                                    .status = kube::ConditionStatus::kTrue,
                                    .observed_generation = 1,
                                    .last_transition_time = {},
                                    .reason = "NodeFailed",
                                    .message = "node worker-07: drain failed"});
  plan.status.stop_token = "0123456789abcdef";
  return plan;
}

TEST(PlanResumeTest, WritesTheStopsTokenIntoTheResumeAnnotation) {
  const op::MaintenancePlan plan = stopped_plan();
  const Result<std::string> patch = resume_patch(plan);
  ASSERT_TRUE(patch.has_value()) << patch.error().message;
  EXPECT_EQ(
      *patch,
      R"({"metadata":{"annotations":{"nodemaintenance.medik8s.io/resume":"0123456789abcdef"}}})");
  EXPECT_EQ(resume_confirmation(plan),
            "maintenanceplan/memory-upgrade resumed (it stopped: node worker-07: drain failed)\n");
}

TEST(PlanResumeTest, APlanTheOperatorDidNotStopIsRefusedAndSpecPausedIsNamedAsTheUsers) {
  op::MaintenancePlan plan = stopped_plan();
  plan.status.conditions[0].status = kube::ConditionStatus::kFalse;
  EXPECT_EQ(resume_patch(plan).error().message,
            "MaintenancePlan memory-upgrade is not stopped by the operator");
  EXPECT_EQ(resume_patch(plan).error().code, ErrorCode::kConflict);
  plan.spec.paused = true;
  EXPECT_EQ(resume_patch(plan).error().message,
            "MaintenancePlan memory-upgrade is not stopped by the operator; it is paused by its "
            "spec.paused, which is yours: set it to false where the plan is kept (or kubectl "
            R"(patch mp memory-upgrade --type=merge -p '{"spec":{"paused":false}}'))");
}

}  // namespace
}  // namespace nmo::cli
