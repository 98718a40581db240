#include "cli/maintenance_watch.h"

#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::cli {
namespace {

using std::chrono::seconds;

op::NodeMaintenance decode(std::string_view json) {
  auto nm = op::decode_node_maintenance(boost::json::parse(json));
  EXPECT_OK(nm);
  return nm ? *nm : op::NodeMaintenance{};
}

// docs/design.md §8 (S1): 8 pods must leave, 6 are gone, two wait.
constexpr std::string_view kRunning = R"json({
  "metadata": {"name": "maintenance-worker-01", "uid": "u1",
               "creationTimestamp": "2024-05-01T10:00:00Z"},
  "spec": {"nodeName": "node-worker-01"},
  "status": {"phase": "Running", "totalPods": 8, "evictionPods": 6, "drainProgress": 75,
    "pendingPodsRefs": [
      {"namespace": "vms", "name": "vm-db", "reason": "BlockedByPDB",
       "message": "PDB vms/db-pdb: 0 disruptions allowed (1 healthy, 1 desired)"},
      {"namespace": "web", "name": "web-1", "reason": "WaitingForTermination",
       "message": "terminating for 5s"}],
    "lastError": "Cannot evict pod as it would violate the pod's disruption budget."}
})json";

op::NodeMaintenance with_progress(std::string uid, std::int64_t progress, std::int64_t evicted) {
  op::NodeMaintenance nm = decode(kRunning);
  nm.meta.uid = std::move(uid);
  nm.status.drain_progress = progress;
  nm.status.eviction_pods = evicted;
  return nm;
}

TEST(MaintenanceHighWater, TheBarNeverGoesBackForOneMaintenance) {
  MaintenanceHighWater marks;
  marks.keep(with_progress("u1", 75, 6));
  marks.keep(with_progress("u1", 50, 4));
  EXPECT_EQ(marks.shown().status.drain_progress, 75);
  EXPECT_EQ(marks.shown().status.eviction_pods, 6);
  marks.keep(with_progress("u1", 80, 5));
  EXPECT_EQ(marks.shown().status.drain_progress, 80);
  EXPECT_EQ(marks.shown().status.eviction_pods, 6);
}

TEST(MaintenanceHighWater, ANewMaintenanceOfTheSameNameStartsAgain) {
  MaintenanceHighWater marks;
  marks.keep(with_progress("u1", 75, 6));
  marks.keep(with_progress("u2", 10, 1));
  EXPECT_EQ(marks.shown().meta.uid, "u2");
  EXPECT_EQ(marks.shown().status.drain_progress, 10);
  EXPECT_EQ(marks.shown().status.eviction_pods, 1);
}

TEST(MaintenanceElapsed, SinceCreationElseSinceFollowing) {
  const op::NodeMaintenance nm = decode(kRunning);
  EXPECT_EQ(maintenance_elapsed(nm, seconds(3), *kube::parse_time("2024-05-01T10:01:05Z")),
            seconds(65));
  EXPECT_EQ(maintenance_elapsed(op::NodeMaintenance{}, seconds(3),
                                *kube::parse_time("2024-05-01T10:01:05Z")),
            seconds(3));
}

TEST(MaintenanceWatchFrame, ProgressLineThenPendingPodsSignedWithoutTheClock) {
  const Frame frame = maintenance_watch_frame(decode(kRunning), seconds(65));
  EXPECT_EQ(frame.lines,
            (std::vector<std::string>{
                "maintenance-worker-01 (node-worker-01)  Running  [###############.....]   75%  "
                "6/8 pods  1m05s",
                "  pending vms/vm-db: BlockedByPDB (PDB vms/db-pdb: 0 disruptions allowed (1 "
                "healthy, 1 desired))",
                "  pending web/web-1: WaitingForTermination (terminating for 5s)"}));
  EXPECT_EQ(frame.signature,
            "Running|75|6|8|  pending vms/vm-db: BlockedByPDB (PDB vms/db-pdb: 0 disruptions "
            "allowed (1 healthy, 1 desired))|  pending web/web-1: WaitingForTermination "
            "(terminating for 5s)");
  EXPECT_EQ(maintenance_watch_frame(decode(kRunning), seconds(66)).signature, frame.signature);
}

TEST(MaintenanceWatchJson, OneLinePerChange) {
  EXPECT_EQ(boost::json::serialize(maintenance_watch_json(decode(kRunning), seconds(65))),
            R"j({"name":"maintenance-worker-01","node":"node-worker-01","phase":"Running",)j"
            R"j("drainProgress":75,"evictionPods":6,"totalPods":8,"pendingPods":[)j"
            R"j({"namespace":"vms","name":"vm-db","reason":"BlockedByPDB",)j"
            R"j("message":"PDB vms/db-pdb: 0 disruptions allowed (1 healthy, 1 desired)"},)j"
            R"j({"namespace":"web","name":"web-1","reason":"WaitingForTermination",)j"
            R"j("message":"terminating for 5s"}],)j"
            R"j("lastError":"Cannot evict pod as it would violate the pod's disruption budget.",)j"
            R"j("elapsedSeconds":65})j");
}

TEST(MaintenanceWatchEnd, SucceededExitsZeroFailedOneWithTheLastError) {
  op::NodeMaintenance nm = decode(kRunning);
  EXPECT_EQ(maintenance_watch_end(nm), std::nullopt);
  nm.status.phase = std::nullopt;
  EXPECT_EQ(maintenance_watch_end(nm), std::nullopt);
  nm.status.phase = op::Phase::kSucceeded;
  EXPECT_EQ(maintenance_watch_end(nm), (MaintenanceWatchEnd{.exit_code = 0, .error = ""}));
  nm.status.phase = op::Phase::kFailed;
  nm.status.last_error = "drain timed out after 1h";
  EXPECT_EQ(maintenance_watch_end(nm),
            (MaintenanceWatchEnd{.exit_code = 1,
                                 .error = "NodeMaintenance \"maintenance-worker-01\" failed: "
                                          "drain timed out after 1h"}));
}

}  // namespace
}  // namespace nmo::cli
