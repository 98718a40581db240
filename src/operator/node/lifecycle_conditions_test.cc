#include "operator/node/lifecycle_conditions.h"

#include <chrono>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include "operator/node/node_patch.h"

namespace nmo::op {
namespace {

namespace json = boost::json;
using std::chrono::sys_days;
using std::chrono::year;

const kube::Time kNow =
    sys_days{year{2026} / 12 / 5} + std::chrono::hours{22} + std::chrono::milliseconds{250};
constexpr const char* kStamp = "2026-12-05T22:00:00Z";
constexpr const char* kEarlier = "2026-12-05T21:00:00Z";
const kube::Time kEarlierTime = sys_days{year{2026} / 12 / 5} + std::chrono::hours{21};

kube::Node node_with(std::vector<kube::NodeCondition> conditions) {
  kube::Node node;
  node.meta.name = "node-worker-01";
  node.meta.resource_version = "4711";
  node.conditions.push_back(kube::NodeCondition{.type = "Ready",
                                                .status = "True",
                                                .reason = "KubeletReady",
                                                .message = "kubelet is posting ready status",
                                                .last_transition_time = kEarlierTime});
  for (kube::NodeCondition& c : conditions) node.conditions.push_back(std::move(c));
  return node;
}

LifecycleIntent intent(NodeLifecycle stage) {
  return LifecycleIntent{.stage = stage,
                         .cr_name = "maintenance-worker-01",
                         .cr_uid = "uid-1",
                         .reason = "memory upgrade",
                         .drain_timed_out = false};
}

kube::NodeCondition ours(std::string type, std::string status, std::string reason,
                         std::string message) {
  return kube::NodeCondition{.type = std::move(type),
                             .status = std::move(status),
                             .reason = std::move(reason),
                             .message = std::move(message),
                             .last_transition_time = kEarlierTime};
}

const std::string kInProgress = "NodeMaintenance maintenance-worker-01: memory upgrade";
const std::string kDraining =
    "NodeMaintenance maintenance-worker-01 is evicting the pods that must leave";
const std::string kDrainedMessage =
    "NodeMaintenance maintenance-worker-01 drained the node: every pod that must leave is gone";

std::string patch_of(const kube::Node& node, const LifecycleIntent& what) {
  const LifecyclePatch patch = lifecycle_patch(node, what, kNow);
  return patch.patch ? json::serialize(*patch.patch) : "none";
}

std::string expected(const std::string& conditions) {
  return json::serialize(json::parse(
      R"({"metadata":{"resourceVersion":"4711"},"status":{"conditions":)" + conditions + "}}"));
}

NodeMaintenance maintenance(std::optional<Phase> phase, NodeMaintenanceStatus& status) {
  NodeMaintenance nm;
  nm.meta.name = "maintenance-worker-01";
  nm.meta.uid = "uid-1";
  nm.spec.node_name = "node-worker-01";
  nm.spec.reason = "memory upgrade";
  status.phase = phase;
  return nm;
}

TEST(LifecycleIntentTest, HeldWhileRunningSucceededOrTimedOut) {
  NodeMaintenanceStatus status;
  NodeMaintenance nm = maintenance(std::nullopt, status);
  EXPECT_EQ(lifecycle_intent(nm, status, false, true).stage, NodeLifecycle::kNotHeld);
  status.phase = Phase::kPending;
  EXPECT_EQ(lifecycle_intent(nm, status, false, true).stage, NodeLifecycle::kNotHeld);
  status.phase = Phase::kRunning;
  const LifecycleIntent running = lifecycle_intent(nm, status, false, true);
  EXPECT_EQ(running.stage, NodeLifecycle::kDraining);
  EXPECT_EQ(running.cr_name, "maintenance-worker-01");
  EXPECT_EQ(running.cr_uid, "uid-1");
  EXPECT_EQ(running.reason, "memory upgrade");
  EXPECT_FALSE(running.drain_timed_out);
  status.phase = Phase::kSucceeded;
  EXPECT_EQ(lifecycle_intent(nm, status, false, true).stage, NodeLifecycle::kDrained);
  status.phase = Phase::kFailed;
  EXPECT_EQ(lifecycle_intent(nm, status, false, true).stage, NodeLifecycle::kNotHeld);
  const LifecycleIntent timed_out = lifecycle_intent(nm, status, true, true);
  EXPECT_EQ(timed_out.stage, NodeLifecycle::kDraining);
  EXPECT_TRUE(timed_out.drain_timed_out);
}

TEST(LifecycleIntentTest, NeverWhileDeletingOrDisabled) {
  NodeMaintenanceStatus status;
  NodeMaintenance nm = maintenance(Phase::kSucceeded, status);
  EXPECT_EQ(lifecycle_intent(nm, status, false, false).stage, NodeLifecycle::kNotHeld);
  nm.meta.deletion_timestamp = kNow;
  EXPECT_EQ(lifecycle_intent(nm, status, false, true).stage, NodeLifecycle::kNotHeld);
}

TEST(LifecyclePatchTest, DrainingAddsInProgressAndDrainInProgressWithTheNodesVersion) {
  EXPECT_EQ(patch_of(node_with({}), intent(NodeLifecycle::kDraining)),
            expected(R"([
      {"type":"MaintenanceInProgress","status":"True","reason":"NodeMaintenance",
       "message":")" +
                     kInProgress + R"(","lastHeartbeatTime":")" + kStamp +
                     R"(","lastTransitionTime":")" + kStamp + R"("},
      {"type":"DrainInProgress","status":"True","reason":"NodeMaintenanceDraining",
       "message":")" +
                     kDraining + R"(","lastHeartbeatTime":")" + kStamp +
                     R"(","lastTransitionTime":")" + kStamp + R"("}])"));
}

TEST(LifecyclePatchTest, MessageWithoutReasonNamesTheMaintenanceOnly) {
  LifecycleIntent what = intent(NodeLifecycle::kDraining);
  what.reason.clear();
  const LifecyclePatch patch = lifecycle_patch(node_with({}), what, kNow);
  ASSERT_TRUE(patch.patch);
  EXPECT_EQ(patch.patch->at("status").at("conditions").at(0).at("message"),
            "NodeMaintenance maintenance-worker-01");
}

TEST(LifecyclePatchTest, NothingWhenTheNodeAlreadySaysIt) {
  const kube::Node node =
      node_with({ours("MaintenanceInProgress", "True", "NodeMaintenance", kInProgress),
                 ours("DrainInProgress", "True", "NodeMaintenanceDraining", kDraining)});
  EXPECT_EQ(patch_of(node, intent(NodeLifecycle::kDraining)), "none");
  EXPECT_TRUE(lifecycle_patch(node, intent(NodeLifecycle::kDraining), kNow).foreign.empty());
}

TEST(LifecyclePatchTest, DrainedFlipsDrainInProgressKeepsInProgressTransitionTime) {
  const kube::Node node =
      node_with({ours("MaintenanceInProgress", "True", "NodeMaintenance", kInProgress),
                 ours("DrainInProgress", "True", "NodeMaintenanceDraining", kDraining)});
  EXPECT_EQ(patch_of(node, intent(NodeLifecycle::kDrained)),
            expected(R"([
      {"type":"DrainInProgress","status":"False","reason":"NodeMaintenanceDrained",
       "message":")" +
                     kDrainedMessage + R"(","lastHeartbeatTime":")" + kStamp +
                     R"(","lastTransitionTime":")" + kStamp + R"("},
      {"type":"Drained","status":"True","reason":"NodeMaintenanceDrained",
       "message":")" +
                     kDrainedMessage + R"(","lastHeartbeatTime":")" + kStamp +
                     R"(","lastTransitionTime":")" + kStamp + R"("}])"));
}

TEST(LifecyclePatchTest, SameStatusNewMessageKeepsTheTransitionTime) {
  const kube::Node node =
      node_with({ours("MaintenanceInProgress", "True", "NodeMaintenance", kInProgress),
                 ours("DrainInProgress", "True", "NodeMaintenanceDraining", kDraining)});
  LifecycleIntent what = intent(NodeLifecycle::kDraining);
  what.drain_timed_out = true;
  EXPECT_EQ(patch_of(node, what), expected(std::string(R"([
      {"type":"DrainInProgress","status":"True","reason":"NodeMaintenanceDrainTimeout",
       "message":"NodeMaintenance maintenance-worker-01 passed its drain timeout; the pods left are still evicted",
       "lastHeartbeatTime":")") + kStamp + R"(","lastTransitionTime":")" +
                                           kEarlier + R"("}])"));
}

TEST(LifecyclePatchTest, NotHeldRemovesOursAndOnlyOurs) {
  const kube::Node node = node_with(
      {ours("MaintenanceInProgress", "True", "NodeMaintenance", kInProgress),
       ours("DrainInProgress", "False", "NodeMaintenanceDrained", kDrainedMessage),
       ours("Drained", "True", "NodeMaintenanceDrained", kDrainedMessage),
       ours("FrequentKubeletRestart", "False", "NodeMaintenanceLookalike", "a foreign type")});
  EXPECT_EQ(patch_of(node, intent(NodeLifecycle::kNotHeld)), expected(R"([
      {"type":"MaintenanceInProgress","$patch":"delete"},
      {"type":"DrainInProgress","$patch":"delete"},
      {"type":"Drained","$patch":"delete"}])"));
  EXPECT_EQ(patch_of(node_with({}), intent(NodeLifecycle::kNotHeld)), "none");
}

TEST(LifecyclePatchTest, ForeignWritersConditionsAreLeftAndNamed) {
  const kube::Node node = node_with(
      {ours("MaintenanceInProgress", "True", "RackReplacement", "the data centre's own tool"),
       ours("Drained", "False", "", "no reason at all")});
  const LifecyclePatch drained = lifecycle_patch(node, intent(NodeLifecycle::kDrained), kNow);
  EXPECT_EQ(drained.foreign, (std::vector<std::string>{"MaintenanceInProgress", "Drained"}));
  ASSERT_TRUE(drained.patch);
  const json::array& written = drained.patch->at("status").at("conditions").as_array();
  ASSERT_EQ(written.size(), 1U);
  EXPECT_EQ(written[0].at("type"), "DrainInProgress");
  // Removing: a foreign one is not ours to remove, and saying so is not needed.
  const LifecyclePatch removed = lifecycle_patch(node, intent(NodeLifecycle::kNotHeld), kNow);
  EXPECT_FALSE(removed.patch);
  EXPECT_TRUE(removed.foreign.empty());
}

TEST(LifecyclePatchTest, AnotherMaintenancesNodeIsLeftToIt) {
  kube::Node node = node_with({ours("MaintenanceInProgress", "True", "NodeMaintenance",
                                    "NodeMaintenance maintenance-older: firmware")});
  node.meta.annotations.set(std::string(kPriorStateAnnotation),
                            encode_prior_state(PriorState{.was_unschedulable = false,
                                                          .exclude_label = std::nullopt,
                                                          .cr_name = "maintenance-older",
                                                          .cr_uid = "uid-older"}));
  EXPECT_EQ(patch_of(node, intent(NodeLifecycle::kNotHeld)), "none");
  // Our own annotation: ours go.
  node.meta.annotations.set(std::string(kPriorStateAnnotation),
                            encode_prior_state(PriorState{.was_unschedulable = false,
                                                          .exclude_label = std::nullopt,
                                                          .cr_name = "maintenance-worker-01",
                                                          .cr_uid = "uid-1"}));
  EXPECT_EQ(patch_of(node, intent(NodeLifecycle::kNotHeld)),
            expected(R"([{"type":"MaintenanceInProgress","$patch":"delete"}])"));
}

TEST(LifecyclePatchTest, OwnershipIsTypeAndReasonPrefix) {
  EXPECT_TRUE(is_our_lifecycle_condition(ours("Drained", "True", "NodeMaintenanceDrained", "")));
  EXPECT_TRUE(
      is_our_lifecycle_condition(ours("MaintenanceInProgress", "True", "NodeMaintenance", "")));
  EXPECT_FALSE(is_our_lifecycle_condition(ours("Drained", "True", "Drained", "")));
  EXPECT_FALSE(is_our_lifecycle_condition(ours("Ready", "True", "NodeMaintenance", "")));
  EXPECT_FALSE(is_our_lifecycle_condition(
      ours("GracefulNodeShutdownInProgress", "True", "NodeMaintenance", "")));
  EXPECT_TRUE(
      is_our_lifecycle_condition(ours("MaintenancePlanned", "True", "MaintenancePlan", "")));
  EXPECT_FALSE(
      is_our_lifecycle_condition(ours("MaintenancePlanned", "True", "NodeMaintenance", "")));
  EXPECT_FALSE(is_our_lifecycle_condition(ours("MaintenancePlanned", "True", "Scheduled", "")));
}

const std::string kPlanned = "plan memory-upgrade, node 7 of 22, window Sat 22:00 Asia/Taipei";

std::string planned_of(const kube::Node& node, const std::optional<std::string>& message) {
  const auto patch = planned_patch(node, "memory-upgrade", message, kNow);
  return patch ? json::serialize(*patch) : "none";
}

TEST(PlannedTest, MessageNamesThePlanThePlaceAndTheWindow) {
  EXPECT_EQ(planned_message("memory-upgrade", 7, 22, "Sat 22:00 Asia/Taipei"), kPlanned);
  EXPECT_EQ(planned_message("memory-upgrade", 2, 3, ""), "plan memory-upgrade, node 2 of 3");
}

TEST(PlannedTest, PlannedAddsTheConditionWithTheNodesVersion) {
  EXPECT_EQ(planned_of(node_with({}), kPlanned),
            expected(R"([{"type":"MaintenancePlanned","status":"True","reason":"MaintenancePlan",)"
                     R"("message":")" +
                     kPlanned + R"(","lastHeartbeatTime":")" + kStamp +
                     R"(","lastTransitionTime":")" + kStamp + R"("}])"));
}

TEST(PlannedTest, NothingWhenTheNodeAlreadySaysItOrHasNone) {
  EXPECT_EQ(planned_of(node_with({ours("MaintenancePlanned", "True", "MaintenancePlan", kPlanned)}),
                       kPlanned),
            "none");
  EXPECT_EQ(planned_of(node_with({}), std::nullopt), "none");
}

TEST(PlannedTest, NewMessageKeepsTheTransitionTime) {
  const std::string now = "plan memory-upgrade, node 7 of 22";
  EXPECT_EQ(
      planned_of(node_with({ours("MaintenancePlanned", "True", "MaintenancePlan", kPlanned)}), now),
      expected(R"([{"type":"MaintenancePlanned","status":"True","reason":"MaintenancePlan",)"
               R"("message":")" +
               now + R"(","lastHeartbeatTime":")" + kStamp + R"(","lastTransitionTime":")" +
               kEarlier + R"("}])"));
}

TEST(PlannedTest, NotPlannedRemovesThePlansOwn) {
  EXPECT_EQ(planned_of(node_with({ours("MaintenancePlanned", "True", "MaintenancePlan", kPlanned)}),
                       std::nullopt),
            expected(R"([{"type":"MaintenancePlanned","$patch":"delete"}])"));
}

TEST(PlannedTest, AnotherWritersOrAnotherPlansIsLeft) {
  const kube::Node foreign =
      node_with({ours("MaintenancePlanned", "True", "ClusterUpgrade", "planned by the admin")});
  EXPECT_EQ(planned_of(foreign, kPlanned), "none");
  EXPECT_EQ(planned_of(foreign, std::nullopt), "none");
  const kube::Node other_plan = node_with(
      {ours("MaintenancePlanned", "True", "MaintenancePlan", "plan kernel-upgrade, node 1 of 3")});
  EXPECT_EQ(planned_of(other_plan, kPlanned), "none");
  EXPECT_EQ(planned_of(other_plan, std::nullopt), "none");
  // A plan whose name starts with this one's is another plan.
  const kube::Node longer = node_with({ours("MaintenancePlanned", "True", "MaintenancePlan",
                                            "plan memory-upgrade-2, node 1 of 3")});
  EXPECT_EQ(planned_of(longer, std::nullopt), "none");
}

TEST(WellKnownLifecycleConditionsTest, PicksTheFiveTypesInTheirLifesOrder) {
  const kube::Node node = node_with({
      ours("Drained", "True", "NodeMaintenanceDrained", kDrainedMessage),
      kube::NodeCondition{
          .type = "KernelDeadlock", .status = "False", .reason = "KernelHasNoDeadlock"},
      kube::NodeCondition{
          .type = "GracefulNodeShutdownInProgress", .status = "True", .reason = "Shutdown"},
      ours("MaintenanceInProgress", "True", "NodeMaintenance", kInProgress),
  });
  std::vector<std::string> types;
  for (const kube::NodeCondition& c : well_known_lifecycle_conditions(node))
    types.push_back(c.type);
  EXPECT_EQ(types, (std::vector<std::string>{"MaintenanceInProgress", "Drained",
                                             "GracefulNodeShutdownInProgress"}));
  EXPECT_TRUE(well_known_lifecycle_conditions(node_with({})).empty());
}

}  // namespace
}  // namespace nmo::op
