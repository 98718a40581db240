#include "cli/plan_watch.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "cli/exit_code.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;

op::MaintenancePlan decode(std::string_view text) {
  auto plan = op::decode_maintenance_plan(json::parse(text));
  EXPECT_OK(plan);
  return plan ? *plan : op::MaintenancePlan{};
}

constexpr std::string_view kRunning = R"json({
  "metadata": {"name": "memory-upgrade"},
  "spec": {"nodes": ["worker-07", "worker-08", "worker-09"]},
  "status": {
    "phase": "Running", "total": 3, "done": 1, "inProgress": 1, "waiting": 1, "failed": 0,
    "currentNodes": ["worker-08"],
    "nextWindow": "2026-03-14T14:00:00Z", "nextWindowText": "Sat 22:00 Asia/Taipei",
    "eta": "2026-03-15T03:10:00Z",
    "message": "worker-08: drained; soaking until 15:55:00",
    "nodes": [
      {"name": "worker-07", "phase": "Done", "maintenance": "memory-upgrade-worker-07",
       "startedAt": "2026-03-07T15:10:00Z", "finishedAt": "2026-03-07T15:52:30Z"},
      {"name": "worker-08", "phase": "InMaintenance", "maintenance": "memory-upgrade-worker-08",
       "startedAt": "2026-03-07T15:52:31Z", "message": "drained; soaking until 15:55:00"},
      {"name": "worker-09", "phase": "Waiting"}
    ]
  }
})json";

TEST(PlanWatchJson, IsTheStatusInOneCompactLine) {
  EXPECT_EQ(plan_watch_json(decode(kRunning)), json::parse(R"json({
              "name": "memory-upgrade", "phase": "Running",
              "total": 3, "done": 1, "inProgress": 1, "waiting": 1, "failed": 0,
              "currentNodes": ["worker-08"],
              "message": "worker-08: drained; soaking until 15:55:00",
              "nextWindow": "2026-03-14T14:00:00Z", "nextWindowText": "Sat 22:00 Asia/Taipei",
              "eta": "2026-03-15T03:10:00Z",
              "nodes": [
                {"name": "worker-07", "phase": "Done", "maintenance": "memory-upgrade-worker-07",
                 "message": ""},
                {"name": "worker-08", "phase": "InMaintenance",
                 "maintenance": "memory-upgrade-worker-08",
                 "message": "drained; soaking until 15:55:00"},
                {"name": "worker-09", "phase": "Waiting", "maintenance": "", "message": ""}
              ]})json"));
}

TEST(PlanWatchJson, APlanWithoutStatusIsNewWithNullTimes) {
  const json::object line = plan_watch_json(decode(R"json({"metadata": {"name": "fresh"}})json"));
  EXPECT_EQ(line.at("phase"), "New");
  EXPECT_EQ(line.at("total"), 0);
  EXPECT_TRUE(line.at("nextWindow").is_null());
  EXPECT_TRUE(line.at("eta").is_null());
  EXPECT_EQ(line.at("nodes"), json::array());
}

TEST(PlanPhaseText, NamesTheHalfWrittenStatusUnknown) {
  EXPECT_EQ(plan_phase_text(decode(kRunning)), "Running");
  EXPECT_EQ(plan_phase_text(decode(R"json({"metadata": {"name": "p"}})json")), "New");
  EXPECT_EQ(plan_phase_text(decode(R"json({"metadata": {"name": "p"},
      "status": {"nodes": [{"name": "w", "phase": "Waiting"}]}})json")),
            "Unknown");
}

TEST(PlanWatchSignature, IgnoresAnEtaThatOnlyMovesOn) {
  op::MaintenancePlan plan = decode(kRunning);
  const std::string before = plan_watch_signature(plan);
  plan.status.eta = *kube::parse_time("2026-03-15T03:11:00Z");
  EXPECT_EQ(plan_watch_signature(plan), before);
  plan.status.nodes[1].phase = op::PlanNodePhase::kRestoring;
  EXPECT_NE(plan_watch_signature(plan), before) << "a node moving on is a change";
  plan = decode(kRunning);
  plan.status.message = "worker-08: giving the node back";
  EXPECT_NE(plan_watch_signature(plan), before) << "a new message is a change";
}

TEST(PlanWatchEnd, SucceededExitsZeroFailedOneWithTheMessage) {
  op::MaintenancePlan plan = decode(kRunning);
  plan.status.phase = op::PlanPhase::kSucceeded;
  EXPECT_EQ(plan_watch_end(plan), (PlanWatchEnd{.exit_code = kExitOk, .error = ""}));
  plan.status.phase = op::PlanPhase::kFailed;
  plan.status.message = "spec.timeZone: unknown time zone \"Mars/Olympus\"";
  EXPECT_EQ(plan_watch_end(plan),
            (PlanWatchEnd{.exit_code = kExitFailed,
                          .error = "MaintenancePlan \"memory-upgrade\" failed: spec.timeZone: "
                                   "unknown time zone \"Mars/Olympus\""}));
  plan.status.message.clear();
  EXPECT_EQ(plan_watch_end(plan)->error, "MaintenancePlan \"memory-upgrade\" failed");
}

TEST(PlanWatchEnd, GoesOnWhileRunningWaitingPausedOrNotStarted) {
  op::MaintenancePlan plan = decode(kRunning);
  for (const op::PlanPhase phase :
       {op::PlanPhase::kRunning, op::PlanPhase::kWaitingForWindow, op::PlanPhase::kPaused}) {
    plan.status.phase = phase;
    EXPECT_EQ(plan_watch_end(plan), std::nullopt) << op::to_string(phase);
  }
  EXPECT_EQ(plan_watch_end(decode(R"json({"metadata": {"name": "p"}})json")), std::nullopt);
}

}  // namespace
}  // namespace nmo::cli
