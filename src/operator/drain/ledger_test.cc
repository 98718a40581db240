#include "operator/drain/ledger.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using ::testing::ElementsAre;

kube::Pod pod(std::string ns, std::string name, std::string uid, std::string phase = "Running") {
  kube::Pod p;
  p.meta.namespace_ = std::move(ns);
  p.meta.name = std::move(name);
  p.meta.uid = std::move(uid);
  p.node_name = "node-worker-01";
  p.phase = std::move(phase);
  return p;
}

// The worker of docs/design.md §8 (S1): eight pods that must leave.
std::vector<kube::Pod> eight_pods() {
  return {pod("shop", "web-1", "u1"),
          pod("shop", "web-2", "u2"),
          pod("shop", "api-1", "u3"),
          pod("shop", "api-2", "u4"),
          pod("batch", "report", "u5"),
          pod("default", "bare", "u6"),
          pod("kubevirt-system", "virt-launcher-order-db", "u7"),
          pod("kubevirt-system", "virt-launcher-orders", "u8")};
}

std::vector<std::string> names_of(const std::vector<LedgerPodRef>& refs) {
  std::vector<std::string> names;
  for (const LedgerPodRef& ref : refs) names.push_back(ref.name);
  return names;
}

TEST(DrainLedgerTest, EmptyLedgerIsComplete) {
  DrainLedger ledger;
  EXPECT_EQ(ledger.total_pods(), 0);
  EXPECT_EQ(ledger.eviction_pods(), 0);
  EXPECT_EQ(ledger.drain_progress(), 100);
  EXPECT_TRUE(ledger.all_gone());
  EXPECT_TRUE(ledger.sync({}).empty());
  EXPECT_EQ(ledger.drain_progress(), 100);
}

TEST(DrainLedgerTest, StoryChapterTwoSixOfEightGoneIs75Percent) {
  DrainLedger ledger;
  std::vector<kube::Pod> pods = eight_pods();
  const LedgerChanges first = ledger.sync(pods);
  EXPECT_EQ(first.newcomers.size(), 8U);
  EXPECT_TRUE(first.gone.empty());
  EXPECT_EQ(ledger.total_pods(), 8);
  EXPECT_EQ(ledger.eviction_pods(), 0);
  EXPECT_EQ(ledger.drain_progress(), 0);

  // Six pods evicted and deleted; the two VM pods are still there.
  pods.erase(pods.begin(), pods.begin() + 6);
  const LedgerChanges second = ledger.sync(pods);
  EXPECT_EQ(second.gone.size(), 6U);
  EXPECT_EQ(ledger.total_pods(), 8);
  EXPECT_EQ(ledger.eviction_pods(), 6);
  EXPECT_EQ(ledger.pending_count(), 2);
  EXPECT_EQ(ledger.drain_progress(), 75);
  EXPECT_THAT(ledger.pending_pod_names(),
              ElementsAre("virt-launcher-order-db", "virt-launcher-orders"));
  EXPECT_FALSE(ledger.all_gone());
}

TEST(DrainLedgerTest, PendingReasonsAndMessages) {
  DrainLedger ledger;
  const std::vector<kube::Pod> pods{pod("kubevirt-system", "virt-launcher-order-db", "u7")};
  (void)ledger.sync(pods);
  ASSERT_EQ(ledger.pending_pods().size(), 1U);
  EXPECT_EQ(ledger.pending_pods()[0].reason, PendingPodReason::kEvicting);
  const std::string message =
      "PDB kubevirt-system/vm-order-processing-pdb: 0 disruptions allowed (1 healthy, 1 desired)";
  EXPECT_TRUE(ledger.set_pending("u7", PendingPodReason::kBlockedByPdb, message));
  EXPECT_FALSE(ledger.set_pending("u7", PendingPodReason::kBlockedByPdb, message));  // no change
  EXPECT_FALSE(ledger.set_pending("unknown", PendingPodReason::kError, "x"));
  const LedgerPod pending = ledger.pending_pods()[0];
  EXPECT_EQ(pending.namespace_, "kubevirt-system");
  EXPECT_EQ(pending.reason, PendingPodReason::kBlockedByPdb);
  EXPECT_EQ(pending.message, message);
  ASSERT_NE(ledger.find("u7"), nullptr);
  EXPECT_EQ(ledger.find("u7")->name, "virt-launcher-order-db");
  EXPECT_EQ(ledger.find(""), nullptr);
}

TEST(DrainLedgerTest, PodThatFinishesByItselfCountsAsGone) {
  // docs/design.md §2.4, §8 (S2): after live migration the virt-launcher pod turns Succeeded.
  DrainLedger ledger;
  std::vector<kube::Pod> pods{pod("vms", "virt-launcher-a", "u1"), pod("vms", "web", "u2")};
  (void)ledger.sync(pods);
  pods[0].phase = "Succeeded";
  const LedgerChanges changes = ledger.sync(pods);
  EXPECT_THAT(names_of(changes.gone), ElementsAre("virt-launcher-a"));
  EXPECT_EQ(ledger.eviction_pods(), 1);
  EXPECT_EQ(ledger.drain_progress(), 50);
  EXPECT_FALSE(ledger.set_pending("u1", PendingPodReason::kError, "x"));  // gone pods stay gone
  // It stays gone while its object lingers, and is never counted twice.
  EXPECT_TRUE(ledger.sync(pods).empty());
  EXPECT_EQ(ledger.total_pods(), 2);
}

TEST(DrainLedgerTest, ReplacedByANewUidIsGoneAndTheNewPodIsANewcomer) {
  DrainLedger ledger;
  (void)ledger.sync(std::vector<kube::Pod>{pod("db", "db-0", "old")});
  // The StatefulSet recreated db-0 and someone bound it to this node again.
  const LedgerChanges changes = ledger.sync(std::vector<kube::Pod>{pod("db", "db-0", "new")});
  ASSERT_EQ(changes.gone.size(), 1U);
  EXPECT_EQ(changes.gone[0].uid, "old");
  ASSERT_EQ(changes.newcomers.size(), 1U);
  EXPECT_EQ(changes.newcomers[0].uid, "new");
  EXPECT_EQ(ledger.total_pods(), 2);
  EXPECT_EQ(ledger.eviction_pods(), 1);
  EXPECT_THAT(ledger.pending_pod_names(), ElementsAre("db-0"));
}

TEST(DrainLedgerTest, NewcomersAreAddedAndAFinishedNewcomerIsGoneAtOnce) {
  DrainLedger ledger;
  (void)ledger.sync(std::vector<kube::Pod>{pod("a", "one", "u1")});
  const LedgerChanges changes = ledger.sync(std::vector<kube::Pod>{
      pod("a", "one", "u1"), pod("a", "bound-directly", "u2"), pod("a", "job", "u3", "Succeeded")});
  EXPECT_THAT(names_of(changes.newcomers), ElementsAre("bound-directly", "job"));
  EXPECT_THAT(names_of(changes.gone), ElementsAre("job"));
  EXPECT_EQ(ledger.total_pods(), 3);
  EXPECT_EQ(ledger.eviction_pods(), 1);
  EXPECT_EQ(ledger.drain_progress(), 33);
}

TEST(DrainLedgerTest, MarkGone) {
  DrainLedger ledger;
  const std::vector<kube::Pod> pods{pod("a", "one", "u1")};
  (void)ledger.sync(pods);
  EXPECT_TRUE(ledger.mark_gone("u1"));  // eviction answered 404
  EXPECT_FALSE(ledger.mark_gone("u1"));
  EXPECT_FALSE(ledger.mark_gone("nope"));
  // The watch still shows the pod for a moment: it does not come back.
  EXPECT_TRUE(ledger.sync(pods).empty());
  EXPECT_EQ(ledger.drain_progress(), 100);
  EXPECT_TRUE(ledger.all_gone());
}

TEST(DrainLedgerTest, PendingListIsSortedByNamespaceThenName) {
  DrainLedger ledger;
  (void)ledger.sync(
      std::vector<kube::Pod>{pod("b", "x", "1"), pod("a", "z", "2"), pod("a", "y", "3")});
  const std::vector<LedgerPod> pending = ledger.pending_pods();
  ASSERT_EQ(pending.size(), 3U);
  EXPECT_EQ(pending[0].uid, "3");
  EXPECT_EQ(pending[1].uid, "2");
  EXPECT_EQ(pending[2].uid, "1");
}

LedgerSeed story_seed() {
  return LedgerSeed{
      .total_pods = 8,
      .eviction_pods = 6,
      .pending = {{.namespace_ = "kubevirt-system",
                   .name = "virt-launcher-order-db",
                   .reason = PendingPodReason::kBlockedByPdb,
                   .message = "PDB kubevirt-system/vm-order-processing-pdb: 0 disruptions allowed "
                              "(1 healthy, 1 desired)"},
                  {.namespace_ = "kubevirt-system",
                   .name = "virt-launcher-orders",
                   .reason = PendingPodReason::kWaitingForTermination,
                   .message = "terminating for 2m5s"}}};
}

TEST(DrainLedgerRestoreTest, CountersAreNotRecomputed) {
  DrainLedger ledger = DrainLedger::restore(story_seed());
  EXPECT_TRUE(ledger.awaiting_first_sync());
  EXPECT_EQ(ledger.total_pods(), 8);
  EXPECT_EQ(ledger.eviction_pods(), 6);
  EXPECT_EQ(ledger.drain_progress(), 75);
  EXPECT_THAT(ledger.pending_pod_names(),
              ElementsAre("virt-launcher-order-db", "virt-launcher-orders"));

  // Both pods are still on the node (with DaemonSet pods the caller filtered out already).
  const LedgerChanges changes =
      ledger.sync(std::vector<kube::Pod>{pod("kubevirt-system", "virt-launcher-order-db", "u7"),
                                         pod("kubevirt-system", "virt-launcher-orders", "u8")});
  EXPECT_TRUE(changes.empty());
  EXPECT_FALSE(ledger.awaiting_first_sync());
  EXPECT_EQ(ledger.total_pods(), 8);
  EXPECT_EQ(ledger.eviction_pods(), 6);
  EXPECT_EQ(ledger.drain_progress(), 75);
  // The pods took over their uids and kept the reasons from the status.
  ASSERT_NE(ledger.find("u7"), nullptr);
  EXPECT_EQ(ledger.find("u7")->reason, PendingPodReason::kBlockedByPdb);
  EXPECT_EQ(ledger.find("u8")->message, "terminating for 2m5s");
}

TEST(DrainLedgerRestoreTest, PendingPodsThatVanishedAreGoneAndUnknownPodsAreNewcomers) {
  DrainLedger ledger = DrainLedger::restore(story_seed());
  const LedgerChanges changes = ledger.sync(std::vector<kube::Pod>{
      pod("kubevirt-system", "virt-launcher-order-db", "u7"), pod("shop", "landed-meanwhile", "u9"),
      pod("batch", "old-job", "u0", "Succeeded")});  // counted as gone before the restart
  EXPECT_THAT(names_of(changes.gone), ElementsAre("virt-launcher-orders"));
  EXPECT_THAT(names_of(changes.newcomers), ElementsAre("landed-meanwhile"));
  EXPECT_EQ(ledger.total_pods(), 9);
  EXPECT_EQ(ledger.eviction_pods(), 7);
  EXPECT_THAT(ledger.pending_pod_names(),
              ElementsAre("virt-launcher-order-db", "landed-meanwhile"));
  // The finished pod stays ignored on later syncs.
  EXPECT_TRUE(
      ledger
          .sync(std::vector<kube::Pod>{pod("kubevirt-system", "virt-launcher-order-db", "u7"),
                                       pod("shop", "landed-meanwhile", "u9"),
                                       pod("batch", "old-job", "u0", "Succeeded")})
          .empty());
  EXPECT_EQ(ledger.total_pods(), 9);
}

TEST(DrainLedgerRestoreTest, SucceededMaintenanceOnlySeesNewcomers) {
  DrainLedger ledger = DrainLedger::restore({.total_pods = 8, .eviction_pods = 8, .pending = {}});
  EXPECT_EQ(ledger.drain_progress(), 100);
  EXPECT_TRUE(ledger.sync({}).empty());
  EXPECT_TRUE(ledger.all_gone());
  const LedgerChanges changes = ledger.sync(std::vector<kube::Pod>{pod("shop", "new", "n1")});
  EXPECT_THAT(names_of(changes.newcomers), ElementsAre("new"));
  EXPECT_EQ(ledger.total_pods(), 9);
  EXPECT_EQ(ledger.drain_progress(), 88);
}

TEST(DrainLedgerRestoreTest, NamesWithoutNamespacesMatchAnyNamespace) {
  // A status with pendingPods names but no pendingPodsRefs (upstream before v0.19).
  DrainLedger ledger = DrainLedger::restore(
      {.total_pods = 2, .eviction_pods = 0, .pending = {{.name = "web"}, {.name = "web"}}});
  const LedgerChanges changes =
      ledger.sync(std::vector<kube::Pod>{pod("a", "web", "ua"), pod("b", "web", "ub")});
  EXPECT_TRUE(changes.empty());
  const std::vector<LedgerPod> pending = ledger.pending_pods();
  ASSERT_EQ(pending.size(), 2U);
  EXPECT_EQ(pending[0].namespace_, "a");
  EXPECT_EQ(pending[1].namespace_, "b");
}

TEST(DrainLedgerRestoreTest, InconsistentStatusTrustsEvictionPodsAndThePendingList) {
  DrainLedger ledger = DrainLedger::restore(
      {.total_pods = 10, .eviction_pods = 6, .pending = {{.namespace_ = "a", .name = "x"}}});
  EXPECT_EQ(ledger.total_pods(), 7);
  EXPECT_EQ(ledger.eviction_pods(), 6);
  EXPECT_EQ(ledger.pending_count(), 1);
}

TEST(DrainLedgerRestoreTest, RestoredPodThatFinishedIsGone) {
  DrainLedger ledger = DrainLedger::restore(
      {.total_pods = 1, .eviction_pods = 0, .pending = {{.namespace_ = "vms", .name = "vl"}}});
  const LedgerChanges changes =
      ledger.sync(std::vector<kube::Pod>{pod("vms", "vl", "u1", "Succeeded")});
  EXPECT_THAT(names_of(changes.gone), ElementsAre("vl"));
  EXPECT_TRUE(changes.newcomers.empty());
  EXPECT_EQ(ledger.drain_progress(), 100);
}

}  // namespace
}  // namespace nmo::op
