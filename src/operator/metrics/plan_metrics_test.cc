#include "operator/metrics/plan_metrics.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

MaintenancePlan plan_of(std::string name, PlanPhase phase, std::vector<PlanNodePhase> nodes) {
  MaintenancePlan plan;
  plan.meta.name = std::move(name);
  plan.status.phase = phase;
  for (const PlanNodePhase node : nodes) {
    plan.status.nodes.push_back(
        PlanNodeStatus{.name = "node-" + std::to_string(plan.status.nodes.size()), .phase = node});
  }
  return plan;
}

TEST(MaintenancePlanMetricsTest, EachScrapeShowsThePlansOfThatMoment) {
  runtime::ManagerMetrics manager;
  MaintenancePlanMetrics metrics(manager);
  MaintenancePlan running = plan_of("memory-upgrade", PlanPhase::kRunning,
                                    {PlanNodePhase::kDone, PlanNodePhase::kDone,
                                     PlanNodePhase::kInMaintenance, PlanNodePhase::kWaiting});
  running.status.eta = kube::Time(std::chrono::seconds(1'800'000'000));
  MaintenancePlan waiting =
      plan_of("kernel", PlanPhase::kWaitingForWindow, {PlanNodePhase::kWaiting});
  waiting.status.next_window = kube::Time(std::chrono::seconds(1'800'003'600));
  std::vector<MaintenancePlan> plans{running, waiting};
  metrics.track([&plans] { return plans; });

  std::string text = manager.serialize();
  EXPECT_THAT(text,
              HasSubstr("maintenanceplan_phase{phase=\"Running\",plan=\"memory-upgrade\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("maintenanceplan_phase{phase=\"Paused\",plan=\"memory-upgrade\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("maintenanceplan_nodes{phase=\"Done\",plan=\"memory-upgrade\"} 2\n"));
  EXPECT_THAT(
      text,
      HasSubstr("maintenanceplan_nodes{phase=\"InMaintenance\",plan=\"memory-upgrade\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("maintenanceplan_nodes{phase=\"Failed\",plan=\"memory-upgrade\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr("maintenanceplan_eta_timestamp_seconds{plan=\"memory-upgrade\"} 1800000000\n"));
  EXPECT_THAT(text,
              HasSubstr("maintenanceplan_phase{phase=\"WaitingForWindow\",plan=\"kernel\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("maintenanceplan_next_window_timestamp_seconds{plan=\"kernel\"} "
                              "1800003600\n"));
  EXPECT_THAT(text, Not(HasSubstr("maintenanceplan_eta_timestamp_seconds{plan=\"kernel\"}")));

  // memory-upgrade moved on and kernel was deleted: kernel's series go.
  plans = {plan_of(
      "memory-upgrade", PlanPhase::kSucceeded,
      {PlanNodePhase::kDone, PlanNodePhase::kDone, PlanNodePhase::kDone, PlanNodePhase::kDone})};
  text = manager.serialize();
  EXPECT_THAT(text,
              HasSubstr("maintenanceplan_phase{phase=\"Succeeded\",plan=\"memory-upgrade\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("maintenanceplan_phase{phase=\"Running\",plan=\"memory-upgrade\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("maintenanceplan_nodes{phase=\"Done\",plan=\"memory-upgrade\"} 4\n"));
  EXPECT_THAT(text, Not(HasSubstr("kernel")));
  EXPECT_THAT(text, Not(HasSubstr("maintenanceplan_eta_timestamp_seconds{")));
}

TEST(MaintenancePlanMetricsTest, APlanWithoutStatusHasNoPhaseButCountsItsNodesAsNone) {
  runtime::ManagerMetrics manager;
  MaintenancePlanMetrics metrics(manager);
  MaintenancePlan fresh;
  fresh.meta.name = "fresh";
  metrics.refresh({fresh});
  const std::string text = manager.serialize();
  EXPECT_THAT(text, Not(HasSubstr("maintenanceplan_phase{")));
  EXPECT_THAT(text, HasSubstr("maintenanceplan_nodes{phase=\"Waiting\",plan=\"fresh\"} 0\n"));
}

}  // namespace
}  // namespace nmo::op
