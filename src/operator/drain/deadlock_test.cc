#include "operator/drain/deadlock.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using kube::IntOrString;
using kube::PodDisruptionBudget;

kube::Pod pod(std::string ns, std::string name, std::string ready = "True") {
  kube::Pod p;
  p.meta.namespace_ = std::move(ns);
  p.meta.name = std::move(name);
  p.phase = "Running";
  p.ready_status = std::move(ready);
  return p;
}

// A budget whose status is of its current spec, as the disruption controller would write it.
struct BudgetStatus {
  std::int32_t expected = 0;
  std::int32_t healthy = 0;
  std::int32_t desired = 0;
  std::int32_t allowed = 0;
};

PodDisruptionBudget budget(std::string ns, std::string name, std::optional<IntOrString> min,
                           std::optional<IntOrString> max, BudgetStatus status) {
  PodDisruptionBudget pdb;
  pdb.meta.namespace_ = std::move(ns);
  pdb.meta.name = std::move(name);
  pdb.meta.generation = 2;
  pdb.observed_generation = 2;
  pdb.min_available = std::move(min);
  pdb.max_unavailable = std::move(max);
  pdb.expected_pods = status.expected;
  pdb.current_healthy = status.healthy;
  pdb.desired_healthy = status.desired;
  pdb.disruptions_allowed = status.allowed;
  return pdb;
}

IntOrString count(std::int64_t n) { return IntOrString::from_int(n); }
IntOrString percent(std::string text) { return IntOrString::from_string(std::move(text)); }

PodOwner deployment(std::string ns, std::string name, std::int32_t replicas) {
  return {.kind = PodOwnerKind::kDeployment,
          .namespace_ = std::move(ns),
          .name = std::move(name),
          .replicas = replicas,
          .recreate = false,
          .opted_out = false,
          .hpa = {}};
}

PodOwner stateful_set(std::string ns, std::string name, std::int32_t replicas) {
  PodOwner owner = deployment(std::move(ns), std::move(name), replicas);
  owner.kind = PodOwnerKind::kStatefulSet;
  return owner;
}

struct Case {
  const char* name;
  kube::Pod pod;
  std::vector<PodDisruptionBudget> covering;
  PodOwner owner;
  DisruptionVerdict want;
};

DisruptionVerdict deadlock(bool surgeable, std::string message, std::string way_out) {
  return {.wait = DisruptionWait::kDeadlock,
          .kind = DeadlockKind::kBudgetNeverAllows,
          .surgeable = surgeable,
          .message = std::move(message),
          .way_out = std::move(way_out)};
}

DisruptionVerdict transient(std::string message) {
  return {.wait = DisruptionWait::kTransient, .message = std::move(message)};
}

TEST(ClassifyDisruptionTest, Table) {
  PodOwner recreate = deployment("shop", "web", 1);
  recreate.recreate = true;
  PodOwner opted_out = deployment("shop", "web", 1);
  opted_out.opted_out = true;
  PodOwner with_hpa = deployment("shop", "web", 1);
  with_hpa.hpa = "web-hpa";
  PodOwner replica_set = deployment("shop", "web-7d4b9c8f6", 1);
  replica_set.kind = PodOwnerKind::kReplicaSet;
  PodOwner job = deployment("batch", "nightly", 1);
  job.kind = PodOwnerKind::kOther;

  const PodDisruptionBudget single_min_one =
      budget("shop", "web-pdb", count(1), std::nullopt, {1, 1, 1, 0});
  const char* const single_message =
      "PodDisruptionBudget shop/web-pdb can never allow this eviction: minAvailable 1 of 1 "
      "expected";
  const char* const scale_way_out =
      "scale deployment shop/web to 2 replicas, or relax PodDisruptionBudget shop/web-pdb "
      "(minAvailable 1 of 1 expected)";

  const std::vector<Case> cases = {
      {"single replica minAvailable 1: the story",
       pod("shop", "web-7d4b9c8f6-x2x9k"),
       {single_min_one},
       deployment("shop", "web", 1),
       deadlock(true, single_message, scale_way_out)},
      {"3 replicas maxUnavailable 1, one unhealthy: transient",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", std::nullopt, count(1), {3, 2, 2, 0})},
       deployment("shop", "web", 3),
       transient("PodDisruptionBudget shop/web-pdb allows no disruption now: 2 healthy, 2 "
                 "desired (maxUnavailable 1 of 3 expected)")},
      {"3 replicas maxUnavailable 1, all healthy: nothing to wait for",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", std::nullopt, count(1), {3, 3, 2, 1})},
       deployment("shop", "web", 3),
       {}},
      {"maxUnavailable 0: scaling cannot help",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", std::nullopt, count(0), {3, 3, 3, 0})},
       deployment("shop", "web", 3),
       deadlock(true,
                "PodDisruptionBudget shop/web-pdb can never allow this eviction: maxUnavailable 0 "
                "of 3 expected",
                "relax PodDisruptionBudget shop/web-pdb (maxUnavailable 0 of 3 expected), or "
                "delete pod shop/web-a yourself: deployment shop/web recreates it on another "
                "node")},
      {"minAvailable 100%",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", percent("100%"), std::nullopt, {2, 2, 2, 0})},
       deployment("shop", "web", 2),
       deadlock(true,
                "PodDisruptionBudget shop/web-pdb can never allow this eviction: minAvailable "
                "100% of 2 expected",
                "relax PodDisruptionBudget shop/web-pdb (minAvailable 100% of 2 expected), or "
                "delete pod shop/web-a yourself: deployment shop/web recreates it on another "
                "node")},
      {"minAvailable 50% of 2, both healthy: allowed",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", percent("50%"), std::nullopt, {2, 2, 1, 1})},
       deployment("shop", "web", 2),
       {}},
      {"minAvailable 50% of 2, one unhealthy: transient",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", percent("50%"), std::nullopt, {2, 1, 1, 0})},
       deployment("shop", "web", 2),
       transient("PodDisruptionBudget shop/web-pdb allows no disruption now: 1 healthy, 1 "
                 "desired (minAvailable 50% of 2 expected)")},
      {"minAvailable 80% of 2 rounds up to 2: scale to 5",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", percent("80%"), std::nullopt, {2, 2, 2, 0})},
       deployment("shop", "web", 2),
       deadlock(true,
                "PodDisruptionBudget shop/web-pdb can never allow this eviction: minAvailable "
                "80% of 2 expected",
                "scale deployment shop/web to 5 replicas, or relax PodDisruptionBudget "
                "shop/web-pdb (minAvailable 80% of 2 expected)")},
      {"minAvailable 3 of 1: scale to 4",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", count(3), std::nullopt, {1, 1, 3, 0})},
       deployment("shop", "web", 1),
       deadlock(true,
                "PodDisruptionBudget shop/web-pdb can never allow this eviction: minAvailable 3 "
                "of 1 expected",
                "scale deployment shop/web to 4 replicas, or relax PodDisruptionBudget "
                "shop/web-pdb (minAvailable 3 of 1 expected)")},
      {"statefulset single replica: not surgeable",
       pod("db", "pg-0"),
       {budget("db", "pg-pdb", count(1), std::nullopt, {1, 1, 1, 0})},
       stateful_set("db", "pg", 1),
       deadlock(false,
                "PodDisruptionBudget db/pg-pdb can never allow this eviction: minAvailable 1 of 1 "
                "expected",
                "the only replica of statefulset db/pg is protected: relax PodDisruptionBudget "
                "db/pg-pdb (minAvailable 1 of 1 expected), or delete pod db/pg-0 yourself once "
                "its data is safe (backup or failover)")},
      {"statefulset of 3 under minAvailable 3",
       pod("db", "pg-1"),
       {budget("db", "pg-pdb", count(3), std::nullopt, {3, 3, 3, 0})},
       stateful_set("db", "pg", 3),
       deadlock(false,
                "PodDisruptionBudget db/pg-pdb can never allow this eviction: minAvailable 3 of 3 "
                "expected",
                "relax PodDisruptionBudget db/pg-pdb (minAvailable 3 of 3 expected), or delete pod "
                "db/pg-1 yourself once the application can spare it")},
      {"recreate deployment: not surgeable",
       pod("shop", "web-7d4b9c8f6-x2x9k"),
       {single_min_one},
       recreate,
       deadlock(false, single_message, scale_way_out)},
      {"opted out: not surgeable",
       pod("shop", "web-7d4b9c8f6-x2x9k"),
       {single_min_one},
       opted_out,
       deadlock(false, single_message, scale_way_out)},
      {"scaled by an HPA: raise its minReplicas",
       pod("shop", "web-7d4b9c8f6-x2x9k"),
       {single_min_one},
       with_hpa,
       deadlock(true, single_message,
                "raise minReplicas of HorizontalPodAutoscaler shop/web-hpa to 2, or relax "
                "PodDisruptionBudget shop/web-pdb (minAvailable 1 of 1 expected)")},
      {"replicaset without deployment: not surgeable",
       pod("shop", "web-7d4b9c8f6-x2x9k"),
       {single_min_one},
       replica_set,
       deadlock(false, single_message,
                "scale replicaset shop/web-7d4b9c8f6 to 2 replicas, or relax PodDisruptionBudget "
                "shop/web-pdb (minAvailable 1 of 1 expected)")},
      {"other controller",
       pod("batch", "nightly-x"),
       {budget("batch", "all", count(1), std::nullopt, {1, 1, 1, 0})},
       job,
       deadlock(false,
                "PodDisruptionBudget batch/all can never allow this eviction: minAvailable 1 of 1 "
                "expected",
                "relax PodDisruptionBudget batch/all (minAvailable 1 of 1 expected), or delete pod "
                "batch/nightly-x yourself")},
      {"bare pod: not surgeable",
       pod("ops", "debug"),
       {budget("ops", "ops-pdb", count(1), std::nullopt, {1, 1, 1, 0})},
       PodOwner{},
       deadlock(false,
                "PodDisruptionBudget ops/ops-pdb can never allow this eviction: minAvailable 1 of "
                "1 expected",
                "relax PodDisruptionBudget ops/ops-pdb (minAvailable 1 of 1 expected), or delete "
                "pod ops/debug yourself: no controller recreates it")},
      {"bare pod under maxUnavailable: expects 0 pods",
       pod("ops", "debug"),
       {budget("ops", "ops-pdb", std::nullopt, count(1), {0, 1, 0, 0})},
       PodOwner{},
       deadlock(false,
                "PodDisruptionBudget ops/ops-pdb can never allow this eviction: maxUnavailable 1 "
                "of 0 expected (only pods of a scalable controller count)",
                "relax PodDisruptionBudget ops/ops-pdb (maxUnavailable 1 of 0 expected), or delete "
                "pod ops/debug yourself: no controller recreates it")},
      {"budget with neither field",
       pod("shop", "web-a"),
       {budget("shop", "empty", std::nullopt, std::nullopt, {0, 1, 0, 0})},
       deployment("shop", "web", 1),
       deadlock(true,
                "PodDisruptionBudget shop/empty can never allow this eviction: it sets neither "
                "minAvailable nor maxUnavailable",
                "relax PodDisruptionBudget shop/empty (neither minAvailable nor maxUnavailable), "
                "or delete pod shop/web-a yourself: deployment shop/web recreates it on another "
                "node")},
      {"value that is no count or percentage",
       pod("shop", "web-a"),
       {budget("shop", "web-pdb", percent("half"), std::nullopt, {2, 2, 2, 0})},
       deployment("shop", "web", 2),
       deadlock(true,
                "PodDisruptionBudget shop/web-pdb can never allow this eviction: minAvailable "
                "half is not a count or a percentage",
                "relax PodDisruptionBudget shop/web-pdb (minAvailable half of 2 expected), or "
                "delete pod shop/web-a yourself: deployment shop/web recreates it on another "
                "node")},
      {"no covering budget", pod("shop", "web-a"), {}, deployment("shop", "web", 1), {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(classify_disruption(c.pod, c.covering, c.owner), c.want);
  }
}

TEST(ClassifyDisruptionTest, TwoBudgetsAreADeadlockThatSurgeCannotEnd) {
  const std::vector<PodDisruptionBudget> covering = {
      budget("shop", "web-pdb", count(1), std::nullopt, {3, 3, 1, 2}),
      budget("shop", "all-pdb", std::nullopt, percent("10%"), {9, 9, 8, 1})};
  const DisruptionVerdict want = {
      .wait = DisruptionWait::kDeadlock,
      .kind = DeadlockKind::kMultipleBudgets,
      .surgeable = false,
      .message =
          "2 PodDisruptionBudgets cover this pod (shop/web-pdb and shop/all-pdb): the "
          "eviction API refuses to evict a pod under more than one",
      .way_out =
          "delete PodDisruptionBudget shop/web-pdb or shop/all-pdb, or narrow its "
          "selector, until a single budget covers pod shop/web-a",
  };
  EXPECT_EQ(classify_disruption(pod("shop", "web-a"), covering, deployment("shop", "web", 3)),
            want);

  const std::vector<PodDisruptionBudget> three = {budget("shop", "a", count(1), std::nullopt, {}),
                                                  budget("shop", "b", count(1), std::nullopt, {}),
                                                  budget("shop", "c", count(1), std::nullopt, {})};
  const DisruptionVerdict verdict =
      classify_disruption(pod("shop", "web-a"), three, deployment("shop", "web", 3));
  EXPECT_EQ(verdict.message,
            "3 PodDisruptionBudgets cover this pod (shop/a, shop/b and shop/c): the eviction API "
            "refuses to evict a pod under more than one");
  EXPECT_EQ(verdict.way_out,
            "delete PodDisruptionBudget shop/a, shop/b or shop/c, or narrow its selector, until a "
            "single budget covers pod shop/web-a");
}

TEST(ClassifyDisruptionTest, PodsTheEvictionHandlerDeletesWithoutBudgets) {
  const std::vector<PodDisruptionBudget> deadlocked = {
      budget("shop", "web-pdb", count(1), std::nullopt, {1, 1, 1, 0}),
      budget("shop", "all-pdb", count(1), std::nullopt, {1, 1, 1, 0})};
  const PodOwner owner = deployment("shop", "web", 1);
  for (const char* phase : {"Pending", "Succeeded", "Failed"}) {
    kube::Pod p = pod("shop", "web-a", "False");
    p.phase = phase;
    EXPECT_EQ(classify_disruption(p, deadlocked, owner), DisruptionVerdict{}) << phase;
  }
  kube::Pod terminating = pod("shop", "web-a");
  terminating.meta.deletion_timestamp = kube::Time{};
  EXPECT_EQ(classify_disruption(terminating, deadlocked, owner), DisruptionVerdict{});
}

TEST(ClassifyDisruptionTest, GrantedEvictionIsTransient) {
  PodDisruptionBudget pdb = budget("shop", "web-pdb", count(1), std::nullopt, {2, 1, 1, 0});
  pdb.disrupted_pods.emplace("web-a", kube::Time{});
  const std::vector<PodDisruptionBudget> covering = {pdb};
  EXPECT_EQ(classify_disruption(pod("shop", "web-a"), covering, deployment("shop", "web", 2)),
            transient("PodDisruptionBudget shop/web-pdb already granted this pod's eviction; "
                      "waiting for the pod to be deleted"));
}

TEST(ClassifyDisruptionTest, BudgetStatusOfAnOlderSpecIsTransient) {
  // Just changed from minAvailable 1 to 0: the old status still says 0 disruptions allowed.
  PodDisruptionBudget pdb = budget("shop", "web-pdb", count(0), std::nullopt, {1, 1, 1, 0});
  pdb.meta.generation = 3;
  const std::vector<PodDisruptionBudget> covering = {pdb};
  EXPECT_EQ(classify_disruption(pod("shop", "web-a"), covering, deployment("shop", "web", 1)),
            transient("PodDisruptionBudget shop/web-pdb is still being processed by the disruption "
                      "controller"));
}

TEST(ClassifyDisruptionTest, UnhealthyPodsUnderTheirPolicy) {
  const PodOwner owner = deployment("shop", "web", 3);
  // IfHealthyBudget (unset): the others keep the budget healthy, the unready pod may go.
  const std::vector<PodDisruptionBudget> healthy_budget = {
      budget("shop", "web-pdb", std::nullopt, count(0), {3, 2, 2, 0})};
  EXPECT_EQ(classify_disruption(pod("shop", "web-a", "False"), healthy_budget, owner),
            DisruptionVerdict{});
  // ... but not when the budget is short of healthy pods: the budget never allows (maxUnavailable
  // 0), whether or not this pod gets ready.
  const std::vector<PodDisruptionBudget> short_budget = {
      budget("shop", "web-pdb", std::nullopt, count(0), {3, 1, 3, 0})};
  EXPECT_EQ(classify_disruption(pod("shop", "web-a", "False"), short_budget, owner).wait,
            DisruptionWait::kDeadlock);
  // AlwaysAllow: an unready pod goes whatever the budget says; a ready one does not.
  std::vector<PodDisruptionBudget> always = short_budget;
  always.front().unhealthy_pod_eviction_policy = "AlwaysAllow";
  EXPECT_EQ(classify_disruption(pod("shop", "web-a", "False"), always, owner), DisruptionVerdict{});
  EXPECT_EQ(classify_disruption(pod("shop", "web-a", "True"), always, owner).wait,
            DisruptionWait::kDeadlock);
}

TEST(DesiredHealthyTest, FollowsTheDisruptionController) {
  struct Row {
    std::optional<IntOrString> min;
    std::optional<IntOrString> max;
    std::int32_t expected;
    std::optional<std::int64_t> want;
  };
  const Row rows[] = {
      {count(2), std::nullopt, 5, 2},
      {percent("50%"), std::nullopt, 3, 2},  // rounded up
      {percent("50%"), std::nullopt, 2, 1},
      {percent("100%"), std::nullopt, 4, 4},
      {std::nullopt, count(1), 3, 2},
      {std::nullopt, percent("50%"), 3, 1},  // maxUnavailable rounds up too: 3 - 2
      {std::nullopt, percent("10%"), 3, 2},
      {std::nullopt, count(5), 3, 0},  // never below 0
      {count(1), count(1), 3, 2},      // maxUnavailable wins
      {std::nullopt, std::nullopt, 3, 0},
      {percent("half"), std::nullopt, 3, std::nullopt},
  };
  for (const Row& row : rows) {
    const PodDisruptionBudget pdb = budget("ns", "b", row.min, row.max, {row.expected, 0, 0, 0});
    EXPECT_EQ(desired_healthy(pdb), row.want)
        << (row.min ? "min " + row.min->to_string() : std::string()) << " "
        << (row.max ? "max " + row.max->to_string() : std::string()) << " of " << row.expected;
  }
}

TEST(PodOwnerTest, FromReadModels) {
  kube::Deployment web;
  web.meta.namespace_ = "shop";
  web.meta.name = "web";
  web.replicas = 1;
  web.max_surge = percent("25%");
  EXPECT_EQ(owner_of(web), (PodOwner{.kind = PodOwnerKind::kDeployment,
                                     .namespace_ = "shop",
                                     .name = "web",
                                     .replicas = 1,
                                     .recreate = false,
                                     .opted_out = false,
                                     .hpa = {}}));
  kube::Deployment no_surge = web;
  no_surge.max_surge = count(0);
  no_surge.max_unavailable = count(1);
  EXPECT_TRUE(owner_of(no_surge).recreate);
  kube::Deployment recreate = web;
  recreate.strategy_type = kube::kRecreateStrategy;
  EXPECT_TRUE(owner_of(recreate).recreate);
  kube::Deployment opted_out = web;
  opted_out.meta.annotations.set(std::string(kSurgeAnnotation), "false");
  EXPECT_TRUE(owner_of(opted_out).opted_out);

  kube::StatefulSet pg;
  pg.meta.namespace_ = "db";
  pg.meta.name = "pg";
  pg.replicas = 3;
  EXPECT_EQ(owner_of(pg), (PodOwner{.kind = PodOwnerKind::kStatefulSet,
                                    .namespace_ = "db",
                                    .name = "pg",
                                    .replicas = 3,
                                    .recreate = false,
                                    .opted_out = false,
                                    .hpa = {}}));
  kube::ReplicaSet rs;
  rs.meta.namespace_ = "shop";
  rs.meta.name = "legacy";
  rs.replicas = 2;
  EXPECT_EQ(owner_of(rs).kind, PodOwnerKind::kReplicaSet);
  EXPECT_EQ(owner_of(rs).replicas, 2);
}

TEST(SurgeOptOutTest, OnlyFalseOptsOut) {
  kube::ObjectMeta meta;
  EXPECT_FALSE(opts_out_of_surge(meta));
  meta.annotations.set(std::string(kSurgeAnnotation), "true");
  EXPECT_FALSE(opts_out_of_surge(meta));
  meta.annotations.set(std::string(kSurgeAnnotation), "False");
  EXPECT_FALSE(opts_out_of_surge(meta));
  meta.annotations.set(std::string(kSurgeAnnotation), "false");
  EXPECT_TRUE(opts_out_of_surge(meta));
}

TEST(DeadlockNamesTest, ToString) {
  EXPECT_EQ(to_string(DisruptionWait::kTransient), "Transient");
  EXPECT_EQ(to_string(DisruptionWait::kDeadlock), "Deadlock");
  EXPECT_EQ(to_string(DeadlockKind::kBudgetNeverAllows), "BudgetNeverAllows");
  EXPECT_EQ(to_string(DeadlockKind::kMultipleBudgets), "MultipleBudgets");
  EXPECT_EQ(to_string(PodOwnerKind::kStatefulSet), "StatefulSet");
  EXPECT_EQ(to_string(PodOwnerKind::kBare), "Bare");
}

}  // namespace
}  // namespace nmo::op
