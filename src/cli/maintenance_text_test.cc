#include "cli/maintenance_text.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::cli {
namespace {

op::NodeMaintenance decode(std::string_view json) {
  auto nm = op::decode_node_maintenance(boost::json::parse(json));
  EXPECT_OK(nm);
  return nm ? *nm : op::NodeMaintenance{};
}

// A moment of docs/design.md §8 (S1): 8 pods must leave, 6 are gone, two wait.
constexpr std::string_view kRunning = R"json({
  "metadata": {"name": "maintenance-worker-01", "creationTimestamp": "2024-05-01T10:00:00Z"},
  "spec": {"nodeName": "node-worker-01", "reason": "memory upgrade"},
  "status": {"phase": "Running", "totalPods": 8, "evictionPods": 6, "drainProgress": 75,
    "pendingPods": ["vm-db", "web-1"],
    "pendingPodsRefs": [
      {"namespace": "vms", "name": "vm-db", "reason": "BlockedByPDB",
       "message": "PDB vms/db-pdb: 0 disruptions allowed (1 healthy, 1 desired)"},
      {"namespace": "web", "name": "web-1", "reason": "WaitingForTermination",
       "message": "terminating for 5s"}],
    "lastError": "Cannot evict pod as it would violate the pod's disruption budget."}
})json";

kube::Time at(std::string_view text) { return *kube::parse_time(text); }

TEST(BlockingSummary, RunningCountsBlockedReasonsOnly) {
  EXPECT_EQ(blocking_summary(decode(kRunning)), "BlockedByPDB (1)");
}

TEST(BlockingSummary, PendingShowsTheBlockedCondition) {
  const auto nm = decode(R"json({"metadata": {"name": "m"}, "spec": {"nodeName": "n"},
    "status": {"phase": "Pending", "conditions": [{"type": "Blocked", "status": "True",
      "reason": "EtcdQuorum", "lastTransitionTime": "2024-05-01T10:00:00Z",
      "message": "etcd quorum is not maintained when node n is remediated"}]}})json");
  EXPECT_EQ(blocking_summary(nm), "etcd quorum is not maintained when node n is remediated");
}

TEST(ListRow, HasEveryColumn) {
  EXPECT_EQ(list_row(decode(kRunning), at("2024-05-01T10:05:30Z")),
            (std::vector<std::string>{"maintenance-worker-01", "node-worker-01", "Running", "75%",
                                      "2", "5m30s", "BlockedByPDB (1)"}));
  const auto fresh = decode(R"json({"metadata": {"name": "m"}, "spec": {"nodeName": "n"}})json");
  EXPECT_EQ(list_row(fresh, at("2024-05-01T10:05:30Z"))[2], "New");
  EXPECT_EQ(list_row(fresh, at("2024-05-01T10:05:30Z"))[3], "-");
  const auto wide = list_row(decode(kRunning), at("2024-05-01T10:05:30Z"), true);
  ASSERT_EQ(wide.size(), list_header(true).size());
  EXPECT_EQ(list_header(true).back(), "REASON");
  EXPECT_EQ(wide[7], "6/8");
  EXPECT_EQ(wide[8], "-");
  EXPECT_EQ(wide[9], "memory upgrade");
  EXPECT_EQ(list_row(fresh, at("2024-05-01T10:05:30Z"), true).back(), "-");
  kube::Node node;
  node.conditions = {{.type = "Ready", .status = "True"},
                     {.type = "DrainInProgress", .status = "True"},
                     {.type = "Drained", .status = "False"},
                     {.type = "MaintenanceInProgress", .status = "True"}};
  EXPECT_EQ(list_row(decode(kRunning), at("2024-05-01T10:05:30Z"), true, node)[8],
            "MaintenanceInProgress,DrainInProgress");
}

TEST(NodeLifecycleSummary, NamesTheTrueOnesOrADash) {
  kube::Node node;
  EXPECT_EQ(node_lifecycle_summary(node), "-");
  node.conditions = {{.type = "MaintenancePlanned", .status = "True"},
                     {.type = "GracefulNodeShutdownInProgress", .status = "Unknown"}};
  EXPECT_EQ(node_lifecycle_summary(node), "MaintenancePlanned");
}

TEST(StatusReport, ReadsLikeTheStory) {
  const std::string report = status_report(decode(kRunning), at("2024-05-01T10:05:30Z"));
  EXPECT_NE(report.find("Phase:        Running\n"), std::string::npos) << report;
  EXPECT_NE(report.find("Progress:     75% (6 of 8 pods gone)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  vms/vm-db: BlockedByPDB (PDB vms/db-pdb: 0 disruptions allowed (1 "
                        "healthy, 1 desired))\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Reason:       memory upgrade\n"), std::string::npos) << report;
}

TEST(ProgressBar, FillsProportionally) {
  EXPECT_EQ(progress_bar(0, 10), "[..........]");
  EXPECT_EQ(progress_bar(75, 20), "[###############.....]");
  EXPECT_EQ(progress_bar(100, 10), "[##########]");
  EXPECT_EQ(progress_bar(140, 4), "[####]");
  EXPECT_EQ(progress_bar(-3, 4), "[....]");
}

TEST(ProgressLine, PercentEvictedTotalElapsed) {
  EXPECT_EQ(progress_line(decode(kRunning), std::chrono::seconds(65)),
            "maintenance-worker-01 (node-worker-01)  Running  [###############.....]   75%  6/8 "
            "pods  1m05s");
}

TEST(PendingLines, OnePerPodWithReasonAndLimit) {
  const auto lines = pending_lines(decode(kRunning), 1);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0],
            "  pending vms/vm-db: BlockedByPDB (PDB vms/db-pdb: 0 disruptions allowed (1 healthy, "
            "1 desired))");
  EXPECT_EQ(lines[1], "  ... and 1 more");
}

TEST(IsFinal, SucceededAndFailedOnly) {
  EXPECT_FALSE(is_final(decode(kRunning)));
  EXPECT_TRUE(
      is_final(decode(R"json({"spec": {"nodeName": "n"}, "status": {"phase": "Failed"}})json")));
  EXPECT_TRUE(
      is_final(decode(R"json({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}})json")));
}

}  // namespace
}  // namespace nmo::cli
