#include "operator/gates/budget.h"

#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const kube::Time kMorning = std::chrono::sys_days{std::chrono::year{2026} / 11 / 30};

BudgetCandidate cr(std::string name, std::string node, int created_minute,
                   BudgetPhase phase = BudgetPhase::kPending) {
  return BudgetCandidate{.name = std::move(name),
                         .uid = "uid",
                         .node = std::move(node),
                         .creation_time = kMorning + minutes{created_minute},
                         .phase = phase,
                         .holds_slot = false,
                         .cleanup_finished = false,
                         .deleting = false,
                         .node_checks_pass = true};
}

// docs/design.md §8 (S4): five maintenances created at once (a few seconds apart).
std::vector<BudgetCandidate> five_workers() {
  std::vector<BudgetCandidate> crs;
  for (int i = 1; i <= 5; ++i) {
    crs.push_back(
        cr("maintenance-worker-0" + std::to_string(i), "node-worker-0" + std::to_string(i), i));
  }
  return crs;
}

TEST(BudgetTest, StoryBudgetOneWithFiveCrsAdmitsOne) {
  const BudgetDecision d = decide_admissions(five_workers(), {}, 1);
  EXPECT_EQ(d.slots_used, 0);
  EXPECT_THAT(d.admit, ElementsAre("maintenance-worker-01"));
  EXPECT_THAT(d.waiting_for_slot, ElementsAre("maintenance-worker-02", "maintenance-worker-03",
                                              "maintenance-worker-04", "maintenance-worker-05"));
}

TEST(BudgetTest, OnceAdmittedTheOthersWait) {
  std::vector<BudgetCandidate> crs = five_workers();
  crs[0].holds_slot = true;
  crs[0].phase = BudgetPhase::kRunning;
  const BudgetDecision d = decide_admissions(crs, {}, 1);
  EXPECT_EQ(d.slots_used, 1);
  EXPECT_THAT(d.admit, IsEmpty());
  EXPECT_EQ(d.waiting_for_slot.size(), 4U);
  // Deleting the first (cleanup finished) admits the next oldest.
  crs[0].cleanup_finished = true;
  EXPECT_THAT(decide_admissions(crs, {}, 1).admit, ElementsAre("maintenance-worker-02"));
}

TEST(BudgetTest, StoryBudgetThreeWithFiveCrsAdmitsThree) {
  const BudgetDecision d = decide_admissions(five_workers(), {}, 3);
  EXPECT_THAT(d.admit, ElementsAre("maintenance-worker-01", "maintenance-worker-02",
                                   "maintenance-worker-03"));
  EXPECT_THAT(d.waiting_for_slot, ElementsAre("maintenance-worker-04", "maintenance-worker-05"));
}

TEST(BudgetTest, OldestFirstThenName) {
  std::vector<BudgetCandidate> crs{cr("b", "n1", 5), cr("a", "n2", 5), cr("z", "n3", 1)};
  EXPECT_THAT(decide_admissions(crs, {}, 2).admit, ElementsAre("z", "a"));
}

TEST(BudgetTest, NoHeadOfLineBlocking) {
  std::vector<BudgetCandidate> crs = five_workers();
  crs[0].node_checks_pass = false;  // e.g. NHC holds node-worker-01's lease, or etcd unsafe
  const BudgetDecision d = decide_admissions(crs, {}, 1);
  EXPECT_THAT(d.admit, ElementsAre("maintenance-worker-02"));
  EXPECT_THAT(d.waiting_on_node, ElementsAre("maintenance-worker-01"));
}

TEST(BudgetTest, ForeignNodeLeasesFillTheBudget) {
  const std::vector<ForeignNodeLease> foreign{
      {.node = "node-worker-05", .holder = "NodeHealthCheck-x"}};
  std::vector<BudgetCandidate> crs = five_workers();
  crs[4].node_checks_pass = false;  // its lease is the foreign one
  const BudgetDecision d = decide_admissions(crs, foreign, 1);
  EXPECT_EQ(d.slots_used, 1);
  EXPECT_THAT(d.admit, IsEmpty());
  EXPECT_THAT(d.in_use,
              ElementsAre(SlotUse{
                  .node = "node-worker-05", .holder = "NodeHealthCheck-x", .foreign = true}));
  EXPECT_THAT(d.waiting_for_slot, ElementsAre("maintenance-worker-01", "maintenance-worker-02",
                                              "maintenance-worker-03", "maintenance-worker-04"));
  EXPECT_THAT(d.waiting_on_node, ElementsAre("maintenance-worker-05"));
  EXPECT_EQ(slot_holder_identity("NodeHealthCheck-x", "node-worker-05"),
            "NodeHealthCheck-x (node node-worker-05)");
}

TEST(BudgetTest, ForeignLeaseOnANodeThatAlreadyCountsCountsOnce) {
  std::vector<BudgetCandidate> crs{cr("m1", "n1", 1, BudgetPhase::kRunning), cr("m2", "n2", 2)};
  crs[0].holds_slot = true;
  const std::vector<ForeignNodeLease> foreign{{.node = "n1", .holder = "NodeHealthCheck-x"},
                                              {.node = "n3", .holder = "SelfNodeRemediation"},
                                              {.node = "n3", .holder = "SelfNodeRemediation"}};
  const BudgetDecision d = decide_admissions(crs, foreign, 3);
  EXPECT_EQ(d.slots_used, 2);
  EXPECT_THAT(d.admit, ElementsAre("m2"));
}

TEST(BudgetTest, FailedMaintenanceKeepsItsSlotUntilCleanup) {
  std::vector<BudgetCandidate> crs{cr("failed", "n1", 1, BudgetPhase::kFailed),
                                   cr("next", "n2", 2)};
  crs[0].holds_slot = true;  // drainTimeout exceeded: node still cordoned
  EXPECT_THAT(decide_admissions(crs, {}, 1).admit, IsEmpty());
  crs[0].cleanup_finished = true;  // lost lease, node already restored
  EXPECT_THAT(decide_admissions(crs, {}, 1).admit, ElementsAre("next"));
  // A Failed one that never took a slot (node not found) does not count.
  crs[0] = cr("failed", "n1", 1, BudgetPhase::kFailed);
  EXPECT_FALSE(uses_slot(crs[0]));
  EXPECT_THAT(decide_admissions(crs, {}, 1).admit, ElementsAre("next"));
}

TEST(BudgetTest, AdoptedUpstreamCrsCountEvenAboveTheBudget) {
  std::vector<BudgetCandidate> crs{cr("up-1", "n1", 1, BudgetPhase::kRunning),
                                   cr("up-2", "n2", 2, BudgetPhase::kSucceeded),
                                   cr("ours", "n3", 3)};
  const BudgetDecision d = decide_admissions(crs, {}, 1);
  EXPECT_EQ(d.slots_used, 2);
  EXPECT_THAT(d.admit, IsEmpty());
  EXPECT_THAT(d.waiting_for_slot, ElementsAre("ours"));
}

TEST(BudgetTest, LoweringTheBudgetNeverEvictsAdmittedOnes) {
  std::vector<BudgetCandidate> crs = five_workers();
  for (int i = 0; i < 3; ++i) {
    crs[static_cast<std::size_t>(i)].holds_slot = true;
    crs[static_cast<std::size_t>(i)].phase = BudgetPhase::kRunning;
  }
  const BudgetDecision d = decide_admissions(crs, {}, 1);
  EXPECT_EQ(d.slots_used, 3);
  EXPECT_EQ(d.max_parallel, 1);
  EXPECT_THAT(d.admit, IsEmpty());
  EXPECT_EQ(d.in_use.size(), 3U);
  EXPECT_EQ(decide_admissions(crs, {}, -4).max_parallel, 0);
}

TEST(BudgetTest, DeletingAndDuplicateNodeCandidatesAreNotAdmitted) {
  std::vector<BudgetCandidate> crs{cr("gone", "n1", 1), cr("first", "n2", 2),
                                   cr("second", "n2", 3)};
  crs[0].deleting = true;
  const BudgetDecision d = decide_admissions(crs, {}, 5);
  EXPECT_THAT(d.admit, ElementsAre("first"));
  EXPECT_THAT(d.waiting_on_node, ElementsAre("second"));
}

// Found by the kill-anywhere experiment: the operator took the slots of two Pending CRs and was
// killed before it recorded Running; after the restart every slot was in use (theirs among
// them) and the two waited forever for a slot they already held.
TEST(BudgetTest, PendingCrHoldingItsSlotResumesWithoutAFreeSlot) {
  std::vector<BudgetCandidate> crs = five_workers();
  for (std::size_t i = 0; i < 4; ++i) crs[i].holds_slot = true;
  crs[0].phase = BudgetPhase::kSucceeded;
  crs[1].phase = BudgetPhase::kRunning;
  // crs[2] and crs[3] hold their slots but are still Pending.
  const BudgetDecision d = decide_admissions(crs, {}, 4);
  EXPECT_EQ(d.slots_used, 4);
  EXPECT_THAT(d.admit, ElementsAre("maintenance-worker-03", "maintenance-worker-04"));
  EXPECT_THAT(d.waiting_for_slot, ElementsAre("maintenance-worker-05"));

  // Its node checks still apply (e.g. another component took the node lease meanwhile), and a
  // CR being deleted is never admitted.
  crs[2].node_checks_pass = false;
  crs[3].deleting = true;
  const BudgetDecision blocked = decide_admissions(crs, {}, 4);
  EXPECT_THAT(blocked.admit, IsEmpty());
  EXPECT_THAT(blocked.waiting_on_node, ElementsAre("maintenance-worker-03"));
}

TEST(SlotLeaseNameTest, NamesAndHashing) {
  EXPECT_EQ(slot_lease_name("maintenance-worker-01"), "nmo-slot-maintenance-worker-01");
  EXPECT_EQ(foreign_slot_lease_name("node-worker-05"), "nmo-foreign-node-worker-05");
  EXPECT_EQ(slot_holder_identity("maintenance-worker-01", "node-worker-01"),
            "maintenance-worker-01 (node node-worker-01)");
  const std::string long_name(250, 'a');
  const std::string hashed = slot_lease_name(long_name);
  EXPECT_EQ(hashed.size(), 253U);
  EXPECT_TRUE(hashed.starts_with("nmo-slot-aaaa"));
  EXPECT_EQ(hashed, slot_lease_name(long_name));  // deterministic
  EXPECT_NE(hashed, slot_lease_name(std::string(249, 'a') + "b"));
  // A name that fits exactly is not hashed.
  EXPECT_EQ(slot_lease_name(std::string(244, 'a')), "nmo-slot-" + std::string(244, 'a'));
}

}  // namespace
}  // namespace nmo::op
