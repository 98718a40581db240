#include "operator/api/maintenance_plan.h"

#include <chrono>
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

}  // namespace
}  // namespace nmo::op
