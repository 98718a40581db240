#include "operator/api/maintenance_plan.h"

#include <chrono>
#include <cstdio>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::op {
namespace {

using std::chrono::sys_days;
using std::chrono::year;

// The story's plan (docs/operations.md): 22 workers, one at a time, Saturday nights in Taipei.
constexpr const char* kStoryPlan = R"json({
  "apiVersion": "nodemaintenance.medik8s.io/v1alpha1",
  "kind": "MaintenancePlan",
  "metadata": {"name": "memory-upgrade", "uid": "5d1c", "generation": 2},
  "spec": {
    "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
    "order": "ByZone",
    "reason": "Hardware memory upgrade",
    "maxParallel": 1,
    "maxUnavailable": "10%",
    "timeZone": "Asia/Taipei",
    "windows": [{"days": ["Sat"], "start": "22:00", "end": "06:00"}],
    "blackoutDates": ["2026-12-25"],
    "doneWhen": "NodeRebooted",
    "healthGateTimeout": "20m",
    "paused": true
  },
  "status": {
    "phase": "Running", "observedGeneration": 2, "total": 22, "done": 1, "inProgress": 1,
    "waiting": 20, "failed": 0, "currentNodes": ["node-worker-02"],
    "eta": "2026-12-19T02:00:00Z", "message": "node-worker-02: draining",
    "nodes": [
      {"name": "node-worker-01", "phase": "Done", "maintenance": "memory-upgrade-node-worker-01",
       "bootID": "b-1", "budgets": ["shop/web-pdb"], "vms": ["shop/vm-db"], "startedAt": "2026-12-05T14:00:00Z",
       "drainedAt": "2026-12-05T14:01:00Z", "completedAt": "2026-12-05T14:30:00Z",
       "restoredAt": "2026-12-05T14:30:02Z", "finishedAt": "2026-12-05T14:31:00Z"},
      {"name": "node-worker-02", "phase": "Draining",
       "maintenance": "memory-upgrade-node-worker-02", "startedAt": "2026-12-05T14:31:00Z",
       "message": "draining: 3 pods left"}
    ]
  }
})json";

TEST(MaintenancePlanTest, DecodesTheStorysPlan) {
  ASSERT_OK_AND_ASSIGN(const MaintenancePlan plan,
                       decode_maintenance_plan(boost::json::parse(kStoryPlan)));
  EXPECT_EQ(plan.meta.name, "memory-upgrade");
  ASSERT_TRUE(plan.spec.node_selector.has_value());
  EXPECT_TRUE(plan.spec.node_selector->match_labels.contains("node-role.kubernetes.io/worker"));
  EXPECT_EQ(plan.spec.order, PlanOrder::kByZone);
  ASSERT_TRUE(plan.spec.max_parallel.has_value());
  EXPECT_EQ(plan.spec.max_parallel->to_string(), "1");
  ASSERT_TRUE(plan.spec.max_unavailable.has_value());
  EXPECT_EQ(plan.spec.max_unavailable->to_string(), "10%");
  EXPECT_EQ(plan.spec.time_zone, "Asia/Taipei");
  ASSERT_EQ(plan.spec.windows.size(), 1U);
  EXPECT_EQ(plan.spec.windows[0], (PlanWindow{{"Sat"}, "22:00", "06:00"}));
  EXPECT_EQ(plan.spec.blackout_dates, std::vector<std::string>{"2026-12-25"});
  EXPECT_EQ(plan.spec.done_when, DoneWhen::kNodeRebooted);
  EXPECT_EQ(plan.spec.health_gate_timeout, "20m");
  EXPECT_TRUE(plan.spec.paused);
  EXPECT_EQ(plan.status.phase, PlanPhase::kRunning);
  EXPECT_EQ(plan.status.total, 22);
  ASSERT_EQ(plan.status.nodes.size(), 2U);
  EXPECT_EQ(plan.status.nodes[0].phase, PlanNodePhase::kDone);
  EXPECT_EQ(plan.status.nodes[0].budgets, std::vector<std::string>{"shop/web-pdb"});
  EXPECT_EQ(plan.status.nodes[0].vms, std::vector<std::string>{"shop/vm-db"});
  EXPECT_EQ(plan.status.nodes[1].phase, PlanNodePhase::kDraining);
  EXPECT_EQ(plan.status.nodes[1].message, "draining: 3 pods left");
}

TEST(MaintenancePlanTest, StatusRoundTripsThroughItsEncoding) {
  ASSERT_OK_AND_ASSIGN(const MaintenancePlan plan,
                       decode_maintenance_plan(boost::json::parse(kStoryPlan)));
  boost::json::object wrapped;
  wrapped["status"] = encode_plan_status(plan.status);
  ASSERT_OK_AND_ASSIGN(const MaintenancePlan again, decode_maintenance_plan(wrapped));
  EXPECT_EQ(again.status, plan.status);
}

TEST(MaintenancePlanTest, SpecRoundTripsThroughItsEncoding) {
  ASSERT_OK_AND_ASSIGN(const MaintenancePlan plan,
                       decode_maintenance_plan(boost::json::parse(kStoryPlan)));
  boost::json::object wrapped;
  wrapped["spec"] = encode_plan_spec(plan.spec);
  EXPECT_EQ(wrapped["spec"].as_object(), boost::json::parse(kStoryPlan).at("spec").as_object());
  ASSERT_OK_AND_ASSIGN(const MaintenancePlan again, decode_maintenance_plan(wrapped));
  EXPECT_EQ(again.spec, plan.spec);
}

TEST(MaintenancePlanTest, SpecEncodingLeavesOutWhatIsUnset) {
  MaintenancePlanSpec spec;
  spec.nodes = {"a", "b"};
  spec.windows = {PlanWindow{{}, "22:00", "06:00"}};
  EXPECT_EQ(boost::json::serialize(encode_plan_spec(spec)),
            R"({"nodes":["a","b"],"windows":[{"start":"22:00","end":"06:00"}]})");
}

TEST(MaintenancePlanTest, MergePatchClearsWhatTheStatusNoLongerHas) {
  MaintenancePlanStatus status;
  status.phase = PlanPhase::kSucceeded;
  const boost::json::object patch = plan_status_merge_patch(status);
  const boost::json::object& fields = patch.at("status").as_object();
  EXPECT_EQ(fields.at("phase"), "Succeeded");
  EXPECT_TRUE(fields.at("eta").is_null());
  EXPECT_TRUE(fields.at("nextWindow").is_null());
  EXPECT_TRUE(fields.at("message").is_null());
  EXPECT_TRUE(fields.at("currentNodes").is_null());
}

TEST(MaintenancePlanTest, AnUnknownOrderOrDoneWhenIsKeptForTheControllerToReport) {
  ASSERT_OK_AND_ASSIGN(
      const MaintenancePlan plan,
      decode_maintenance_plan(boost::json::parse(
          R"({"spec": {"nodes": ["a"], "order": "Random", "doneWhen": "Whenever"}})")));
  EXPECT_FALSE(plan.spec.order.has_value());
  EXPECT_EQ(plan.spec.order_error,
            "spec.order: unknown order \"Random\" (expected AsListed, ByName or ByZone)");
  EXPECT_EQ(plan.spec.done_when_error,
            "spec.doneWhen: unknown doneWhen value \"Whenever\" (expected Confirmed, "
            "NodeRebooted or Soaked)");
}

TEST(MaintenancePlanTest, WrongTypesNameTheField) {
  EXPECT_EQ(decode_maintenance_plan(boost::json::parse(R"({"spec": {"nodes": ["a", 7]}})"))
                .error()
                .message,
            "spec.nodes[1]: expected a string, got number");
  EXPECT_EQ(decode_maintenance_plan(
                boost::json::parse(R"({"status": {"nodes": [{"name": "a", "phase": "Busy"}]}})"))
                .error()
                .message,
            "status.nodes[0].phase: unknown phase \"Busy\" (expected Waiting, Draining, "
            "InMaintenance, Restoring, HealthCheck, Done or Failed)");
  EXPECT_EQ(
      decode_maintenance_plan(boost::json::parse(R"({"spec": {"windows": [3]}})")).error().message,
      "spec.windows[0]: expected an object, got number");
  EXPECT_EQ(decode_maintenance_plan(boost::json::parse(R"({"spec": {"maxParallel": true}})"))
                .error()
                .message,
            "spec.maxParallel: expected an integer or a string, got bool");
}

// A cloud provider's node name, as long as they come
// ("ip-10-20-130-201.eu-west-1.compute.internal").
std::string cloud_node_name(int i) {
  return "ip-10-" + std::to_string(20 + i / 65536) + "-" + std::to_string(i / 256 % 256) + "-" +
         std::to_string(i % 256) + ".eu-west-1.compute.internal";
}

std::size_t encoded_size(const MaintenancePlanStatus& status) {
  return boost::json::serialize(plan_status_merge_patch(status)).size();
}

// etcd refuses objects over 1.5 MiB; a quarter MiB is left for the plan's metadata and spec.
constexpr std::size_t kStatusBudget = 1024 * 1024 * 5 / 4;

TEST(MaintenancePlanStatusSize, TenThousandNodesFitInOneObjectWithRoomToSpare) {
  const kube::Time started = sys_days{year{2026} / 12 / 5} + std::chrono::hours{14};
  MaintenancePlanStatus done;
  done.phase = PlanPhase::kSucceeded;
  done.total = done.done = 10000;
  done.message = "10000 of 10000 nodes done";
  for (int i = 0; i < 10000; ++i) {
    done.nodes.push_back(
        {.name = cloud_node_name(i), .phase = PlanNodePhase::kDone, .took_seconds = 2711});
  }
  const std::size_t finished = encoded_size(done);

  // Mid-plan at its widest: half done, maxParallel 10% (1,000 nodes) in progress with their whole
  // history, a few failed, the rest waiting.
  MaintenancePlanStatus running = done;
  running.phase = PlanPhase::kRunning;
  for (int i = 5000; i < 10000; ++i) {
    PlanNodeStatus& entry = running.nodes[static_cast<std::size_t>(i)];
    entry = {.name = entry.name};
    if (i < 6000) {
      entry.phase = PlanNodePhase::kHealthCheck;
      entry.maintenance = "memory-upgrade-" + entry.name + "-3823f550";
      entry.boot_id = "5b0c8ea6-0a55-4c79-9b1a-4c8d8c7a2f43";
      entry.budgets = {"shop/web-pdb", "shop/db-pdb"};
      entry.vms = {"shop/vm-db"};
      entry.started_at = entry.drained_at = entry.completed_at = started;
      entry.restored_at = entry.gate_started_at = started;
      entry.message = "health gate: PDB shop/web-pdb 2 of 3 healthy";
    } else if (i < 6010) {
      entry.phase = PlanNodePhase::kFailed;
      entry.maintenance = "memory-upgrade-" + entry.name + "-3823f550";
      entry.started_at = entry.finished_at = started;
      entry.message = "NodeMaintenance memory-upgrade-" + entry.name +
                      "-3823f550 failed: drain did not finish within drainTimeout 1h0m0s";
    }
  }
  const std::size_t widest = encoded_size(running);
  std::printf("status of a 10,000-node plan: %zu bytes when done, %zu mid-plan (budget %zu)\n",
              finished, widest, kStatusBudget);
  EXPECT_LT(finished, 1024U * 1024U) << "a finished plan keeps a third of etcd's limit free";
  EXPECT_LT(widest, kStatusBudget);
}

}  // namespace
}  // namespace nmo::op
