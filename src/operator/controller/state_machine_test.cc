#include "operator/controller/state_machine.h"

#include <algorithm>
#include <chrono>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "operator/api/failure.h"
#include "operator/node/node_patch.h"

namespace nmo::op {
namespace actions {

// A failed comparison of actions prints them as describe() does (times from the clock's epoch).
template <typename Kind>
concept KindOfAction = std::is_constructible_v<Action, const Kind&>;

template <KindOfAction Kind>
std::ostream& operator<<(std::ostream& out, const Kind& action) {
  return out << describe(Action(action), Clock::time_point{});
}

}  // namespace actions
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr std::string_view kNode = "worker-1";
constexpr std::string_view kUid = "uid-a";
constexpr std::string_view kLeaseRef = "medik8s-leases/node-worker-1";

const kube::Time kStart = std::chrono::sys_days{std::chrono::year{2026} / 3 / 1};

// The Event an Announce or an EmitEvent carries.
const events::Event& event_of(const Action& action) {
  if (const auto* announce = std::get_if<actions::Announce>(&action)) return announce->event;
  return std::get<actions::EmitEvent>(action).event;
}

kube::Pod pod(std::string name, std::string uid) {
  kube::Pod p;
  p.meta.namespace_ = "apps";
  p.meta.name = std::move(name);
  p.meta.uid = std::move(uid);
  p.node_name = std::string(kNode);
  p.phase = "Running";
  return p;
}

// A node cordoned and tainted by the maintenance with uid kUid (docs/design.md §2.3).
kube::Node maintained_node() {
  kube::Node node;
  node.meta.name = std::string(kNode);
  node.meta.uid = "node-uid";
  node.conditions = {{.type = "Ready", .status = "True"}};
  node.unschedulable = true;
  node.taints = {{.key = std::string(kUnschedulableTaintKey), .effect = "NoSchedule"},
                 {.key = std::string(kDrainTaintKey),
                  .value = std::string(kDrainTaintValue),
                  .effect = "NoSchedule"}};
  node.meta.labels.set(std::string(kExcludeFromRemediationLabel), "true");
  node.meta.annotations.set(
      std::string(kPriorStateAnnotation),
      encode_prior_state(PriorState{.cr_name = "nm-a", .cr_uid = std::string(kUid)}));
  return node;
}

kube::Lease lease_of(std::string holder, kube::Time renewed) {
  kube::Lease lease;
  lease.meta.name = "node-" + std::string(kNode);
  lease.meta.namespace_ = "medik8s-leases";
  lease.holder_identity = std::move(holder);
  lease.lease_duration_seconds = kNodeLeaseDurationSeconds;
  lease.acquire_time = renewed;
  lease.renew_time = renewed;
  return lease;
}

std::vector<std::string> reasons(const std::vector<Condition>& conditions, std::string_view type) {
  const Condition* c = find_condition(conditions, type);
  if (c == nullptr) return {};
  return {std::string(to_string(c->status)), c->reason, c->message};
}

class StateMachineTest : public ::testing::Test {
 protected:
  StateMachineTest() : clock_(Clock::time_point{hours(100)}) {
    in_.nm.meta.name = "nm-a";
    in_.nm.meta.uid = std::string(kUid);
    in_.nm.meta.resource_version = "10";
    in_.nm.meta.creation_timestamp = kStart;
    in_.nm.meta.finalizers = {std::string(kFinalizer)};
    in_.nm.spec.node_name = std::string(kNode);
    in_.nm.spec.reason = "kernel update";
    in_.has_finalizer = true;
    in_.node_synced = true;
    kube::Node node;
    node.meta.name = std::string(kNode);
    node.meta.uid = "node-uid";
    node.conditions = {{.type = "Ready", .status = "True"}};
    in_.node = node;
    in_.node_lease_ref = std::string(kLeaseRef);
    sync_clock();
  }

  void sync_clock() { in_.now = Now{.tick = clock_.now(), .wall = wall_}; }
  void advance(Clock::duration d) {
    clock_.advance(d);
    wall_ += std::chrono::duration_cast<std::chrono::microseconds>(d);
    sync_clock();
  }

  // A Pending maintenance whose gates were gathered.
  void pending(GateFacts gates) {
    in_.status.phase = Phase::kPending;
    in_.on_record = in_.status;
    gates_ = gates;
    in_.gates = &gates_;
  }

  // A Running maintenance whose node is cordoned, whose drain's start is on record and whose
  // node lease is ours and fresh; `pods` must leave.
  void running(std::vector<kube::Pod> pods) {
    in_.status.phase = Phase::kRunning;
    in_.status.total_pods = static_cast<std::int64_t>(pods.size());
    for (const kube::Pod& p : pods) {
      in_.status.pending_pods.push_back(p.meta.name);
      in_.status.pending_pods_refs.push_back(PendingPodRef{.namespace_ = p.meta.namespace_,
                                                           .name = p.meta.name,
                                                           .reason = PendingPodReason::kEvicting});
    }
    set_condition(in_.status.conditions,
                  Condition{.type = std::string(kConditionCordoned),
                            .status = ConditionStatus::kTrue,
                            .reason = "Cordoned"},
                  wall_);
    set_condition(in_.status.conditions,
                  Condition{.type = std::string(kConditionDrained),
                            .status = ConditionStatus::kFalse,
                            .reason = "Draining"},
                  wall_);
    in_.on_record = in_.status;
    in_.node = maintained_node();
    in_.node_lease = lease_of(std::string(kNodeLeaseHolder), wall_);
    in_.holds_slot = true;
    with_pods(PodFacts{.leaving = std::move(pods), .bound = 0});
  }

  // The status as upstream medik8s NMO leaves it with one pod to evict, `pending` (namespace
  // apps) still there: its counters (evictionPods: the pods it had to evict), no conditions.
  void upstream_status(Phase phase, const std::vector<std::string>& pending) {
    in_.status = NodeMaintenanceStatus{};
    in_.status.phase = phase;
    in_.status.eviction_pods = 1;
    in_.status.totalpods = 1;
    in_.status.drain_progress = phase == Phase::kSucceeded ? 100 : 0;
    for (const std::string& name : pending) {
      in_.status.pending_pods.push_back(name);
      in_.status.pending_pods_refs.push_back(PendingPodRef{.namespace_ = "apps", .name = name});
    }
    in_.on_record = in_.status;
  }

  std::vector<std::string> actions(const Decision& d) const {
    std::vector<std::string> out;
    for (const Action& a : d.actions) out.push_back(describe(a, in_.now.tick));
    return out;
  }

  // The pods of the node, as the reconcile gathered them (the inputs borrow them).
  void with_pods(PodFacts pods) {
    pods_ = std::move(pods);
    in_.pods = &pods_;
  }

  Decision run() { return decide(in_); }
  Decision run_deletion() { return decide_deletion(in_); }

  FakeClock clock_;
  kube::Time wall_ = kStart + hours(1);
  GateFacts gates_;
  PodFacts pods_;
  Inputs in_;
};

// ---- First sight (docs/design.md §2.1) ----

TEST_F(StateMachineTest, FirstTheFinalizer) {
  in_.has_finalizer = false;
  const Decision d = run();
  EXPECT_THAT(actions(d), ElementsAre("AddFinalizer"));
  EXPECT_FALSE(d.status.phase.has_value());
}

TEST_F(StateMachineTest, AFinalizerInFlightIsNotAddedAgain) {
  in_.has_finalizer = false;
  in_.finalizer_in_flight = true;
  EXPECT_THAT(actions(run()), IsEmpty());
}

TEST_F(StateMachineTest, FirstSightWritesPendingThenAnnouncesItThenGoesToTheGates) {
  EXPECT_TRUE(needs_gates(in_.status));
  gates_ = GateFacts{.lease = NodeLeaseState::kHeldByOther, .admitted = false};
  in_.gates = &gates_;
  const Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kPending);
  EXPECT_THAT(actions(d),
              ElementsAre("Log(maintenance requested)", "WriteStatus(Pending)",
                          "Announce(BeginMaintenance)",
                          "Log(waiting for a maintenance slot or the node lease)",
                          "WriteStatus(Pending)", "Announce(BlockedByNodeHealthCheck)"));
  EXPECT_EQ(event_of(d.actions[2]), events::begin_maintenance(kNode, "kernel update"));
}

// The reconcile gathers the gates and the pods whenever needs_gates() and needs_pods() say so;
// a caller that did not gets no decision on them.
TEST_F(StateMachineTest, WithoutTheFactsItNeedsItOnlyLooksAgain) {
  in_.status.phase = Phase::kPending;
  EXPECT_THAT(actions(run()), ElementsAre("Requeue(+200ms)"));
  gates_ = GateFacts{.admitted = true};
  in_.gates = &gates_;
  EXPECT_TRUE(needs_pods(in_.status, in_.gates));
  EXPECT_THAT(actions(run()), ElementsAre("Requeue(+200ms)"));
  running({});
  in_.pods = nullptr;
  EXPECT_THAT(actions(run()), ElementsAre("Requeue(+200ms)"));
}

TEST_F(StateMachineTest, TheFactsANeedDependsOnThePhase) {
  const GateFacts waiting{.admitted = false};
  const GateFacts admitted{.admitted = true};
  const GateFacts unsafe{.quorum = {.open = false, .recheck_at = std::nullopt}, .admitted = true};
  NodeMaintenanceStatus status;
  EXPECT_TRUE(needs_gates(status));
  EXPECT_FALSE(needs_pods(status, nullptr));
  EXPECT_FALSE(needs_pods(status, &waiting));
  EXPECT_FALSE(needs_pods(status, &unsafe));
  EXPECT_TRUE(needs_pods(status, &admitted));
  for (Phase held : {Phase::kRunning, Phase::kSucceeded}) {
    status.phase = held;
    EXPECT_FALSE(needs_gates(status));
    EXPECT_TRUE(needs_pods(status, nullptr));
  }
  status.phase = Phase::kFailed;
  status.conditions = {failure_condition(FailureKind::kTimeout, "t")};
  EXPECT_FALSE(needs_gates(status));
  EXPECT_TRUE(needs_pods(status, nullptr));  // a timed-out maintenance keeps its node
  status.conditions = {failure_condition(FailureKind::kNodeMissing, "gone")};
  EXPECT_FALSE(needs_pods(status, nullptr));
}

TEST_F(StateMachineTest, AnUnsyncedNodeCacheIsLookedAtAgainSoon) {
  in_.status.phase = Phase::kPending;
  in_.node_synced = false;
  EXPECT_THAT(actions(run()), ElementsAre("Requeue(+200ms)"));
}

TEST_F(StateMachineTest, AnInvalidSpecFailsAPendingMaintenanceWithoutTouchingAnything) {
  in_.status.phase = Phase::kPending;
  in_.nm.spec.drain_timeout_error = "spec.drainTimeout: invalid duration \"1d\"";
  const Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kFailed);
  EXPECT_EQ(failure_of(d.status), FailureKind::kInvalid);
  EXPECT_EQ(d.status.last_error, "spec.drainTimeout: invalid duration \"1d\"");
  EXPECT_THAT(actions(d), ElementsAre("Log(maintenance failed)", "WriteStatus(Failed)",
                                      "Announce(FailedMaintenance)"));
}

// ---- Pending: the gates (docs/design.md §2.2) ----

TEST_F(StateMachineTest, PendingWaitsOnUnsafeEtcdQuorumAndAnnouncesItOnce) {
  pending(GateFacts{.quorum = {.open = false, .recheck_at = std::nullopt}});
  Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kPending);
  EXPECT_THAT(reasons(d.status.conditions, kConditionBlocked),
              ElementsAre("True", "EtcdQuorum", etcd_quorum_blocked_message(kNode)));
  EXPECT_THAT(actions(d), ElementsAre("Log(waiting: etcd quorum would be lost)",
                                      "WriteStatus(Pending)", "Announce(BlockedByEtcdQuorum)"));
  EXPECT_EQ(event_of(d.actions[2]).type, kube::EventType::kWarning);

  in_.status = d.status;
  advance(seconds(3));
  EXPECT_THAT(actions(run()), ElementsAre("WriteStatus(Pending)"));
}

TEST_F(StateMachineTest, PendingWaitsForTheQuorumWindowWithoutAnnouncing) {
  in_.etcd_quorum_stable_for = seconds(30);
  pending(GateFacts{.quorum = {.open = false, .recheck_at = in_.now.tick + seconds(30)}});
  const Decision d = run();
  EXPECT_THAT(reasons(d.status.conditions, kConditionBlocked),
              ElementsAre("True", "EtcdQuorum",
                          "etcd quorum is safe; waiting until it has stayed so for 30s"));
  EXPECT_THAT(actions(d), ElementsAre("WriteStatus(Pending, no wake)",
                                      "Log(etcd quorum is safe; waiting for it to stay so)",
                                      "Requeue(+30000ms)"));
}

TEST_F(StateMachineTest, PendingWaitsForASlotOrTheNodeLeaseAndAnnouncesItOnce) {
  pending(GateFacts{.lease = NodeLeaseState::kHeldByOther, .admitted = false, .slots_used = 1});
  const Decision d = run();
  EXPECT_THAT(
      reasons(d.status.conditions, kConditionBlocked),
      ElementsAre("True", "WaitingForLease", events::blocked_by_node_health_check().message));
  EXPECT_THAT(actions(d),
              ElementsAre("Log(waiting for a maintenance slot or the node lease)",
                          "WriteStatus(Pending)", "Announce(BlockedByNodeHealthCheck)"));

  in_.status = d.status;
  EXPECT_THAT(actions(run()), ElementsAre("WriteStatus(Pending)"));
}

TEST_F(StateMachineTest, PendingLooksAgainJustAfterAForeignNodeLeaseRunsOut) {
  pending(GateFacts{.lease = NodeLeaseState::kHeldByOther,
                    .admitted = false,
                    .slots_used = 1,
                    .foreign_lease_expiry = in_.now.wall + seconds(12)});
  EXPECT_THAT(
      actions(run()),
      ElementsAre("Log(waiting for a maintenance slot or the node lease)", "WriteStatus(Pending)",
                  "Announce(BlockedByNodeHealthCheck)", "Requeue(+13000ms)"));
}

// One decision admits, believes Running, cordons the node and records the drain's start: a
// refused or failed take stops the list before anything after it (docs/design.md §2.2, §2.3).
TEST_F(StateMachineTest, AnAdmittedMaintenanceTakesTheLeasesThenRunsAndCordonsInOneDecision) {
  pending(GateFacts{.admitted = true, .slots_used = 0});
  with_pods(PodFacts{.leaving = {pod("web-1", "p1"), pod("web-2", "p2")}, .bound = 4});
  const Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kRunning);
  EXPECT_EQ(d.status.totalpods, 4);
  EXPECT_EQ(d.status.total_pods, 2);
  EXPECT_EQ(d.status.eviction_pods, 0);
  EXPECT_THAT(d.status.pending_pods, ElementsAre("web-1", "web-2"));
  EXPECT_THAT(reasons(d.status.conditions, kConditionBlocked),
              ElementsAre("False", "Draining", ""));
  EXPECT_THAT(reasons(d.status.conditions, kConditionCordoned),
              ElementsAre("True", "Cordoned", ""));
  EXPECT_THAT(reasons(d.status.conditions, kConditionDrained),
              ElementsAre("False", "Draining", ""));
  // The node lease just taken is not renewed; no eviction before the drain's start is on record
  // and the patch has worked: a look again right after the write.
  EXPECT_THAT(actions(d),
              ElementsAre("TakeSlot", "TakeNodeLease", "Event(LeaseAcquired)",
                          "Log(admitted: slot and node lease taken)", "ForgetQuorum",
                          "Believe(Running)", "Cordon(then NodeCordoned)",
                          "Log(node cordoned and tainted)", "Log(drain started)", "Requeue(+200ms)",
                          "WriteStatus(Running)", "Announce(BeginEviction)"));
  EXPECT_EQ(event_of(d.actions[2]), events::lease_acquired(kLeaseRef, kNode));
  const auto& cordon = std::get<actions::Cordon>(d.actions[6]);
  EXPECT_EQ(cordon.event_if_changed, events::node_cordoned(kNode));
  EXPECT_EQ(cordon.note_if_changed, std::nullopt);
  EXPECT_EQ(event_of(d.actions.back()), events::begin_eviction(2, kNode));
}

// A failed take (its handler sets the retry time) is not tried again before then, whatever
// wakes the maintenance meanwhile (its own slot's create and delete do at once).
TEST_F(StateMachineTest, AFailedAdmissionIsNotTriedAgainBeforeItsRetryTime) {
  pending(GateFacts{.admitted = true});
  with_pods(PodFacts{});
  in_.drain.admission_retry_at = in_.now.tick + seconds(10);
  EXPECT_THAT(actions(run()), ElementsAre("Requeue(+10000ms)"));
  advance(seconds(10));
  EXPECT_EQ(actions(run()).front(), "TakeSlot");
}

TEST_F(StateMachineTest, AResumedAdmissionDoesNotAnnounceTheLeaseAgain) {
  pending(GateFacts{.lease = NodeLeaseState::kOurs, .admitted = true, .holds_slot = true});
  with_pods(PodFacts{});
  const auto list = actions(run());
  EXPECT_EQ(list.at(0), "TakeSlot");
  EXPECT_EQ(list.at(1), "TakeNodeLease");
  EXPECT_EQ(std::count(list.begin(), list.end(), "Event(LeaseAcquired)"), 0);
}

// ---- Running: the node (docs/design.md §2.3, §2.5) ----

TEST_F(StateMachineTest, ANodeCordonedByAnEarlierRunIsNotPatchedNorAnnouncedAgain) {
  running({pod("web-1", "p1")});
  in_.status.conditions.clear();  // the earlier run stopped before recording the cordon
  in_.on_record = in_.status;
  const Decision d = run();
  EXPECT_THAT(reasons(d.status.conditions, kConditionCordoned),
              ElementsAre("True", "Cordoned", ""));
  const auto list = actions(d);
  EXPECT_EQ(std::count_if(list.begin(), list.end(),
                          [](const std::string& a) { return a.starts_with("Cordon"); }),
            0);
  EXPECT_EQ(std::count(list.begin(), list.end(), "Log(node cordoned and tainted)"), 1);
}

// The patch decides whether MaintenanceReapplied is said (the cache may lag behind a node
// already right); no eviction starts in the decision that patches the node.
TEST_F(StateMachineTest, AnUndoneCordonIsPutBackAndAnnouncedAsAWarningWithNoEvictionMeanwhile) {
  running({pod("web-1", "p1")});
  in_.node->unschedulable = false;
  const Decision d = run();
  const auto list = actions(d);
  EXPECT_EQ(list.front(), "Cordon(then MaintenanceReapplied)");
  EXPECT_EQ(std::count(list.begin(), list.end(), "StartEviction(web-1)"), 0);
  EXPECT_EQ(std::count(list.begin(), list.end(), "Requeue(+200ms)"), 1);
  const auto& cordon = std::get<actions::Cordon>(d.actions.front());
  ASSERT_TRUE(cordon.event_if_changed.has_value());
  EXPECT_EQ(cordon.event_if_changed->type, kube::EventType::kWarning);
  ASSERT_TRUE(cordon.note_if_changed.has_value());
  EXPECT_EQ(cordon.note_if_changed->message,
            "someone undid the cordon or the taint; applied again");

  // The node right again: the eviction starts.
  in_.node->unschedulable = true;
  EXPECT_THAT(actions(run()),
              ElementsAre("Requeue(+900000ms)", "StartEviction(web-1)", "WriteStatus(Running)"));
}

// ---- Running: the node lease (docs/design.md §3.1) ----

TEST_F(StateMachineTest, TheNodeLeaseIsRenewedOnTime) {
  running({pod("web-1", "p1")});
  EXPECT_THAT(actions(run()),
              ElementsAre("Requeue(+900000ms)", "StartEviction(web-1)", "WriteStatus(Running)"));
  advance(minutes(15));
  const auto list = actions(run());
  EXPECT_EQ(list.front(), "RenewNodeLease");
  EXPECT_EQ(std::count(list.begin(), list.end(), "RenewNodeLease"), 1);
}

// The renewal's answer comes to the next decision; the cache may still show the old Lease then,
// and the renewed one's change brings the look after.
TEST_F(StateMachineTest, ARenewedLeaseResetsTheErrorCountAndIsNotRenewedTwice) {
  running({pod("web-1", "p1")});
  advance(minutes(15));
  in_.status.error_on_lease_count = 2;
  in_.drain.renewal = LeaseRenewal::kRenewed;
  const Decision d = run();
  EXPECT_EQ(d.status.error_on_lease_count, 0);
  EXPECT_EQ(d.drain.renewal, std::nullopt);
  const auto list = actions(d);
  EXPECT_EQ(std::count(list.begin(), list.end(), "RenewNodeLease"), 0);
}

TEST_F(StateMachineTest, ARenewalFoundHeldByAnotherHolderIsCountedByTheNextDecision) {
  running({pod("web-1", "p1")});
  in_.drain.renewal = LeaseRenewal::kHeldByOther;
  const Decision d = run();
  EXPECT_EQ(d.status.error_on_lease_count, 1);
  EXPECT_EQ(d.status.last_error, "the node lease is held by another holder");
  EXPECT_EQ(d.drain.renewal, std::nullopt);
}

TEST_F(StateMachineTest, AForeignNodeLeaseIsCountedOncePerCheck) {
  running({pod("web-1", "p1")});
  in_.node_lease = lease_of("NodeHealthCheck-x", wall_);
  Decision d = run();
  EXPECT_EQ(d.status.error_on_lease_count, 1);
  EXPECT_EQ(d.status.last_error, "the node lease is held by another holder");
  EXPECT_EQ(d.drain.lease_recheck_at, in_.now.tick + seconds(5));
  EXPECT_EQ(actions(d)[0], "Log(the node lease is held by another holder)");
  EXPECT_EQ(actions(d)[1], "Requeue(+5000ms)");

  // An event a second later changes nothing; the next check counts again.
  in_.status = d.status;
  in_.drain = d.drain;
  advance(seconds(1));
  EXPECT_EQ(run().status.error_on_lease_count, 1);
  advance(seconds(4));
  EXPECT_EQ(run().status.error_on_lease_count, 2);
}

// ---- Running -> Succeeded (docs/design.md §2.4) ----

TEST_F(StateMachineTest, DueEvictionsStartOnceTheDrainIsOnRecord) {
  running({pod("web-1", "p1"), pod("web-2", "p2")});
  const Decision d = run();
  EXPECT_THAT(actions(d), ElementsAre("Requeue(+900000ms)", "StartEviction(web-1)",
                                      "StartEviction(web-2)", "WriteStatus(Running)"));
  EXPECT_EQ(d.drain.in_flight, 2);
  EXPECT_TRUE(d.drain.evictions.at("p1").in_flight);
}

TEST_F(StateMachineTest, AHeldDrainStartsNoEvictionAndGoesOnWhenTheHoldIsLifted) {
  running({pod("web-1", "p1"), pod("web-2", "p2")});
  in_.nm.meta.annotations.set(std::string(kHoldAnnotation),
                              "MaintenancePlan rack-a is outside its maintenance windows until "
                              "Sat 22:00 Asia/Taipei");
  Decision d = run();
  for (const std::string& a : actions(d)) {
    EXPECT_EQ(a.find("StartEviction"), std::string::npos) << a;
  }
  ASSERT_EQ(d.status.pending_pods_refs.size(), 2U);
  EXPECT_EQ(d.status.pending_pods_refs[0].reason, PendingPodReason::kHeld);
  EXPECT_EQ(d.status.pending_pods_refs[0].message,
            "eviction held: MaintenancePlan rack-a is outside its maintenance windows until Sat "
            "22:00 Asia/Taipei");
  EXPECT_EQ(d.status.phase, Phase::kRunning);
  EXPECT_THAT(reasons(d.status.conditions, kConditionBlocked)[1], "Held");

  in_.status = d.status;
  in_.on_record = d.status;
  in_.drain = d.drain;
  in_.nm.meta.annotations = {};
  advance(seconds(1));
  d = run();
  int started = 0;
  for (const Action& a : d.actions)
    started += std::holds_alternative<actions::StartEviction>(a) ? 1 : 0;
  EXPECT_EQ(started, 2);
}

// ---- Adopted from upstream medik8s NMO (docs/design.md §2.8) ----

TEST_F(StateMachineTest, AnUpstreamSucceededMaintenanceIsNotAnnouncedAndItsConditionsSaySucceeded) {
  running({});
  upstream_status(Phase::kSucceeded, {});
  const Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kSucceeded);
  EXPECT_EQ(d.status.total_pods, 1);
  EXPECT_EQ(d.status.eviction_pods, 1);
  EXPECT_EQ(d.status.drain_progress, 100);
  EXPECT_THAT(reasons(d.status.conditions, kConditionDrained), ElementsAre("True", "Drained", ""));
  EXPECT_THAT(reasons(d.status.conditions, kConditionReady), ElementsAre("True", "Succeeded", ""));
  for (const std::string& a : actions(d))
    EXPECT_EQ(a.find("BeginEviction"), std::string::npos) << a;
}

TEST_F(StateMachineTest, AnUpstreamRunningMaintenanceCountsItsPendingPodsAsNotGone) {
  running({pod("web-1", "p1")});
  upstream_status(Phase::kRunning, {"web-1"});
  const Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kRunning);
  EXPECT_EQ(d.status.total_pods, 1);
  EXPECT_EQ(d.status.eviction_pods, 0);
  EXPECT_EQ(d.status.drain_progress, 0);
  EXPECT_THAT(d.status.pending_pods, ElementsAre("web-1"));
}

TEST_F(StateMachineTest, EvictionsInFlightAreBoundedPerNode) {
  running({pod("web-1", "p1"), pod("web-2", "p2"), pod("web-3", "p3")});
  in_.evictions_in_flight = 2;
  const Decision d = run();
  int started = 0;
  for (const Action& a : d.actions)
    started += std::holds_alternative<actions::StartEviction>(a) ? 1 : 0;
  EXPECT_EQ(started, 2);
}

TEST_F(StateMachineTest, EvictionsInFlightAreBoundedAcrossMaintenances) {
  running({pod("web-1", "p1"), pod("web-2", "p2"), pod("web-3", "p3"), pod("web-4", "p4")});
  in_.evictions_in_flight_total = 3;
  in_.evictions_in_flight_elsewhere = 2;  // the other maintenances'
  const Decision d = run();
  EXPECT_THAT(actions(d), ElementsAre("Requeue(+900000ms)", "StartEviction(web-1)",
                                      "Requeue(+1000ms)", "WriteStatus(Running)"));
  EXPECT_EQ(d.drain.in_flight, 1);
  EXPECT_TRUE(d.drain.waits_for_total);
  EXPECT_EQ(d.status.pending_pods.size(), 4U);

  // The other maintenances' evictions answered, and this one's: the held pods go out, up to
  // the bound, and nothing waits any more once every due pod is sent.
  in_.status = d.status;
  in_.drain = d.drain;
  in_.drain.inbox.push_back(
      EvictionReport{.pod = pod("web-1", "p1"),
                     .answer = kube::EvictionResult{.outcome = kube::EvictionOutcome::kEvicted}});
  in_.evictions_in_flight_elsewhere = 0;
  pods_.leaving.erase(pods_.leaving.begin());  // web-1 left
  advance(seconds(1));
  const Decision next = run();
  int started = 0;
  for (const Action& a : next.actions)
    started += std::holds_alternative<actions::StartEviction>(a) ? 1 : 0;
  EXPECT_EQ(started, 3);
  EXPECT_EQ(next.drain.in_flight, 3);
  EXPECT_FALSE(next.drain.waits_for_total);
}

TEST_F(StateMachineTest, ARefusalFromTheInboxBlocksThePodAndIsReportedWithThePod) {
  running({pod("web-1", "p1")});
  Decision first = run();
  in_.status = first.status;
  in_.drain = first.drain;
  kube::EvictionResult refused{.outcome = kube::EvictionOutcome::kBlockedByPdb,
                               .status = Error(ErrorCode::kTooManyRequests,
                                               "Cannot evict pod as it would violate the pod's "
                                               "disruption budget.")};
  in_.drain.inbox.push_back(EvictionReport{.pod = pod("web-1", "p1"), .answer = refused});
  advance(seconds(1));
  const Decision d = run();
  EXPECT_THAT(actions(d), ElementsAre("Requeue(+899000ms)", "Log(eviction refused; will retry)",
                                      "WakeAfter(5000ms)", "Event(DrainError about web-1)",
                                      "Requeue(+5000ms)", "WriteStatus(Running)"));
  EXPECT_EQ(d.status.pending_pods_refs.at(0).reason, PendingPodReason::kBlockedByPdb);
  EXPECT_EQ(d.status.last_error,
            "Cannot evict pod as it would violate the pod's disruption budget.");
  EXPECT_THAT(reasons(d.status.conditions, kConditionBlocked),
              ElementsAre("True", "BlockedByPDB", d.status.last_error));
  EXPECT_TRUE(d.drain.inbox.empty());
  EXPECT_EQ(d.drain.in_flight, 0);
}

// ---- Retry when the budget allows (docs/design.md §2.4) ----

class BudgetRetryTest : public StateMachineTest {
 protected:
  // Every leaving pod under the one budget apps/web, at `version`, allowing `allowed`.
  void under_budget(const std::string& version, std::int32_t allowed) {
    for (const kube::Pod& p : pods_.leaving) {
      pods_.budgets[p.meta.uid] = BudgetFact{.key = "apps/web",
                                             .resource_version = version,
                                             .allows = allowed > 0,
                                             .disruptions_allowed = allowed,
                                             .granted_at = std::nullopt,
                                             .allowing_since = std::nullopt};
    }
  }

  // Every leaving pod's eviction sent under apps/web at version 7, then refused by it.
  void refused_at_version_7() {
    under_budget("7", 1);
    Decision sent = run();
    ASSERT_EQ(started(sent), static_cast<int>(pods_.leaving.size()));
    ASSERT_EQ(sent.drain.evictions.at("p1").sent_at_version, "7");
    in_.status = sent.status;
    in_.drain = sent.drain;
    for (const kube::Pod& p : pods_.leaving) {
      in_.drain.inbox.push_back(EvictionReport{
          .pod = p,
          .answer = kube::EvictionResult{.outcome = kube::EvictionOutcome::kBlockedByPdb,
                                         .status = Error(ErrorCode::kTooManyRequests,
                                                         "Cannot evict pod as it would violate "
                                                         "the pod's disruption budget.")}});
    }
    Decision applied = run();
    ASSERT_EQ(applied.drain.evictions.at("p1").blocked_by, "apps/web");
    ASSERT_EQ(applied.drain.evictions.at("p1").blocked_at_version, "7");
    in_.status = applied.status;
    in_.drain = applied.drain;
  }

  int started(const Decision& d) const {
    int n = 0;
    for (const Action& a : d.actions) n += std::holds_alternative<actions::StartEviction>(a);
    return n;
  }
};

TEST_F(BudgetRetryTest, ARefusedPodIsRetriedAsSoonAsItsBudgetChangesAndAllows) {
  running({pod("web-1", "p1")});
  ASSERT_NO_FATAL_FAILURE(refused_at_version_7());
  advance(std::chrono::milliseconds(300));
  // The cache still shows the version the refusal contradicted: only the backoff.
  EXPECT_EQ(started(run()), 0);
  // A new version that allows none: still the backoff.
  under_budget("8", 0);
  EXPECT_EQ(started(run()), 0);
  // A new version that allows one, seen 40 ms ago: sent now, 4.7 s before the backoff ends.
  under_budget("9", 1);
  pods_.budgets["p1"].allowing_since = in_.now.tick - std::chrono::milliseconds(40);
  const Decision d = run();
  const auto list = actions(d);
  EXPECT_EQ(std::count(list.begin(), list.end(), "StartEviction(web-1, budget allows since 40ms)"),
            1)
      << ::testing::PrintToString(list);
  EXPECT_EQ(d.drain.evictions.at("p1").sent_at_version, "9");
}

TEST_F(BudgetRetryTest, AnEarlyRetrySendsNoMoreThanTheBudgetAllows) {
  running({pod("web-1", "p1"), pod("web-2", "p2"), pod("web-3", "p3")});
  ASSERT_NO_FATAL_FAILURE(refused_at_version_7());
  under_budget("8", 1);
  EXPECT_EQ(started(run()), 1);
}

TEST_F(BudgetRetryTest, AGrantedEvictionWhosePodWasNotDeletedIsNotAskedAgainUntilFreed) {
  running({pod("web-1", "p1")});
  under_budget("7", 0);
  pods_.budgets["p1"].granted_at = wall_ - seconds(30);
  const Decision d = run();
  EXPECT_EQ(started(d), 0);
  const auto list = actions(d);
  EXPECT_EQ(std::count(list.begin(), list.end(), "Requeue(+91000ms)"), 1)
      << ::testing::PrintToString(list);
  EXPECT_EQ(std::count_if(list.begin(), list.end(),
                          [](const std::string& a) { return a.find("DrainError") != a.npos; }),
            0);
  ASSERT_EQ(d.status.pending_pods_refs.size(), 1U);
  EXPECT_EQ(d.status.pending_pods_refs[0].reason, PendingPodReason::kBlockedByPdb);
  EXPECT_EQ(d.status.pending_pods_refs[0].message,
            "eviction granted by PodDisruptionBudget apps/web at " +
                kube::format_time(wall_ - seconds(30)) +
                " but the pod was not deleted; the budget frees it by " +
                kube::format_time(wall_ + seconds(90)));

  // The disruption controller dropped the grant: the budget's new version allows, and the pod
  // goes at once.
  in_.status = d.status;
  in_.drain = d.drain;
  advance(seconds(91));
  under_budget("8", 1);
  EXPECT_EQ(started(run()), 1);
}

TEST_F(BudgetRetryTest, AGrantedEvictionUnderABudgetWithRoomIsJustSent) {
  running({pod("web-1", "p1")});
  under_budget("7", 1);
  pods_.budgets["p1"].granted_at = wall_ - seconds(30);
  EXPECT_EQ(started(run()), 1);
}

// ---- KubeVirt VMs (docs/design.md §2.9) ----

TEST_F(StateMachineTest, AVmPodWhoseEvictionWouldShutTheVmDownIsHeldAndAnnouncedOnce) {
  running({pod("virt-launcher-db-x", "p1"), pod("web-1", "p2")});
  const Vmi vmi{.namespace_ = "apps",
                .name = "db",
                .live_migratable = false,
                .not_migratable_because = "PVC db-disk is not shared"};
  pods_.vms["p1"] = decide_vm(vmi, std::nullopt, VmEvictionPolicy::kLiveMigrate);
  const Decision d = run();
  EXPECT_THAT(actions(d),
              ElementsAre("Requeue(+900000ms)",
                          "Log(holding a VM's pod: its eviction would shut the VM down)",
                          "Event(VMWouldShutDown about virt-launcher-db-x)", "Requeue(+10000ms)",
                          "StartEviction(web-1)", "WriteStatus(Running)"));
  ASSERT_EQ(d.status.pending_pods_refs.size(), 2U);
  EXPECT_EQ(d.status.pending_pods_refs.at(0).name, "virt-launcher-db-x");
  EXPECT_EQ(d.status.pending_pods_refs.at(0).reason, PendingPodReason::kVmWouldShutDown);
  EXPECT_EQ(d.status.pending_pods_refs.at(0).message,
            "VMI apps/db cannot live-migrate: PVC db-disk is not shared and has no eviction "
            "strategy: evicting its pod would shut it down; set vmEvictionPolicy AllowShutdown on "
            "the maintenance to allow that");
  EXPECT_THAT(reasons(d.status.conditions, kConditionBlocked)[1], "VMWouldShutDown");
  EXPECT_EQ(d.status.phase, Phase::kRunning);

  // Still held ten seconds later: no second Event.
  in_.status = d.status;
  in_.drain = d.drain;
  advance(seconds(10));
  const Decision again = run();
  for (const std::string& a : actions(again)) {
    EXPECT_EQ(a.find("VMWouldShutDown"), std::string::npos) << a;
    EXPECT_EQ(a.find("StartEviction(virt-launcher-db-x)"), std::string::npos) << a;
  }

  // Shutdown allowed: the pod is evicted.
  in_.status = again.status;
  in_.drain = again.drain;
  pods_.vms["p1"] = decide_vm(vmi, std::nullopt, VmEvictionPolicy::kAllowShutdown);
  advance(seconds(1));
  const Decision allowed = run();
  EXPECT_THAT(actions(allowed), ::testing::Contains("StartEviction(virt-launcher-db-x)"));
  EXPECT_FALSE(allowed.drain.evictions.at("p1").vm_hold.has_value());
}

// A VM the operator live-migrates: the migration's life as the drain sees it.
class VmMigrationTest : public StateMachineTest {
 protected:
  // The pod of VMI `vmi` (uid `uid`), which can migrate and has no eviction strategy.
  kube::Pod vm_pod(const std::string& vmi, const std::string& uid) {
    kube::Pod p = pod("virt-launcher-" + vmi + "-x", uid);
    p.meta.labels.set("kubevirt.io", "virt-launcher");
    p.meta.annotations.set("kubevirt.io/domain", vmi);
    pods_.vms[uid] = decide_vm(Vmi{.namespace_ = "apps", .name = vmi, .live_migratable = true},
                               std::nullopt, VmEvictionPolicy::kLiveMigrate);
    return p;
  }
  // running() with `pods`, keeping the verdicts vm_pod() gave.
  void running_with_vms(std::vector<kube::Pod> pods) {
    const std::map<std::string, VmVerdict> vms = pods_.vms;
    running(std::move(pods));
    pods_.vms = vms;
  }
  // The next decision, from the previous one's status and memory.
  Decision next(const Decision& d, Clock::duration later) {
    in_.status = d.status;
    in_.on_record = d.status;
    std::vector<MigrationReport> answers = std::move(in_.drain.migration_inbox);
    in_.drain = d.drain;
    in_.drain.migration_inbox = std::move(answers);
    advance(later);
    Decision out = run();
    in_.drain.migration_inbox.clear();  // applied (decide() took a copy)
    return out;
  }
  // The operator's migration of `vmi` as listed.
  void listed(const std::string& vmi, int attempt, std::string phase, std::string failure = "") {
    pods_.migrations["apps/" + vmi].push_back(Migration{.namespace_ = "apps",
                                                        .name = migration_name(vmi, kUid, attempt),
                                                        .vmi_name = vmi,
                                                        .attempt = attempt,
                                                        .phase = std::move(phase),
                                                        .failure = std::move(failure)});
  }
  // The answer of the create of `vmi`'s `attempt`.
  void created(const std::string& vmi, int attempt, Result<void> answer = {}) {
    in_.drain.migration_inbox.push_back(
        MigrationReport{.request = MigrationRequest{.namespace_ = "apps",
                                                    .name = migration_name(vmi, kUid, attempt),
                                                    .vmi = vmi,
                                                    .attempt = attempt},
                        .created = std::move(answer)});
  }
  static const PendingPodRef& ref(const Decision& d, const std::string& name) {
    for (const PendingPodRef& r : d.status.pending_pods_refs) {
      if (r.name == name) return r;
    }
    ADD_FAILURE() << name << " is not pending";
    static const PendingPodRef kNone;
    return kNone;
  }
};

TEST_F(VmMigrationTest, TheStorysVmIsLiveMigratedNotEvictedAndItsPodEndsByItself) {
  const kube::Pod vm = vm_pod("order", "p1");
  running_with_vms({vm, pod("web-1", "p2")});
  Decision d = run();
  EXPECT_THAT(actions(d), ElementsAre("Requeue(+900000ms)", "Requeue(+2000ms)",
                                      "CreateMigration(order-maintenance-uid-a-1)",
                                      "Log(live-migrating a VM instead of evicting its pod)",
                                      "Event(MigratingVM about virt-launcher-order-x)",
                                      "StartEviction(web-1)", "WriteStatus(Running)"));
  EXPECT_EQ(event_of(d.actions[4]),
            events::migrating_vm("apps/order", kNode, "order-maintenance-uid-a-1"));
  EXPECT_EQ(ref(d, "virt-launcher-order-x").reason, PendingPodReason::kMigratingVm);
  EXPECT_EQ(ref(d, "virt-launcher-order-x").message,
            "starting live migration order-maintenance-uid-a-1 of VMI apps/order");
  EXPECT_EQ(d.actions[2], Action(actions::CreateMigration{
                              .request = MigrationRequest{.namespace_ = "apps",
                                                          .name = "order-maintenance-uid-a-1",
                                                          .vmi = "order",
                                                          .attempt = 1}}));

  // Created; the next list shows it running: nothing more is started.
  created("order", 1);
  d = next(d, seconds(1));
  EXPECT_EQ(ref(d, "virt-launcher-order-x").message, "starting live migration of VMI apps/order");
  listed("order", 1, "Running");
  d = next(d, seconds(2));
  EXPECT_EQ(ref(d, "virt-launcher-order-x").message,
            "live migration order-maintenance-uid-a-1 of VMI apps/order: Running");
  for (const std::string& a : actions(d)) {
    EXPECT_EQ(a.find("CreateMigration"), std::string::npos) << a;
    EXPECT_EQ(a.find("StartEviction(virt-launcher"), std::string::npos) << a;
  }

  // Succeeded: counted once, and the pod is waited for, not evicted.
  pods_.migrations.clear();
  listed("order", 1, "Succeeded");
  d = next(d, seconds(2));
  EXPECT_THAT(actions(d), ::testing::Contains("MigrationEnded(succeeded)"));
  EXPECT_EQ(ref(d, "virt-launcher-order-x").message,
            "VMI apps/order live-migrated (migration order-maintenance-uid-a-1); waiting for its "
            "pod to end");
  d = next(d, seconds(2));
  EXPECT_THAT(actions(d), Not(::testing::Contains("MigrationEnded(succeeded)")));

  // The source pod has ended and the web pod is gone: Succeeded.
  pods_.leaving.clear();
  d = next(d, seconds(2));
  EXPECT_EQ(d.status.phase, Phase::kSucceeded);
}

TEST_F(VmMigrationTest, AFailedMigrationIsAnnouncedAndRetriedAfterABackoff) {
  running_with_vms({vm_pod("order", "p1")});
  listed("order", 1, "Failed", "target pod unschedulable");
  Decision d = run();
  EXPECT_THAT(actions(d), ElementsAre("Requeue(+900000ms)", "Requeue(+2000ms)",
                                      "Log(a live migration failed; retrying)",
                                      "Event(MigrationFailed about virt-launcher-order-x)",
                                      "Requeue(+5000ms)", "WriteStatus(Running)"));
  EXPECT_EQ(event_of(d.actions[3]),
            events::migration_failed("live migration apps/order-maintenance-uid-a-1 of VMI "
                                     "apps/order failed: target pod unschedulable; attempt 2 in "
                                     "5s"));
  EXPECT_EQ(ref(d, "virt-launcher-order-x").message,
            "live migration apps/order-maintenance-uid-a-1 of VMI apps/order failed: target pod "
            "unschedulable; trying again (1 failed so far)");
  EXPECT_EQ(d.status.last_error, event_of(d.actions[3]).message);

  // Not before the backoff, and announced once.
  d = next(d, seconds(4));
  for (const std::string& a : actions(d)) {
    EXPECT_EQ(a.find("CreateMigration"), std::string::npos) << a;
    EXPECT_EQ(a.find("MigrationFailed"), std::string::npos) << a;
  }
  d = next(d, seconds(1));
  EXPECT_THAT(actions(d), ::testing::Contains("CreateMigration(order-maintenance-uid-a-2)"));

  // The second fails too: twice the pause.
  created("order", 2);
  listed("order", 2, "Failed", "again");
  d = next(d, seconds(1));
  EXPECT_EQ(d.status.last_error,
            "live migration apps/order-maintenance-uid-a-2 of VMI apps/order failed: again; "
            "attempt 3 in 10s");
  d = next(d, seconds(10));
  EXPECT_THAT(actions(d), ::testing::Contains("CreateMigration(order-maintenance-uid-a-3)"));
}

TEST_F(VmMigrationTest, AtMostTwoMigrationsAtOnceAndNoneAfterAFailure) {
  running_with_vms({vm_pod("a", "p1"), vm_pod("b", "p2"), vm_pod("c", "p3")});
  Decision d = run();
  const auto list = actions(d);
  EXPECT_EQ(std::count_if(list.begin(), list.end(),
                          [](const std::string& a) { return a.starts_with("CreateMigration"); }),
            kMaxMigrationsPerMaintenance);
  EXPECT_EQ(ref(d, "virt-launcher-c-x").message,
            "waiting to live-migrate VMI apps/c: 2 live migrations of this maintenance are "
            "running");

  // A refused create is retried after the backoff, with a DrainError.
  created("a", 1, Error(ErrorCode::kForbidden, "no permission"));
  created("b", 1);
  d = next(d, seconds(1));
  EXPECT_THAT(actions(d), ::testing::Contains("Event(DrainError)"));
  EXPECT_THAT(actions(d), ::testing::Contains("CreateMigration(c-maintenance-uid-a-1)"));
  EXPECT_THAT(d.status.last_error, ::testing::HasSubstr("could not create live migration "
                                                        "apps/a-maintenance-uid-a-1: "));

  // A maintenance failed by its drain timeout starts no more migrations.
  in_.nm.spec.drain_timeout = minutes(1);
  created("c", 1);
  d = next(d, minutes(2));
  EXPECT_EQ(d.status.phase, Phase::kFailed);
  EXPECT_THAT(actions(d), ::testing::Contains("CancelMigrations"));
  d = next(d, minutes(1));
  for (const std::string& a : actions(d)) {
    EXPECT_EQ(a.find("CreateMigration"), std::string::npos) << a;
  }
}

TEST_F(StateMachineTest, KubeVirtsAnswersToAnEvictionAreMigratingOrNotMigratable) {
  running({pod("virt-launcher-web-x", "p1")});
  Decision first = run();
  in_.status = first.status;
  in_.drain = first.drain;
  auto answer = [this](std::string message) {
    in_.drain.inbox.push_back(
        EvictionReport{.pod = pod("virt-launcher-web-x", "p1"),
                       .answer = kube::EvictionResult{
                           .outcome = kube::EvictionOutcome::kDeferred,
                           .status = Error(ErrorCode::kTooManyRequests, std::move(message))}});
    in_.drain.evictions["p1"].in_flight = true;
    in_.drain.in_flight = 1;
    advance(minutes(1));
    Decision d = run();
    in_.status = d.status;
    in_.drain = d.drain;
    return d.status.pending_pods_refs.at(0).reason;
  };
  EXPECT_EQ(answer(R"(admission webhook "virt-launcher-eviction-interceptor.kubevirt.io" denied )"
                   R"(the request: Eviction triggered evacuation of VMI "apps/web")"),
            PendingPodReason::kMigratingVm);
  EXPECT_EQ(answer(R"(Evacuation in progress: Eviction triggered evacuation of VMI "apps/web")"),
            PendingPodReason::kMigratingVm);
  EXPECT_EQ(answer("VMI web is configured with an eviction strategy but is not live-migratable"),
            PendingPodReason::kVmNotMigratable);
  EXPECT_EQ(answer("some other webhook says later"), PendingPodReason::kEvictionDeferred);
}

TEST_F(StateMachineTest, EveryPodGoneSucceedsAndAnnouncesItAfterTheWrite) {
  running({pod("web-1", "p1")});
  pods_.leaving.clear();  // the pod left
  advance(minutes(2));
  in_.node_lease = lease_of(std::string(kNodeLeaseHolder), wall_);
  const Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kSucceeded);
  EXPECT_EQ(d.status.eviction_pods, 1);
  EXPECT_EQ(d.status.drain_progress, 100);
  EXPECT_THAT(reasons(d.status.conditions, kConditionReady), ElementsAre("True", "Succeeded", ""));
  EXPECT_THAT(reasons(d.status.conditions, kConditionDrained), ElementsAre("True", "Drained", ""));
  EXPECT_THAT(actions(d), ElementsAre("Requeue(+900000ms)", "DrainCompleted(120000ms)",
                                      "Log(maintenance succeeded)", "WriteStatus(Succeeded)",
                                      "Announce(SucceedMaintenance)"));
}

TEST_F(StateMachineTest, ANewcomerAfterSuccessIsEvictedAndSaidSo) {
  running({});
  in_.status.phase = Phase::kSucceeded;
  in_.on_record = in_.status;
  in_.drain.ledger = DrainLedger();
  pods_.leaving = {pod("late", "p9")};
  const Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kSucceeded);
  EXPECT_THAT(actions(d),
              ElementsAre("Requeue(+900000ms)",
                          "Log(a pod arrived on the node; it will be "
                          "evicted too)",
                          "Event(BeginEviction)", "StartEviction(late)", "WriteStatus(Succeeded)"));
}

TEST_F(StateMachineTest, AfterARestartASucceededMaintenanceIsNeitherAnnouncedNorDrainedAgain) {
  running({pod("web-1", "p1")});
  in_.status.phase = Phase::kSucceeded;
  in_.status.eviction_pods = 1;
  in_.status.pending_pods.clear();
  in_.status.pending_pods_refs.clear();
  in_.status.drain_progress = 100;
  set_condition(in_.status.conditions,
                Condition{.type = std::string(kConditionDrained),
                          .status = ConditionStatus::kTrue,
                          .reason = "Drained"},
                wall_);
  in_.on_record = in_.status;
  pods_.leaving.clear();
  const Decision d = run();  // a fresh operator: no drain memory
  EXPECT_EQ(d.status, in_.status);
  EXPECT_THAT(actions(d), ElementsAre("Requeue(+900000ms)", "WriteStatus(Succeeded)"));
  ASSERT_TRUE(d.drain.ledger.has_value());
  EXPECT_EQ(d.drain.ledger->eviction_pods(), 1);
}

// ---- -> Failed, for each kind (docs/design.md §2.4, §2.7, §3.1) ----

TEST_F(StateMachineTest, ADrainTimeoutFailsLikeAnyFailureButKeepsTheNode) {
  running({pod("web-1", "p1")});
  in_.nm.spec.drain_timeout = minutes(10);
  advance(minutes(9));
  in_.node_lease = lease_of(std::string(kNodeLeaseHolder), wall_);
  Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kRunning);
  const auto list = actions(d);
  EXPECT_EQ(list.back(), "WriteStatus(Running)");
  EXPECT_NE(std::find(list.begin(), list.end(), "Requeue(+60000ms)"), list.end());

  in_.status = d.status;
  in_.drain = d.drain;
  advance(minutes(1));
  d = run();
  EXPECT_EQ(d.status.phase, Phase::kFailed);
  EXPECT_EQ(failure_of(d.status), FailureKind::kTimeout);
  EXPECT_THAT(
      reasons(d.status.conditions, kConditionReady),
      ElementsAre("False", "DrainTimeout", "drain did not complete within 10m0s: 1 pods pending"));
  EXPECT_EQ(d.status.last_error, "drain did not complete within 10m0s: 1 pods pending");
  // Cordoned, tainted, slot and lease kept: no restore, no release.
  EXPECT_THAT(reasons(d.status.conditions, kConditionCordoned),
              ElementsAre("True", "Cordoned", ""));
  EXPECT_THAT(actions(d),
              ElementsAre("Requeue(+840000ms)", "CancelMigrations", "Log(maintenance failed)",
                          "WriteStatus(Failed)", "Announce(FailedMaintenance)"));

  // The timed-out maintenance is still kept: an undone cordon is put back.
  in_.status = d.status;
  in_.node->unschedulable = false;
  EXPECT_EQ(actions(run()).front(), "Cordon(then MaintenanceReapplied)");
}

TEST_F(StateMachineTest, ALostNodeLeaseUndoesTheMaintenanceAndFails) {
  running({pod("web-1", "p1")});
  in_.status.error_on_lease_count = 3;
  in_.node_lease = lease_of("NodeHealthCheck-x", wall_);
  const Decision d = run();
  EXPECT_EQ(d.status.error_on_lease_count, 4);
  EXPECT_EQ(failure_of(d.status), FailureKind::kLeaseLost);
  EXPECT_EQ(d.status.last_error,
            "maintenance failed: lease could not be extended after 4 attempts");
  EXPECT_THAT(reasons(d.status.conditions, kConditionCordoned),
              ElementsAre("False", "Restored", "the maintenance was undone"));
  EXPECT_THAT(actions(d), ElementsAre("Log(the node lease is held by another holder)",
                                      "StopEvictions", "CancelMigrations", "RestoreNode",
                                      "ReleaseNodeLease", "ReleaseSlot", "Log(maintenance failed)",
                                      "WriteStatus(Failed)", "Announce(FailedMaintenance)"));
}

TEST_F(StateMachineTest, ANodeDeletedMidMaintenanceUndoesItAndFails) {
  running({pod("web-1", "p1")});
  in_.node.reset();
  const Decision d = run();
  EXPECT_EQ(failure_of(d.status), FailureKind::kNodeMissing);
  EXPECT_EQ(d.status.last_error, "node \"worker-1\" not found");
  EXPECT_THAT(actions(d), ElementsAre("Log(the node does not exist)", "StopEvictions",
                                      "CancelMigrations", "RestoreNode", "ReleaseNodeLease",
                                      "ReleaseSlot", "Log(maintenance failed)",
                                      "WriteStatus(Failed)", "Announce(FailedMaintenance)"));

  // Failed so already: nothing more.
  in_.status = d.status;
  EXPECT_THAT(actions(run()), IsEmpty());
}

TEST_F(StateMachineTest, AMissingNodeFailsAPendingMaintenanceWithoutUndoing) {
  in_.status.phase = Phase::kPending;
  in_.node.reset();
  EXPECT_THAT(actions(run()), ElementsAre("Log(the node does not exist)", "Log(maintenance failed)",
                                          "WriteStatus(Failed)", "Announce(FailedMaintenance)"));
}

TEST_F(StateMachineTest, ANodeThatReturnsSendsTheMaintenanceBackToPending) {
  in_.status.phase = Phase::kFailed;
  in_.status.last_error = node_not_found_message(kNode);
  in_.status.total_pods = 4;
  in_.status.error_on_lease_count = 1;
  set_condition(in_.status.conditions, failure_condition(FailureKind::kNodeMissing, "gone"), wall_);
  set_condition(in_.status.conditions,
                Condition{.type = std::string(kConditionBlocked),
                          .status = ConditionStatus::kFalse,
                          .reason = "Admitted"},
                wall_);
  in_.drain.ledger = DrainLedger();
  in_.drain.in_flight = 3;
  const Decision d = run();
  EXPECT_EQ(d.status.phase, Phase::kPending);
  EXPECT_EQ(d.status.total_pods, 0);
  EXPECT_EQ(d.status.last_error, "");
  EXPECT_EQ(d.status.error_on_lease_count, 1);
  ASSERT_EQ(d.status.conditions.size(), 1U);
  EXPECT_EQ(d.status.conditions[0].type, kConditionBlocked);
  EXPECT_FALSE(d.drain.ledger.has_value());
  EXPECT_EQ(d.drain.in_flight, 0);
  // Recorded before the gates: the next reconcile gathers them for a Pending maintenance.
  EXPECT_THAT(actions(d),
              ElementsAre("Log(the node exists again; the maintenance waits for its gates)",
                          "ResetEvictions", "WriteStatus(Pending)", "Requeue(+0ms)"));
}

// ---- Duplicates (docs/design.md §2.7) ----

TEST_F(StateMachineTest, TheOlderOfTwoMaintenancesWins) {
  in_.status.phase = Phase::kPending;
  in_.siblings.push_back(Sibling{.name = "nm-old",
                                 .uid = "uid-old",
                                 .created = kStart - hours(1),
                                 .status = NodeMaintenanceStatus{.phase = Phase::kPending}});
  const Decision d = run();
  EXPECT_EQ(failure_of(d.status), FailureKind::kDuplicate);
  EXPECT_EQ(d.status.last_error, duplicate_message(kNode, "nm-old"));
  EXPECT_THAT(actions(d), ElementsAre("Log(maintenance failed)", "WriteStatus(Failed)",
                                      "Announce(FailedMaintenance)"));
}

TEST_F(StateMachineTest, AnAdmittedYoungerMaintenanceKeepsTheNode) {
  in_.status.phase = Phase::kPending;
  in_.siblings.push_back(Sibling{.name = "nm-old",
                                 .uid = "uid-old",
                                 .created = kStart - hours(1),
                                 .status = NodeMaintenanceStatus{.phase = Phase::kPending}});
  in_.siblings.push_back(Sibling{.name = "nm-young",
                                 .uid = "uid-young",
                                 .created = kStart + hours(1),
                                 .status = NodeMaintenanceStatus{.phase = Phase::kRunning}});
  EXPECT_EQ(duplicate_winner(in_.nm, in_.siblings), "nm-young");
  EXPECT_EQ(run().status.last_error, duplicate_message(kNode, "nm-young"));
}

TEST_F(StateMachineTest, AYoungerOrDuplicateSiblingDoesNotWin) {
  NodeMaintenanceStatus duplicate{.phase = Phase::kFailed};
  duplicate.conditions.push_back(failure_condition(FailureKind::kDuplicate, "dup"));
  in_.siblings.push_back(
      Sibling{.name = "nm-dup", .uid = "u1", .created = kStart - hours(2), .status = duplicate});
  in_.siblings.push_back(Sibling{.name = "nm-young",
                                 .uid = "u2",
                                 .created = kStart + hours(1),
                                 .status = NodeMaintenanceStatus{.phase = Phase::kPending}});
  EXPECT_EQ(duplicate_winner(in_.nm, in_.siblings), std::nullopt);
  pending(GateFacts{.lease = NodeLeaseState::kHeldByOther, .admitted = false});
  EXPECT_EQ(failure_of(run().status), std::nullopt);
}

// ---- Deletion at each phase (docs/design.md §2.6) ----

TEST_F(StateMachineTest, DeletionOfAPendingMaintenanceTouchesNoLeaseItDoesNotHold) {
  in_.nm.meta.deletion_timestamp = wall_;
  in_.status.phase = Phase::kPending;
  in_.node_lease = lease_of(std::string(kNodeLeaseHolder), wall_);  // another maintenance's
  EXPECT_THAT(actions(run_deletion()),
              ElementsAre("StopEvictions", "RestoreNode(for removal)", "Requeue(+0ms)"));
  in_.removal.restored = RestoreOutcome{};
  EXPECT_THAT(actions(run_deletion()),
              ElementsAre("StopEvictions", "ReleaseSlot", "RemoveFinalizer",
                          "Event(RemovedMaintenance)", "Log(maintenance removed)"));
}

TEST_F(StateMachineTest, DeletionOfARunningMaintenanceUncordonsAndGivesTheLeasesBack) {
  running({pod("web-1", "p1")});
  in_.nm.meta.deletion_timestamp = wall_;
  in_.removal.cancelled = std::vector<std::string>{};
  in_.removal.restored = RestoreOutcome{.uncordoned = true, .left_cordoned = false};
  const Decision d = run_deletion();
  EXPECT_THAT(actions(d), ElementsAre("StopEvictions", "Event(UncordonNode on Node)",
                                      "Log(node uncordoned)", "ReleaseNodeLease",
                                      "Event(LeaseReleased)", "ReleaseSlot", "RemoveFinalizer",
                                      "Event(RemovedMaintenance)", "Log(maintenance removed)"));
  EXPECT_EQ(event_of(d.actions[1]), events::uncordon_node(kNode, "nm-a"));
  EXPECT_EQ(event_of(d.actions[7]), events::removed_maintenance(kNode, false));
}

TEST_F(StateMachineTest, DeletionReleasesTheNodeLeaseTheCacheDoesNotShowYet) {
  running({pod("web-1", "p1")});
  in_.node_lease.reset();  // its watch lags behind our own create
  in_.nm.meta.deletion_timestamp = wall_;
  in_.removal.cancelled = std::vector<std::string>{};
  in_.removal.restored = RestoreOutcome{.uncordoned = true, .left_cordoned = false};
  const Decision d = run_deletion();
  EXPECT_THAT(actions(d),
              ElementsAre("StopEvictions", "Event(UncordonNode on Node)", "Log(node uncordoned)",
                          "ReleaseNodeLease", "ReleaseSlot", "RemoveFinalizer",
                          "Event(RemovedMaintenance)", "Log(maintenance removed)"));
}

TEST_F(StateMachineTest, DeletionSaysWhenTheNodeStaysCordoned) {
  running({});
  in_.status.phase = Phase::kSucceeded;
  in_.nm.meta.deletion_timestamp = wall_;
  in_.removal.cancelled = std::vector<std::string>{};
  in_.removal.restored = RestoreOutcome{.uncordoned = false, .left_cordoned = true};
  const Decision d = run_deletion();
  EXPECT_THAT(actions(d), ElementsAre("StopEvictions", "ReleaseNodeLease", "Event(LeaseReleased)",
                                      "ReleaseSlot", "RemoveFinalizer", "Event(RemovedMaintenance)",
                                      "Log(maintenance removed)"));
  EXPECT_EQ(event_of(d.actions[5]), events::removed_maintenance(kNode, true));
}

TEST_F(StateMachineTest, DeletionAfterATimeoutGivesTheKeptLeaseBack) {
  in_.nm.meta.deletion_timestamp = wall_;
  in_.status.phase = Phase::kFailed;
  in_.status.conditions.push_back(failure_condition(FailureKind::kTimeout, "t"));
  in_.node.reset();
  in_.node_lease = lease_of(std::string(kNodeLeaseHolder), wall_);
  // Its live migrations are cancelled first.
  EXPECT_THAT(actions(run_deletion()),
              ElementsAre("StopEvictions", "CancelMigrations(for removal)", "Requeue(+0ms)"));
  in_.removal.cancelled = std::vector<std::string>{};
  EXPECT_THAT(
      actions(run_deletion()),
      ElementsAre("StopEvictions", "ReleaseNodeLease", "Event(LeaseReleased)", "ReleaseSlot",
                  "RemoveFinalizer", "Event(RemovedMaintenance)", "Log(maintenance removed)"));
}

TEST_F(StateMachineTest, DeletionCancelsTheLiveMigrationsFirstAndSaysWhich) {
  running({pod("virt-launcher-db-x", "p1")});
  in_.nm.meta.deletion_timestamp = wall_;
  EXPECT_THAT(actions(run_deletion()), ElementsAre("StopEvictions", "CancelMigrations(for removal)",
                                                   "RestoreNode(for removal)", "Requeue(+0ms)"));
  // A restore that conflicted comes back for the node alone.
  in_.removal.cancelled = std::vector<std::string>{"apps/db-maintenance-uid-a-1"};
  EXPECT_THAT(actions(run_deletion()),
              ElementsAre("StopEvictions", "RestoreNode(for removal)", "Requeue(+0ms)"));
  in_.removal.restored = RestoreOutcome{.uncordoned = true, .left_cordoned = false};
  const Decision d = run_deletion();
  ASSERT_EQ(event_of(d.actions[7]).reason, "RemovedMaintenance");
  EXPECT_EQ(event_of(d.actions[7]).message,
            "Node maintenance removed for node worker-1; cancelled the live migrations it had "
            "started: apps/db-maintenance-uid-a-1");
}

TEST_F(StateMachineTest, DeletionWithoutTheNodeReleasesOnlyWhatItHolds) {
  in_.nm.meta.deletion_timestamp = wall_;
  in_.status.phase = Phase::kFailed;
  in_.status.conditions.push_back(failure_condition(FailureKind::kNodeMissing, "gone"));
  in_.node.reset();
  EXPECT_THAT(actions(run_deletion()),
              ElementsAre("StopEvictions", "ReleaseSlot", "RemoveFinalizer",
                          "Event(RemovedMaintenance)", "Log(maintenance removed)"));
}

TEST_F(StateMachineTest, DeletionOfADuplicateLeavesTheWinnersLeaseAlone) {
  in_.nm.meta.deletion_timestamp = wall_;
  in_.status.phase = Phase::kFailed;
  in_.status.conditions.push_back(
      failure_condition(FailureKind::kDuplicate, duplicate_message(kNode, "nm-old")));
  in_.node_lease = lease_of(std::string(kNodeLeaseHolder), wall_);
  in_.removal.restored = RestoreOutcome{};
  EXPECT_THAT(actions(run_deletion()),
              ElementsAre("StopEvictions", "ReleaseSlot", "RemoveFinalizer",
                          "Event(RemovedMaintenance)", "Log(maintenance removed)"));
}

TEST_F(StateMachineTest, DeletionWaitsForTheNodeCacheAndEndsOnceFinalized) {
  in_.nm.meta.deletion_timestamp = wall_;
  in_.node_synced = false;
  EXPECT_THAT(actions(run_deletion()), ElementsAre("StopEvictions", "Requeue(+200ms)"));
  in_.finalized = true;
  EXPECT_THAT(actions(run_deletion()), IsEmpty());
  in_.finalized = false;
  in_.has_finalizer = false;
  EXPECT_THAT(actions(run_deletion()), IsEmpty());
}

}  // namespace
}  // namespace nmo::op
