#include "runtime/metrics.h"

#include <chrono>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ManagerMetricsTest, EveryReconcileResultExistsAtZeroFromTheStart) {
  ManagerMetrics metrics;
  auto hooks = metrics.controller("nodemaintenance", 4);
  const std::string text = metrics.serialize();
  for (const char* result : {"success", "error", "requeue", "requeue_after"}) {
    EXPECT_THAT(text, HasSubstr(std::string("controller_runtime_reconcile_total{controller=\""
                                            "nodemaintenance\",result=\"") +
                                result + "\"} 0\n"));
  }
  EXPECT_THAT(text, HasSubstr("# TYPE controller_runtime_reconcile_total counter\n"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_max_concurrent_reconciles{controller=\""
                              "nodemaintenance\"} 4\n"));
}

TEST(ManagerMetricsTest, ReconcilesAreCountedByResultWithErrorsAndTimes) {
  ManagerMetrics metrics;
  auto hooks = metrics.controller("nm", 1);
  hooks->on_reconcile("success", std::chrono::milliseconds(3));
  hooks->on_reconcile("error", std::chrono::milliseconds(20));
  hooks->on_reconcile("error", std::chrono::seconds(2));
  const std::string text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_total{controller=\"nm\","
                              "result=\"success\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_total{controller=\"nm\","
                              "result=\"error\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_errors_total{controller=\"nm\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_time_seconds_count{controller=\"nm\"} "
                              "3\n"));
  // 3 ms falls in the first bucket (5 ms); 2 s does not fall in the 1.28 s one.
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_time_seconds_bucket{controller=\"nm\","
                              "le=\"0.005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("controller_runtime_reconcile_time_seconds_bucket{controller=\"nm\","
                              "le=\"1.28\"} 2\n"));
}

TEST(ManagerMetricsTest, WorkQueueDepthFollowsAddsAndGets) {
  ManagerMetrics metrics;
  auto queue = metrics.work_queue("nm");
  queue->on_add("a");
  queue->on_add("b");
  queue->on_get("a", std::chrono::milliseconds(1));
  queue->on_done("a", std::chrono::milliseconds(2));
  queue->on_retry("a");
  const std::string text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("workqueue_depth{controller=\"nm\",name=\"nm\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_adds_total{controller=\"nm\",name=\"nm\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_retries_total{controller=\"nm\",name=\"nm\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_work_duration_seconds_count{controller=\"nm\","
                              "name=\"nm\"} 1\n"));
}

TEST(ManagerMetricsTest, RequestsAreCountedPerCodeMethodAndHost) {
  ManagerMetrics metrics;
  metrics.observe_request("127.0.0.1:6443", "GET", "200");
  metrics.observe_request("127.0.0.1:6443", "GET", "200");
  metrics.observe_request("127.0.0.1:6443", "POST", "<error>");
  const std::string text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("rest_client_requests_total{code=\"200\",host=\"127.0.0.1:6443\","
                              "method=\"GET\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("rest_client_requests_total{code=\"<error>\",host=\"127.0.0.1:6443\","
                              "method=\"POST\"} 1\n"));
}

TEST(ManagerMetricsTest, LeaderStatusAndSampledGaugesAreCurrentAtEachScrape) {
  ManagerMetrics metrics;
  int busy = 2;
  auto hooks = metrics.controller("nm", 4);
  metrics.sample_active_workers("nm", [&busy] { return busy; });
  metrics.set_leader("lease", true);
  EXPECT_THAT(metrics.serialize(),
              HasSubstr("controller_runtime_active_workers{controller=\"nm\"} 2\n"));
  busy = 0;
  metrics.set_leader("lease", false);
  const std::string text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("controller_runtime_active_workers{controller=\"nm\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("leader_election_master_status{name=\"lease\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("leader_election_master_status{name=\"lease\"} 1")));
}

TEST(ManagerMetricsTest, ProcessSeriesAreIncluded) {
  ManagerMetrics metrics;
  const std::string text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("# TYPE process_cpu_seconds_total counter\n"));
  EXPECT_THAT(text, HasSubstr("process_resident_memory_bytes "));
  EXPECT_THAT(text, HasSubstr("process_start_time_seconds "));
}

TEST(ExponentialBucketsTest, MultipliesFromTheStart) {
  EXPECT_EQ(exponential_buckets(1, 10, 3), (prometheus::Histogram::BucketBoundaries{1, 10, 100}));
}

}  // namespace
}  // namespace nmo::runtime
