#include "operator/fleet/rollout.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::op::fleet {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using std::chrono::sys_days;

// Saturday 2026-12-05, 14:00 UTC (22:00 in Taipei).
const kube::Time kSaturday = sys_days{std::chrono::year{2026} / 12 / 5} + hours{14};

NodeFacts ready_node(const std::string& name, const std::string& boot_id = "boot-1") {
  NodeFacts node;
  node.name = name;
  node.ready = true;
  node.boot_id = boot_id;
  return node;
}

// A plan over `nodes` (as listed), one node at a time, done when the admin says so.
MaintenancePlan listed_plan(std::vector<std::string> nodes) {
  MaintenancePlan plan;
  plan.meta.name = "memory-upgrade";
  plan.meta.uid = "plan-uid";
  plan.meta.generation = 1;
  plan.spec.nodes = std::move(nodes);
  return plan;
}

// The plan's cluster: ready nodes, and the NodeMaintenances the plan created so far.
class RolloutTest : public ::testing::Test {
 protected:
  RolloutTest() {
    world_.now = kSaturday;
    for (const char* name : {"w1", "w2", "w3"}) {
      world_.nodes.push_back(ready_node(name));
    }
  }

  // decide(), then what the controller would do: the status written, the creates and deletes
  // carried out (a created maintenance is Running; a deleted one is gone).
  Decision step() {
    Decision decision = decide(plan_, world_);
    plan_.status = decision.status;
    for (const StartNode& start : decision.create) {
      MaintenanceFacts facts;
      facts.name = start.maintenance;
      facts.node = start.node;
      facts.owned = true;
      facts.phase = Phase::kRunning;
      world_.maintenances.push_back(facts);
    }
    for (const std::string& name : decision.remove) {
      std::erase_if(world_.maintenances,
                    [&](const MaintenanceFacts& facts) { return facts.name == name; });
    }
    for (MaintenanceFacts& facts : world_.maintenances) {
      for (const HoldNode& hold : decision.hold) {
        if (hold.maintenance == facts.name) facts.hold = hold.message;
      }
      for (const std::string& name : decision.unhold) {
        if (name == facts.name) facts.hold.clear();
      }
    }
    return decision;
  }

  MaintenanceFacts& maintenance(const std::string& node) {
    for (MaintenanceFacts& facts : world_.maintenances) {
      if (facts.node == node) {
        return facts;
      }
    }
    ADD_FAILURE() << "no NodeMaintenance for " << node;
    static MaintenanceFacts none;
    return none;
  }

  NodeFacts& node(const std::string& name) {
    for (NodeFacts& facts : world_.nodes) {
      if (facts.name == name) {
        return facts;
      }
    }
    ADD_FAILURE() << "no node " << name;
    static NodeFacts none;
    return none;
  }

  const PlanNodeStatus& entry(const std::string& name) {
    for (const PlanNodeStatus& entry : plan_.status.nodes) {
      if (entry.name == name) {
        return entry;
      }
    }
    ADD_FAILURE() << "no status entry for " << name;
    static PlanNodeStatus none;
    return none;
  }

  // Drains the node's maintenance and marks its work done; returns the decision that removed it.
  void drain_and_finish(const std::string& name) {
    maintenance(name).phase = Phase::kSucceeded;
    step();
    maintenance(name).done_marked = true;
    step();
  }

  // What `kubectl maintenance resume` writes: the plan's stop token, in the resume annotation.
  void resume() {
    plan_.meta.annotations.set(std::string(kResumeAnnotation), plan_.status.stop_token);
  }

  const kube::Condition* stopped() const {
    return kube::find_condition(plan_.status.conditions, kStoppedCondition);
  }

  static std::vector<std::string> reasons(const Decision& decision) {
    std::vector<std::string> out;
    for (const PlanEvent& event : decision.events) {
      out.emplace_back(to_string(event.reason));
    }
    return out;
  }

  MaintenancePlan plan_ = listed_plan({"w1", "w2", "w3"});
  World world_;
};

TEST_F(RolloutTest, TheFirstLookStartsTheFirstNodeOnly) {
  const Decision decision = step();
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w1", "memory-upgrade-w1-3823f550"}}));
  EXPECT_EQ(reasons(decision), (std::vector<std::string>{"PlanStarted", "NodeStarted"}));
  EXPECT_EQ(decision.events[0].message, "3 nodes, in this order: w1, w2, w3");
  EXPECT_EQ(decision.events[1].message,
            "node w1 (1 of 3): NodeMaintenance memory-upgrade-w1-3823f550 created");
  EXPECT_EQ(plan_.status.phase, PlanPhase::kRunning);
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kDraining);
  EXPECT_EQ(entry("w1").boot_id, "boot-1");
  EXPECT_EQ(entry("w2").phase, PlanNodePhase::kWaiting);
  EXPECT_EQ(plan_.status.current_nodes, std::vector<std::string>{"w1"});
  EXPECT_EQ(plan_.status.in_progress, 1);
  EXPECT_EQ(plan_.status.waiting, 2);
  EXPECT_EQ(decision.requeue_after, kProgressPoll);
  EXPECT_TRUE(step().create.empty()) << "a node in progress holds the next one";
}

TEST_F(RolloutTest, ANodeWalksFromDrainingToDoneAndTheNextStarts) {
  step();
  maintenance("w1").pending_pods = 3;
  step();
  EXPECT_EQ(entry("w1").message, "draining: 3 pods left");
  EXPECT_EQ(plan_.status.message, "w1: draining: 3 pods left");

  maintenance("w1").phase = Phase::kSucceeded;
  Decision decision = step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kInMaintenance);
  EXPECT_EQ(entry("w1").drained_at, kSaturday);
  EXPECT_EQ(entry("w1").message, "drained; waiting for `kubectl maintenance done w1`");
  ASSERT_EQ(reasons(decision), std::vector<std::string>{"NodeDrained"});
  EXPECT_EQ(decision.events[0].message,
            "node w1 is drained (1 of 3): waiting for `kubectl maintenance done w1`");

  world_.now += minutes{30};
  maintenance("w1").done_marked = true;
  decision = step();
  EXPECT_EQ(decision.remove, std::vector<std::string>{"memory-upgrade-w1-3823f550"});
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kRestoring);

  // Gone now; the node is still cordoned a moment and a budget is short: the gate waits.
  node("w1").unschedulable = true;
  plan_.status.nodes[0].budgets = {"shop/web-pdb"};
  world_.budgets = {{"shop/web-pdb", 2, 3}};
  decision = step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kHealthCheck);
  EXPECT_EQ(entry("w1").message,
            "health gate: node w1 is cordoned; PDB shop/web-pdb 2 of 3 healthy");
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(decision.requeue_after, kGatePoll);

  node("w1").unschedulable = false;
  world_.budgets = {{"shop/web-pdb", 3, 3}};
  world_.now += minutes{1};
  decision = step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kDone);
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w2", "memory-upgrade-w2-3823f850"}}));
  EXPECT_EQ(reasons(decision), (std::vector<std::string>{"NodeDone", "NodeStarted"}));
  EXPECT_EQ(decision.events[0].message, "node w1 is back and healthy (1 of 3, took 31m0s)");
  EXPECT_EQ(plan_.status.done, 1);
  // One node took 31 minutes; two are left, one at a time.
  EXPECT_EQ(plan_.status.eta, std::chrono::floor<seconds>(world_.now + minutes{62}));
}

TEST_F(RolloutTest, AMaintenanceHeldPendingByTheOperatorsGatesSaysSo) {
  step();
  maintenance("w1").phase = Phase::kPending;
  step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kDraining);
  EXPECT_EQ(entry("w1").message,
            "NodeMaintenance memory-upgrade-w1-3823f550 is Pending, held by the operator's gates "
            "(kubectl "
            "maintenance diagnose memory-upgrade-w1-3823f550)");
  maintenance("w1").phase = std::nullopt;  // not looked at by the operator yet
  step();
  EXPECT_EQ(entry("w1").message, "NodeMaintenance memory-upgrade-w1-3823f550 created");
  maintenance("w1").phase = Phase::kRunning;
  step();
  EXPECT_EQ(entry("w1").message, "draining");
}

TEST_F(RolloutTest, EveryNodeDoneSucceedsThePlanOnce) {
  for (const char* name : {"w1", "w2", "w3"}) {
    step();
    drain_and_finish(name);
  }
  const Decision decision = step();
  EXPECT_EQ(plan_.status.phase, PlanPhase::kSucceeded);
  EXPECT_EQ(plan_.status.message, "3 of 3 nodes done");
  EXPECT_EQ(reasons(decision), (std::vector<std::string>{"NodeDone", "PlanSucceeded"}));
  EXPECT_FALSE(plan_.status.eta.has_value());
  EXPECT_TRUE(reasons(step()).empty());
}

TEST_F(RolloutTest, NodeRebootedNeedsANewBootIdAndReadiness) {
  plan_.spec.done_when = DoneWhen::kNodeRebooted;
  step();
  maintenance("w1").phase = Phase::kSucceeded;
  step();
  EXPECT_EQ(entry("w1").message,
            "drained; waiting for the node to reboot (boot ID boot-1) and be Ready");
  node("w1").boot_id = "boot-2";
  node("w1").ready = false;
  EXPECT_TRUE(step().remove.empty()) << "rebooted but not Ready yet";
  node("w1").ready = true;
  EXPECT_EQ(step().remove, std::vector<std::string>{"memory-upgrade-w1-3823f550"});
}

TEST_F(RolloutTest, SoakedIsDoneAfterTheSoakTime) {
  plan_.spec.done_when = DoneWhen::kSoaked;
  plan_.spec.soak_time = "10m";
  step();
  maintenance("w1").phase = Phase::kSucceeded;
  step();
  EXPECT_EQ(entry("w1").message, "drained; soaking until 14:10 UTC");
  world_.now += minutes{9};
  EXPECT_TRUE(step().remove.empty());
  world_.now += minutes{1};
  EXPECT_EQ(step().remove, std::vector<std::string>{"memory-upgrade-w1-3823f550"});
}

TEST_F(RolloutTest, ASoakEndingBeforeTheNextLookIsLookedAtWhenItEnds) {
  plan_.spec.done_when = DoneWhen::kSoaked;
  plan_.spec.soak_time = "2s";
  step();
  maintenance("w1").phase = Phase::kSucceeded;
  EXPECT_EQ(step().requeue_after, seconds{2}) << "the soak's end, not the 5 s look";
  world_.now += milliseconds{1500};
  EXPECT_EQ(step().requeue_after, seconds{1});
  world_.now += milliseconds{500};
  EXPECT_EQ(step().remove, std::vector<std::string>{"memory-upgrade-w1-3823f550"});
}

TEST_F(RolloutTest, ALongSoakKeepsTheUsualLook) {
  plan_.spec.done_when = DoneWhen::kSoaked;
  plan_.spec.soak_time = "1h";
  step();
  maintenance("w1").phase = Phase::kSucceeded;
  EXPECT_EQ(step().requeue_after, kProgressPoll);
}

TEST_F(RolloutTest, MaxUnavailableCountsANodeSomeoneElseCordoned) {
  plan_.spec.max_parallel = kube::IntOrString::from_int(2);
  plan_.spec.max_unavailable = kube::IntOrString::from_int(2);
  node("w3").unschedulable = true;  // cordoned by hand
  Decision decision = step();
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w1", "memory-upgrade-w1-3823f550"}}));
  EXPECT_EQ(entry("w2").message, "maxUnavailable 2 reached: 2 nodes of the plan are unavailable");
  EXPECT_EQ(plan_.status.message,
            "w1: draining; next: maxUnavailable 2 reached: 2 nodes of the plan are unavailable");
  node("w3").unschedulable = false;
  decision = step();
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w2", "memory-upgrade-w2-3823f850"}}));
}

TEST_F(RolloutTest, MaxUnavailableCountsANodeWhoseLeaseNodeHealthCheckHolds) {
  plan_.spec.max_unavailable = kube::IntOrString::from_int(1);
  world_.leased_by_others = {{"w3", "NodeHealthCheck-workers"}};  // Ready, yet remediated
  Decision decision = step();
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(reasons(decision), std::vector<std::string>{"PlanStarted"});
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kWaiting);
  EXPECT_EQ(plan_.status.message,
            "next node: maxUnavailable 1 reached: 1 nodes of the plan are unavailable");
  EXPECT_EQ(decision.requeue_after, kProgressPoll);
  world_.leased_by_others.clear();  // the remediation ended and NHC deleted its Lease
  decision = step();
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w1", "memory-upgrade-w1-3823f550"}}));
}

TEST_F(RolloutTest, MaxParallelAsAPercentageRoundsDownToAtLeastOne) {
  EXPECT_EQ(resolve_limit(kube::IntOrString::from_string("10%"), 22, 1, "f").value_or(0), 2);
  EXPECT_EQ(resolve_limit(kube::IntOrString::from_string("1%"), 22, 1, "f").value_or(0), 1);
  EXPECT_EQ(resolve_limit(std::nullopt, 22, 1, "f").value_or(0), 1);
  EXPECT_EQ(resolve_limit(kube::IntOrString::from_string("ten%"), 22, 1, "spec.maxParallel")
                .error()
                .message,
            "spec.maxParallel: \"ten%\" is not a count or a percentage from 1% to 100%");
  EXPECT_EQ(
      resolve_limit(kube::IntOrString::from_int(0), 22, 1, "spec.maxParallel").error().message,
      "spec.maxParallel: must be at least 1, got 0");
}

TEST_F(RolloutTest, SomeoneElsesMaintenanceHoldsTheNodeAndTheOnesAfterIt) {
  MaintenanceFacts foreign;
  foreign.name = "fix-w1";
  foreign.node = "w1";
  foreign.phase = Phase::kRunning;
  world_.maintenances.push_back(foreign);
  const Decision decision = step();
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(entry("w1").message, "node w1 is under NodeMaintenance fix-w1 of someone else");
  EXPECT_EQ(plan_.status.message,
            "next node: node w1 is under NodeMaintenance fix-w1 of someone else");
}

TEST_F(RolloutTest, AMissingNodeFailsAndTheNextStarts) {
  plan_ = listed_plan({"gone", "w1"});
  const Decision decision = step();
  EXPECT_EQ(entry("gone").phase, PlanNodePhase::kFailed);
  EXPECT_EQ(entry("gone").message, "node gone does not exist");
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w1", "memory-upgrade-w1-3823f550"}}));
}

TEST_F(RolloutTest, AFailedMaintenanceGivesTheNodeBackAndStopsThePlanInItsStatus) {
  step();
  maintenance("w1").phase = Phase::kFailed;
  maintenance("w1").last_error = "drain did not finish within drainTimeout 1h0m0s";
  const Decision decision = step();
  EXPECT_EQ(decision.remove, std::vector<std::string>{"memory-upgrade-w1-3823f550"});
  EXPECT_TRUE(decision.create.empty());
  EXPECT_FALSE(plan_.spec.paused) << "spec is the user's";
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kFailed);
  EXPECT_EQ(entry("w1").message,
            "NodeMaintenance memory-upgrade-w1-3823f550 failed: drain did not finish within "
            "drainTimeout 1h0m0s");
  EXPECT_EQ(plan_.status.phase, PlanPhase::kPaused);
  ASSERT_NE(stopped(), nullptr);
  EXPECT_EQ(stopped()->status, kube::ConditionStatus::kTrue);
  EXPECT_EQ(stopped()->reason, "NodeFailed");
  EXPECT_EQ(stopped()->message, "node w1: " + entry("w1").message);
  EXPECT_EQ(plan_.status.stop_token.size(), 16U);
  EXPECT_EQ(plan_.status.message, "stopped: node w1: " + entry("w1").message +
                                      " (kubectl maintenance resume memory-upgrade)");
  ASSERT_EQ(reasons(decision), std::vector<std::string>{"NodeFailed"});
  EXPECT_TRUE(decision.events[0].warning());
  EXPECT_EQ(decision.events[0].message,
            "node w1: " + entry("w1").message +
                "; the node is given back and the plan is stopped (kubectl maintenance resume "
                "memory-upgrade goes on with the next node)");
  EXPECT_TRUE(step().create.empty()) << "stopped";
  // What a GitOps tool re-applies (spec.paused false, an old resume token) changes nothing.
  plan_.spec.paused = false;
  plan_.meta.annotations.set(std::string(kResumeAnnotation), "0123456789abcdef");
  EXPECT_TRUE(step().create.empty()) << "stopped";
  EXPECT_EQ(plan_.status.phase, PlanPhase::kPaused);
  resume();
  const Decision resumed = step();
  EXPECT_EQ(resumed.create, (std::vector<StartNode>{{"w2", "memory-upgrade-w2-3823f850"}}));
  EXPECT_EQ(reasons(resumed), (std::vector<std::string>{"PlanResumed", "NodeStarted"}));
  EXPECT_EQ(stopped()->status, kube::ConditionStatus::kFalse);
  EXPECT_EQ(stopped()->reason, "Resumed");
  EXPECT_TRUE(plan_.status.stop_token.empty());
  EXPECT_EQ(plan_.status.phase, PlanPhase::kRunning);
}

TEST_F(RolloutTest, AResumeWrittenForAnEarlierStopDoesNotLiftTheNextOne) {
  plan_.spec.max_parallel = kube::IntOrString::from_int(2);
  step();
  maintenance("w1").phase = Phase::kFailed;
  step();
  const std::string first = plan_.status.stop_token;
  resume();
  step();
  maintenance("w2").phase = Phase::kFailed;
  world_.now += seconds{1};
  step();
  EXPECT_NE(plan_.status.stop_token, first);
  EXPECT_EQ(plan_.status.phase, PlanPhase::kPaused) << "the old annotation is still there";
  EXPECT_TRUE(step().create.empty());
}

TEST_F(RolloutTest, AStopMidDrainFailsTheNodeAndStopsThePlanBeforeTheNextStarts) {
  plan_.spec.max_parallel = kube::IntOrString::from_int(2);
  step();
  // `kubectl maintenance stop w1`: its NodeMaintenance is being deleted mid-drain.
  maintenance("w1").deleting = true;
  Decision decision = step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kFailed);
  EXPECT_EQ(entry("w1").message,
            "NodeMaintenance memory-upgrade-w1-3823f550 was deleted by "
            "someone else before the drain finished");
  EXPECT_TRUE(decision.create.empty()) << "w3 must not take w1's place";
  EXPECT_TRUE(decision.remove.empty());
  EXPECT_EQ(stopped()->reason, "NodeFailed");
  EXPECT_EQ(plan_.status.phase, PlanPhase::kPaused);
  // Gone: still stopped.
  std::erase_if(world_.maintenances, [](const auto& m) { return m.node == "w1"; });
  EXPECT_TRUE(step().create.empty());
}

TEST_F(RolloutTest, AHealthGateThatNeverPassesPausesThePlanWithItsReasonOnce) {
  plan_.spec.health_gate_timeout = "20m";
  step();
  drain_and_finish("w1");
  node("w1").ready = false;
  step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kHealthCheck);
  world_.now += minutes{20};
  const Decision decision = step();
  ASSERT_EQ(reasons(decision), std::vector<std::string>{"HealthGateTimeout"});
  EXPECT_EQ(decision.events[0].message,
            "node w1 is not healthy 20m0s after it was given back (node w1 is not Ready); the "
            "plan is stopped (once the node is healthy, kubectl maintenance resume "
            "memory-upgrade goes on)");
  EXPECT_EQ(plan_.status.phase, PlanPhase::kPaused);
  EXPECT_EQ(stopped()->reason, "HealthGateTimeout");
  EXPECT_EQ(plan_.status.message,
            "stopped: node w1 is not healthy 20m0s after it was given back (node w1 is not "
            "Ready) (kubectl maintenance resume memory-upgrade); w1: health gate: node w1 is not "
            "Ready");
  world_.now += minutes{30};
  EXPECT_TRUE(reasons(step()).empty()) << "announced once";
  // Resumed, however long after: the node gets the whole timeout again.
  resume();
  EXPECT_EQ(reasons(step()), std::vector<std::string>{"PlanResumed"});
  world_.now += minutes{19};
  EXPECT_TRUE(reasons(step()).empty());
  EXPECT_FALSE(plan_stopped(plan_.status));
}

TEST_F(RolloutTest, TheHealthGateWaitsWhileAnotherHolderHasTheNodeLease) {
  plan_.spec.health_gate_timeout = "10m";
  step();
  drain_and_finish("w1");
  // Handed back Ready and uncordoned, but Node Health Check still holds the node's Lease (it
  // remediates the node, or died doing so and its Lease has not run out).
  world_.leased_by_others = {{"w1", "NodeHealthCheck-workers"}};
  Decision decision = step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kHealthCheck);
  EXPECT_EQ(plan_.status.message,
            "w1: health gate: node w1: its node lease is held by NodeHealthCheck-workers");
  EXPECT_TRUE(decision.create.empty());
  EXPECT_TRUE(decision.remove.empty());
  EXPECT_TRUE(reasons(decision).empty());
  EXPECT_EQ(decision.requeue_after, kGatePoll);
  // Held past the gate's timeout: the plan stops, naming the holder.
  world_.now += minutes{10};
  decision = step();
  ASSERT_EQ(reasons(decision), std::vector<std::string>{"HealthGateTimeout"});
  EXPECT_EQ(decision.events[0].message,
            "node w1 is not healthy 10m0s after it was given back (node w1: its node lease is "
            "held by NodeHealthCheck-workers); the plan is stopped (once the node is healthy, "
            "kubectl maintenance resume memory-upgrade goes on)");
  resume();
  step();
  // The Lease gone (deleted, or run out by time): the gate passes and the next node starts.
  world_.leased_by_others.clear();
  decision = step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kDone);
  EXPECT_EQ(reasons(decision), (std::vector<std::string>{"NodeDone", "NodeStarted"}));
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w2", "memory-upgrade-w2-3823f850"}}));
}

TEST_F(RolloutTest, TheHealthGateWaitsForMigratedVmsToSettle) {
  step();
  plan_.status.nodes[0].vms = {"shop/vm-db", "shop/vm-gone", "shop/vm-web"};
  world_.vms = {{"shop/vm-db", "Running", true}, {"shop/vm-web", "Scheduling", false}};
  drain_and_finish("w1");
  step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kHealthCheck);
  EXPECT_EQ(entry("w1").message,
            "health gate: VM shop/vm-db is still migrating; VM shop/vm-web is Scheduling, not "
            "Running");
  // A VMI that reports no phase yet is not held on that alone; one deleted since is not waited
  // for.
  world_.vms = {{"shop/vm-db", "Running", false}, {"shop/vm-web", "", false}};
  step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kDone);
}

TEST_F(RolloutTest, TheHealthGateHoldsOnTheOperatorsNewWarningsUntilAResume) {
  plan_.spec.health_gate_timeout = "10m";
  step();
  maintenance("w1").phase = Phase::kSucceeded;
  step();
  // A Warning from the drain, before the work was done, is not new.
  world_.warnings = {{"w1", "EvictionBlocked", "pod shop/web-0: PDB web-pdb", world_.now}};
  world_.now += minutes{5};
  maintenance("w1").done_marked = true;
  step();
  const kube::Time handed_back = world_.now;
  world_.now += seconds{2};
  world_.warnings.push_back(
      {"w1", "FailedUncordon", "could not uncordon node w1: conflict", handed_back});
  world_.warnings.push_back({"w2", "FailedUncordon", "another node's", world_.now});
  step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kHealthCheck);
  EXPECT_EQ(entry("w1").message,
            "health gate: Warning FailedUncordon from the operator: could not uncordon node w1: "
            "conflict");
  world_.now += minutes{10};
  step();
  EXPECT_TRUE(plan_stopped(plan_.status));
  // Resuming accepts the Warnings reported before the gate timed out.
  resume();
  world_.now += seconds{5};
  step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kDone);
}

TEST_F(RolloutTest, OutsideTheWindowNothingStartsAndTheNextWindowIsNamed) {
  plan_.spec.time_zone = "Asia/Taipei";
  plan_.spec.windows = {{{"Sun"}, "22:00", "06:00"}};
  Decision decision = step();
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(plan_.status.phase, PlanPhase::kWaitingForWindow);
  EXPECT_EQ(plan_.status.next_window_text, "Sun 22:00 Asia/Taipei");
  EXPECT_EQ(plan_.status.next_window, kSaturday + hours{24});
  EXPECT_EQ(plan_.status.message, "waiting for window Sun 22:00 Asia/Taipei");
  EXPECT_EQ(reasons(decision), (std::vector<std::string>{"PlanStarted", "WaitingForWindow"}));
  EXPECT_EQ(decision.requeue_after, kIdlePoll);
  world_.now += hours{24};
  decision = step();
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w1", "memory-upgrade-w1-3823f550"}}));
  EXPECT_FALSE(plan_.status.next_window.has_value());
}

TEST_F(RolloutTest, ANodeStartedInsideTheWindowFinishesAfterIt) {
  plan_.spec.windows = {{{}, "14:00", "15:00"}};
  step();
  world_.now += hours{2};
  maintenance("w1").phase = Phase::kSucceeded;
  step();
  maintenance("w1").done_marked = true;
  Decision decision = step();
  EXPECT_EQ(decision.remove, std::vector<std::string>{"memory-upgrade-w1-3823f550"});
  decision = step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kDone);
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(plan_.status.phase, PlanPhase::kWaitingForWindow);
  EXPECT_EQ(plan_.status.next_window_text, "Sun 14:00 UTC");
}

TEST_F(RolloutTest, WithOnWindowClosePauseADrainIsHeldUntilTheNextWindow) {
  plan_.spec.windows = {{{}, "14:00", "15:00"}};
  plan_.spec.on_window_close = WindowClose::kPause;
  plan_.spec.max_parallel = kube::IntOrString::from_int(2);
  step();
  maintenance("w1").phase = Phase::kSucceeded;
  maintenance("w2").pending_pods = 3;
  step();
  // 15:00: the window closes with w1 drained and w2 draining.
  world_.now += hours{1};
  Decision decision = step();
  const std::string text =
      "MaintenancePlan memory-upgrade is outside its maintenance windows until Sun 14:00 UTC";
  EXPECT_EQ(decision.hold, (std::vector<HoldNode>{{"memory-upgrade-w2-3823f850", text}}));
  EXPECT_EQ(reasons(decision), std::vector<std::string>{"NodeHeld"});
  EXPECT_EQ(decision.events[0].message,
            "node w2: drain held until the next window (Sun 14:00 UTC); the node stays cordoned "
            "and no new eviction starts");
  EXPECT_EQ(entry("w2").message,
            "drain held until the next window (Sun 14:00 UTC); draining: 3 pods left");
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kInMaintenance);
  // w1's work goes on, not held: the plan runs and looks at it often.
  EXPECT_EQ(plan_.status.phase, PlanPhase::kRunning);
  EXPECT_EQ(decision.requeue_after, kProgressPoll);
  maintenance("w1").done_marked = true;
  step();
  decision = step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kDone);
  EXPECT_EQ(reasons(decision), (std::vector<std::string>{"NodeDone", "WaitingForWindow"}));
  EXPECT_EQ(plan_.status.phase, PlanPhase::kWaitingForWindow);
  decision = step();
  EXPECT_TRUE(decision.hold.empty()) << "held once";
  EXPECT_TRUE(reasons(decision).empty());
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(plan_.status.message,
            "waiting for window Sun 14:00 UTC; w2: drain held until the next window (Sun 14:00 "
            "UTC); draining: 3 pods left");
  // Only held drains left: the next look is at the window's opening.
  EXPECT_EQ(decision.requeue_after, kIdlePoll);

  // Sunday 14:00: the drain goes on.
  world_.now = kSaturday + hours{24};
  decision = step();
  EXPECT_EQ(decision.unhold, std::vector<std::string>{"memory-upgrade-w2-3823f850"});
  EXPECT_EQ(reasons(decision), (std::vector<std::string>{"NodeStarted", "NodeResumed"}));
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"w3", "memory-upgrade-w3-3823f750"}}));
  EXPECT_EQ(entry("w2").message, "draining: 3 pods left");
  EXPECT_EQ(plan_.status.phase, PlanPhase::kRunning);
}

TEST_F(RolloutTest, WithoutOnWindowClosePauseADrainIsNeverHeld) {
  plan_.spec.windows = {{{}, "14:00", "15:00"}};
  step();
  world_.now += hours{1};
  const Decision decision = step();
  EXPECT_TRUE(decision.hold.empty());
  EXPECT_EQ(entry("w1").message, "draining");
  EXPECT_EQ(plan_.status.phase, PlanPhase::kRunning);
}

TEST_F(RolloutTest, AControlPlaneNodeGoesLastAndAlone) {
  MaintenancePlan plan;
  plan.meta.name = "all";
  plan.spec.node_selector = kube::LabelSelector{};
  plan.spec.max_parallel = kube::IntOrString::from_int(3);
  plan_ = plan;
  NodeFacts control_plane = ready_node("cp1");
  control_plane.control_plane = true;
  world_.nodes.insert(world_.nodes.begin(), control_plane);
  Decision decision = step();
  EXPECT_EQ(decision.events[0].message, "4 nodes, in this order: w1, w2, w3, cp1");
  EXPECT_EQ(decision.create.size(), 3U);
  for (const char* name : {"w1", "w2", "w3"}) {
    drain_and_finish(name);
  }
  decision = step();
  EXPECT_EQ(decision.create, (std::vector<StartNode>{{"cp1", maintenance_name("all", "cp1")}}));
}

TEST_F(RolloutTest, ByZoneTakesOneZoneAfterTheOther) {
  MaintenancePlan plan;
  plan.meta.name = "zones";
  plan.spec.node_selector = kube::LabelSelector{};
  plan.spec.order = PlanOrder::kByZone;
  plan_ = plan;
  node("w1").zone = "b";
  node("w2").zone = "a";
  node("w3").zone = "b";
  EXPECT_EQ(step().events[0].message, "3 nodes, in this order: w2, w1, w3");
}

TEST_F(RolloutTest, AMaintenanceCreatedBeforeARestartIsAdoptedNotCreatedAgain) {
  MaintenanceFacts mine;
  mine.name = "memory-upgrade-w1-3823f550";
  mine.node = "w1";
  mine.owned = true;
  mine.phase = Phase::kSucceeded;
  world_.maintenances.push_back(mine);
  plan_.status.nodes = {{.name = "w1"}, {.name = "w2"}, {.name = "w3"}};
  const Decision decision = step();
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kInMaintenance);
  EXPECT_EQ(entry("w2").phase, PlanNodePhase::kWaiting);
}

TEST_F(RolloutTest, AMaintenanceOfThePlansNameThatIsNotItsOwnIsNeverAdopted) {
  // Somebody's NodeMaintenance with the name the plan wants for w1, on another node; and one
  // with the plan's uid but the wrong node.
  MaintenanceFacts users;
  users.name = maintenance_name("memory-upgrade", "w1");
  users.node = "elsewhere";
  users.phase = Phase::kSucceeded;
  world_.maintenances.push_back(users);
  plan_.status.nodes = {{.name = "w1"}, {.name = "w2"}, {.name = "w3"}};
  Decision decision = step();
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kWaiting);
  const std::string waits = "NodeMaintenance " + users.name +
                            " exists and is not this plan's (it carries no "
                            "nodemaintenance.medik8s.io/plan-uid of this plan); the node waits "
                            "until it is gone";
  EXPECT_EQ(entry("w1").message, waits);
  EXPECT_EQ(plan_.status.message, "next node: " + waits);
  ASSERT_EQ(reasons(decision), std::vector<std::string>{"NameCollision"});
  EXPECT_TRUE(decision.events[0].warning());
  EXPECT_EQ(decision.requeue_after, kProgressPoll) << "its deletion wakes no watch of the plan";
  EXPECT_TRUE(reasons(step()).empty()) << "announced once";

  world_.maintenances[0].owned = true;  // the plan's uid, but not the node expected
  step();
  EXPECT_EQ(entry("w1").phase, PlanNodePhase::kWaiting);
  EXPECT_EQ(entry("w1").message, "NodeMaintenance " + users.name +
                                     " exists and is not this plan's (it names node "
                                     "elsewhere); the node waits until it is gone");
  world_.maintenances.clear();  // gone: the plan creates its own
  EXPECT_EQ(step().create, (std::vector<StartNode>{{"w1", users.name}}));
}

TEST_F(RolloutTest, DeletingThePlanStopsDrainsAndLeavesDrainedNodesToTheAdmin) {
  plan_.spec.max_parallel = kube::IntOrString::from_int(2);
  step();
  maintenance("w1").phase = Phase::kSucceeded;
  step();
  plan_.meta.deletion_timestamp = world_.now;
  const Decision decision = decide(plan_, world_);
  EXPECT_EQ(decision.remove, std::vector<std::string>{"memory-upgrade-w2-3823f850"});
  EXPECT_EQ(decision.release, std::vector<std::string>{"memory-upgrade-w1-3823f550"});
  EXPECT_TRUE(decision.remove_finalizer);
  EXPECT_TRUE(decision.create.empty());
  ASSERT_EQ(reasons(decision), std::vector<std::string>{"PlanDeleted"});
  EXPECT_EQ(decision.events[0].message,
            "plan deleted; drain stopped and node given back: w2; left drained, delete when the "
            "work is done: NodeMaintenance memory-upgrade-w1-3823f550");
}

TEST_F(RolloutTest, AnInvalidSpecFailsThePlanWithTheFieldNamed) {
  plan_.spec.time_zone = "Mars/Olympus_Mons";
  Decision decision = step();
  EXPECT_EQ(plan_.status.phase, PlanPhase::kFailed);
  EXPECT_EQ(plan_.status.message, "spec.timeZone: unknown time zone \"Mars/Olympus_Mons\"");
  EXPECT_TRUE(decision.create.empty());
  EXPECT_EQ(reasons(decision), std::vector<std::string>{"InvalidPlan"});
  EXPECT_TRUE(reasons(step()).empty()) << "announced once";

  plan_.spec.time_zone.clear();
  plan_.spec.node_selector = kube::LabelSelector{};
  EXPECT_EQ(check_rules(plan_.spec).error().message,
            "spec: exactly one of nodes and nodeSelector must be set");
  plan_.spec.node_selector.reset();
  plan_.spec.done_when = DoneWhen::kSoaked;
  EXPECT_EQ(check_rules(plan_.spec).error().message,
            "spec.soakTime: required with doneWhen Soaked");
  plan_.spec.done_when.reset();
  plan_.spec.health_gate_timeout = "1d";
  EXPECT_EQ(check_rules(plan_.spec).error().message.substr(0, 45),
            "spec.healthGateTimeout: invalid duration \"1d\"");
}

TEST(MaintenanceNameTest, PlanNodeAndAHashOfBoth) {
  EXPECT_EQ(maintenance_name("memory-upgrade", "node-worker-01"),
            "memory-upgrade-node-worker-01-9b1d380e");
  // Once "<plan>-<node>" alone was ambiguous; the hash tells the two apart.
  EXPECT_EQ(maintenance_name("a", "b-c"), "a-b-c-9eece1bc");
  EXPECT_EQ(maintenance_name("a-b", "c"), "a-b-c-bc4051af");
}

TEST(MaintenanceNameTest, ALongNodeNameIsCutToFitAndStillDiffers) {
  const std::string plan(63, 'p');
  const std::string long_node = std::string(240, 'n') + ".example.com";
  const std::string name = maintenance_name(plan, long_node);
  EXPECT_EQ(name.size(), 253U);
  EXPECT_EQ(name.rfind(plan + "-nnn", 0), 0U);
  EXPECT_EQ(name, maintenance_name(plan, long_node)) << "stable";
  EXPECT_NE(name, maintenance_name(plan, std::string(240, 'n') + ".example.org"));
  // A cut that would end in '-' or '.' is trimmed: the name stays a DNS subdomain.
  const std::string dotted =
      maintenance_name(plan, std::string(179, 'n') + ".x" + std::string(60, 'y'));
  EXPECT_EQ(dotted.find(".-"), std::string::npos) << dotted;
  EXPECT_LE(dotted.size(), 253U);
}

TEST(PlanEventReasonTest, EachReasonHasItsOwnTextAndType) {
  EXPECT_EQ(to_string(PlanEventReason::kPlanStarted), "PlanStarted");
  EXPECT_EQ(to_string(PlanEventReason::kNodeResumed), "NodeResumed");
  EXPECT_FALSE(is_warning(PlanEventReason::kNodeStarted));
  EXPECT_TRUE(is_warning(PlanEventReason::kNodeNotStarted));
  // The Events that announce a stop carry the Stopped condition's reason.
  EXPECT_EQ(to_string(PlanEventReason::kNodeFailed), kStoppedByNodeFailure);
  EXPECT_EQ(to_string(PlanEventReason::kHealthGateTimeout), kStoppedByHealthGate);
  std::vector<std::string_view> texts;
  for (int i = 0; i <= static_cast<int>(PlanEventReason::kNodeResumed); ++i) {
    texts.push_back(to_string(static_cast<PlanEventReason>(i)));
  }
  std::sort(texts.begin(), texts.end());
  EXPECT_EQ(std::adjacent_find(texts.begin(), texts.end()), texts.end());
  EXPECT_EQ(texts.size(), 17U);
}

// The steering taint (docs/design.md §10, "Steering") follows the plan's decisions: the nodes that
// wait while the plan runs, and no node once its turn came.
TEST_F(RolloutTest, TheWaitingNodesOfARunningPlanAreSteeredUntilTheirTurn) {
  const auto steered = [&] {
    return steered_nodes({PlanSteering{.deleting = false, .status = &plan_.status}}, true);
  };
  // Not decided yet: no phase, nothing steered.
  EXPECT_EQ(steered(), std::set<std::string>{});
  step();
  ASSERT_EQ(plan_.status.phase, PlanPhase::kRunning);
  ASSERT_EQ(entry("w1").phase, PlanNodePhase::kDraining);
  EXPECT_EQ(steered(), (std::set<std::string>{"w2", "w3"}));
  drain_and_finish("w1");
  step();
  ASSERT_EQ(entry("w1").phase, PlanNodePhase::kDone);
  ASSERT_EQ(entry("w2").phase, PlanNodePhase::kDraining);
  EXPECT_EQ(steered(), std::set<std::string>{"w3"});
  EXPECT_EQ(steered_nodes({PlanSteering{.deleting = false, .status = &plan_.status}}, false),
            std::set<std::string>{})
      << "--plan-steering-taint=false";
  EXPECT_EQ(steered_nodes({PlanSteering{.deleting = true, .status = &plan_.status}}, true),
            std::set<std::string>{})
      << "a plan being deleted";
}

// A status with `phase` whose nodes are in the phases given.
MaintenancePlanStatus status_of(std::optional<PlanPhase> phase,
                                std::vector<std::pair<std::string, PlanNodePhase>> nodes) {
  MaintenancePlanStatus status;
  status.phase = phase;
  for (auto& [name, node_phase] : nodes) {
    status.nodes.push_back(PlanNodeStatus{.name = std::move(name), .phase = node_phase});
  }
  return status;
}

TEST(SteeredNodesTest, TheUnionOfTheRunningPlans) {
  const MaintenancePlanStatus kernel =
      status_of(PlanPhase::kRunning, {{"w1", PlanNodePhase::kDone},
                                      {"w2", PlanNodePhase::kDraining},
                                      {"w3", PlanNodePhase::kWaiting},
                                      {"w4", PlanNodePhase::kWaiting}});
  const MaintenancePlanStatus firmware =
      status_of(PlanPhase::kRunning, {{"w4", PlanNodePhase::kWaiting},
                                      {"w5", PlanNodePhase::kInMaintenance},
                                      {"w6", PlanNodePhase::kWaiting},
                                      {"w1", PlanNodePhase::kHealthCheck}});
  EXPECT_EQ(
      steered_nodes(
          {{.deleting = false, .status = &kernel}, {.deleting = false, .status = &firmware}}, true),
      (std::set<std::string>{"w3", "w4", "w6"}));
}

TEST(SteeredNodesTest, APlanThatIsNotRunningSteersNothing) {
  const std::vector<std::pair<std::string, PlanNodePhase>> nodes{{"w1", PlanNodePhase::kFailed},
                                                                 {"w2", PlanNodePhase::kWaiting}};
  for (const std::optional<PlanPhase> phase :
       {std::optional<PlanPhase>(), std::optional(PlanPhase::kPaused),
        std::optional(PlanPhase::kWaitingForWindow), std::optional(PlanPhase::kSucceeded),
        std::optional(PlanPhase::kFailed)}) {
    const MaintenancePlanStatus status = status_of(phase, nodes);
    EXPECT_EQ(steered_nodes({{.deleting = false, .status = &status}}, true),
              std::set<std::string>{})
        << (phase ? to_string(*phase) : "no phase yet");
  }
  const MaintenancePlanStatus running = status_of(PlanPhase::kRunning, nodes);
  EXPECT_EQ(steered_nodes({{.deleting = false, .status = &running}}, true),
            std::set<std::string>{"w2"});
}

}  // namespace
}  // namespace nmo::op::fleet
