#include "cli/plan_status_text.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::cli {
namespace {

op::MaintenancePlan decode(std::string_view json) {
  auto plan = op::decode_maintenance_plan(boost::json::parse(json));
  EXPECT_OK(plan);
  return plan ? *plan : op::MaintenancePlan{};
}

kube::Time at(std::string_view text) { return *kube::parse_time(text); }

// docs/cli.md's example: 20 workers, 7 done, the eighth drained and waiting for the technician,
// the window closing at 06:00 Taipei time.
constexpr std::string_view kRunning = R"json({
  "metadata": {"name": "memory-upgrade"},
  "spec": {"nodes": ["worker-01", "worker-02", "worker-03", "worker-04"]},
  "status": {
    "phase": "Running", "total": 20, "done": 7, "inProgress": 1, "waiting": 12, "failed": 0,
    "currentNodes": ["worker-08"],
    "nextWindow": "2026-03-14T14:00:00Z", "nextWindowText": "Sat 22:00 Asia/Taipei",
    "eta": "2026-03-15T03:10:00Z",
    "message": "worker-08: waiting for the work to be done (kubectl maintenance done worker-08)",
    "nodes": [
      {"name": "worker-07", "phase": "Done", "maintenance": "memory-upgrade-worker-07",
       "startedAt": "2026-03-07T15:10:00Z", "finishedAt": "2026-03-07T15:52:30Z"},
      {"name": "worker-08", "phase": "InMaintenance", "maintenance": "memory-upgrade-worker-08",
       "startedAt": "2026-03-07T15:52:31Z", "drainedAt": "2026-03-07T15:53:40Z",
       "message": "waiting for the work to be done"},
      {"name": "worker-09", "phase": "Waiting"},
      {"name": "worker-10", "phase": "Failed", "maintenance": "memory-upgrade-worker-10",
       "startedAt": "2026-03-07T14:00:00Z", "message": "drain failed"}
    ]
  }
})json";

TEST(PlanStatusReport, ReadsLikeTheStory) {
  EXPECT_EQ(plan_status_report(decode(kRunning), at("2026-03-07T15:56:43Z")),
            "MaintenancePlan memory-upgrade: Running — 7 of 20 done, 1 in progress, 12 waiting, "
            "0 failed\n"
            "[##############..........................] 35%\n"
            "Next window: Sat 22:00 Asia/Taipei (2026-03-14T14:00:00Z)\n"
            "ETA: 2026-03-15T03:10:00Z\n"
            "Message: worker-08: waiting for the work to be done (kubectl maintenance done "
            "worker-08)\n"
            "\n"
            "NODE        PHASE           MAINTENANCE                STARTED                "
            "DURATION   MESSAGE\n"
            "worker-07   Done            memory-upgrade-worker-07   2026-03-07T15:10:00Z   "
            "42m30s     -\n"
            "worker-08   InMaintenance   memory-upgrade-worker-08   2026-03-07T15:52:31Z   "
            "4m12s      waiting for the work to be done\n"
            "worker-09   Waiting         -                          -                      "
            "-          -\n"
            "worker-10   Failed          memory-upgrade-worker-10   2026-03-07T14:00:00Z   "
            "-          drain failed\n");
}

TEST(PlanStatusReport, LeavesOutWhatIsNotSet) {
  const auto plan = decode(R"json({"metadata": {"name": "p"}, "spec": {"nodes": ["a"]},
    "status": {"phase": "Succeeded", "total": 1, "done": 1,
      "nodes": [{"name": "a", "phase": "Done", "startedAt": "2026-03-07T15:00:00Z",
                 "finishedAt": "2026-03-07T16:02:03Z"}]}})json");
  EXPECT_EQ(plan_status_report(plan, at("2026-03-08T00:00:00Z")),
            "MaintenancePlan p: Succeeded — 1 of 1 done, 0 in progress, 0 waiting, 0 failed\n"
            "[########################################] 100%\n"
            "\n"
            "NODE   PHASE   MAINTENANCE   STARTED                DURATION   MESSAGE\n"
            "a      Done    -             2026-03-07T15:00:00Z   1h02m03s   -\n");
}

TEST(PlanStatusReport, NextWindowWithOnlyOneOfItsTwoFields) {
  auto plan = decode(R"json({"metadata": {"name": "p"}, "spec": {"nodes": ["a"]},
    "status": {"phase": "WaitingForWindow", "total": 1, "waiting": 1,
               "nextWindow": "2026-03-14T14:00:00Z"}})json");
  EXPECT_EQ(plan_status_report(plan, at("2026-03-08T00:00:00Z")),
            "MaintenancePlan p: WaitingForWindow — 0 of 1 done, 0 in progress, 1 waiting, 0 "
            "failed\n"
            "[........................................] 0%\n"
            "Next window: 2026-03-14T14:00:00Z\n");
  plan.status.next_window.reset();
  plan.status.next_window_text = "Sat 22:00 UTC";
  EXPECT_NE(
      plan_status_report(plan, at("2026-03-08T00:00:00Z")).find("\nNext window: Sat 22:00 UTC\n"),
      std::string::npos);
}

TEST(PlanStatusReport, BeforeTheOperatorHasSeenThePlan) {
  const auto plan = decode(R"json({"metadata": {"name": "p"}, "spec": {"nodes": ["a"]}})json");
  EXPECT_TRUE(plan_not_started(plan));
  EXPECT_EQ(plan_status_report(plan, at("2026-03-08T00:00:00Z")),
            "MaintenancePlan p: not started yet (is the operator running?)\n");
}

TEST(PlanPercent, RoundsDownAndSurvivesAnEmptyPlan) {
  op::MaintenancePlanStatus status;
  EXPECT_EQ(plan_percent(status), 0);
  status.total = 3;
  status.done = 2;
  EXPECT_EQ(plan_percent(status), 66);
  status.done = 3;
  EXPECT_EQ(plan_percent(status), 100);
}

TEST(PlanNodeRow, DurationRunsOnOnlyWhileTheNodeIsInProgress) {
  const kube::Time now = at("2026-03-07T16:00:00Z");
  op::PlanNodeStatus node{.name = "a", .phase = op::PlanNodePhase::kHealthCheck};
  node.started_at = at("2026-03-07T15:59:05Z");
  EXPECT_EQ(plan_node_row(node, now)[4], "55s");
  node.phase = op::PlanNodePhase::kDraining;
  EXPECT_EQ(plan_node_row(node, now)[4], "55s");
  node.phase = op::PlanNodePhase::kDone;  // finished, but finishedAt not written
  EXPECT_EQ(plan_node_row(node, now)[4], "-");
  node.finished_at = at("2026-03-07T15:59:50Z");
  EXPECT_EQ(plan_node_row(node, now)[4], "45s");
  // What the plan keeps of a Done node: its name, phase and how long it took.
  EXPECT_EQ(
      plan_node_row({.name = "a", .phase = op::PlanNodePhase::kDone, .took_seconds = 75}, now)[4],
      "1m15s");
  EXPECT_EQ(plan_node_row(node, now).size(), plan_node_header().size());
}

}  // namespace
}  // namespace nmo::cli
