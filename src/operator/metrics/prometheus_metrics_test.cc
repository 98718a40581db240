#include "operator/metrics/prometheus_metrics.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(NodeMaintenanceMetricsTest, EveryEvictionResultExistsAtZeroFromTheStart) {
  runtime::ManagerMetrics manager;
  NodeMaintenanceMetrics metrics(manager);
  const std::string text = manager.serialize();
  for (const char* result : {"evicted", "not_found", "blocked_by_pdb", "deferred", "throttled",
                             "multiple_pdbs", "namespace_terminating", "error"}) {
    EXPECT_THAT(text, HasSubstr(std::string("nodemaintenance_evictions_total{result=\"") + result +
                                "\"} 0\n"));
  }
}

TEST(NodeMaintenanceMetricsTest, EvictionsAreCountedByAnswer) {
  runtime::ManagerMetrics manager;
  NodeMaintenanceMetrics metrics(manager);
  metrics.on_eviction(kube::EvictionOutcome::kEvicted);
  metrics.on_eviction(kube::EvictionOutcome::kEvicted);
  metrics.on_eviction(kube::EvictionOutcome::kBlockedByPdb);
  metrics.on_eviction(kube::EvictionOutcome::kRefused);
  metrics.on_eviction(std::nullopt);
  const std::string text = manager.serialize();
  EXPECT_THAT(text, HasSubstr("nodemaintenance_evictions_total{result=\"evicted\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_evictions_total{result=\"blocked_by_pdb\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_evictions_total{result=\"error\"} 2\n"));
}

TEST(NodeMaintenanceMetricsTest, LiveMigrationsAreCountedByResultFromZero) {
  runtime::ManagerMetrics manager;
  NodeMaintenanceMetrics metrics(manager);
  EXPECT_THAT(manager.serialize(),
              HasSubstr("nodemaintenance_vm_migrations_total{result=\"failed\"} 0\n"));
  metrics.on_migration("started");
  metrics.on_migration("started");
  metrics.on_migration("failed");
  metrics.on_migration("succeeded");
  const std::string text = manager.serialize();
  EXPECT_THAT(text, HasSubstr("nodemaintenance_vm_migrations_total{result=\"started\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_vm_migrations_total{result=\"failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_vm_migrations_total{result=\"succeeded\"} 1\n"));
}

TEST(NodeMaintenanceMetricsTest, EachScrapeShowsTheMaintenancesOfThatMoment) {
  runtime::ManagerMetrics manager;
  NodeMaintenanceMetrics metrics(manager);
  std::vector<MaintenanceView> views{
      {.name = "nm-a",
       .node = "worker-1",
       .phase = Phase::kRunning,
       .drain_progress = 40,
       .pending_pods = 3,
       .blocked = {"BlockedByPDB"}},
      {.name = "nm-b",
       .node = "worker-2",
       .phase = Phase::kPending,
       .blocked = {"BlockedByNodeHealthCheck"}},
  };
  metrics.track([&views] { return views; }, [] { return 1; });
  std::string text = manager.serialize();
  EXPECT_THAT(text, HasSubstr("nodemaintenance_phase{name=\"nm-a\",node=\"worker-1\","
                              "phase=\"Running\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_phase{name=\"nm-a\",node=\"worker-1\","
                              "phase=\"Pending\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_drain_progress_percent{name=\"nm-a\","
                              "node=\"worker-1\"} 40\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_pending_pods{name=\"nm-a\",node=\"worker-1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_blocked{name=\"nm-a\",node=\"worker-1\","
                              "reason=\"BlockedByPDB\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_blocked{name=\"nm-b\",node=\"worker-2\","
                              "reason=\"BlockedByNodeHealthCheck\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_active_workers{controller=\"nodemaintenance\"} "
                              "1\n"));

  // nm-a finished and nm-b was deleted: its series go, nm-a is no longer blocked.
  views = {{.name = "nm-a", .node = "worker-1", .phase = Phase::kSucceeded, .drain_progress = 100}};
  text = manager.serialize();
  EXPECT_THAT(text, HasSubstr("nodemaintenance_phase{name=\"nm-a\",node=\"worker-1\","
                              "phase=\"Succeeded\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_phase{name=\"nm-a\",node=\"worker-1\","
                              "phase=\"Running\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("nm-b")));
  EXPECT_THAT(text, Not(HasSubstr("reason=\"BlockedByPDB\"")));
}

TEST(NodeMaintenanceMetricsTest, DrainDurationsGoToTheHistogram) {
  runtime::ManagerMetrics manager;
  NodeMaintenanceMetrics metrics(manager);
  metrics.on_drain_completed(std::chrono::seconds(3));
  const std::string text = manager.serialize();
  EXPECT_THAT(text, HasSubstr("nodemaintenance_drain_duration_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_drain_duration_seconds_bucket{le=\"2\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("nodemaintenance_drain_duration_seconds_bucket{le=\"4\"} 1\n"));
}

TEST(NodeMaintenanceMetricsTest, BudgetRetryDelayIsAHistogramInSeconds) {
  runtime::ManagerMetrics manager;
  NodeMaintenanceMetrics metrics(manager);
  metrics.on_budget_retry(std::chrono::milliseconds(3));
  const std::string text = manager.serialize();
  EXPECT_THAT(text, HasSubstr("nodemaintenance_budget_retry_delay_seconds_count 1\n"));
  EXPECT_THAT(text,
              HasSubstr("nodemaintenance_budget_retry_delay_seconds_bucket{le=\"0.002\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("nodemaintenance_budget_retry_delay_seconds_bucket{le=\"0.004\"} 1\n"));
}

}  // namespace
}  // namespace nmo::op
