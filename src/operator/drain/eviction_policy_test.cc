#include "operator/drain/eviction_policy.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

kube::PodDisruptionBudget pdb(std::string ns, std::string name, std::int32_t allowed,
                              std::int32_t healthy, std::int32_t desired) {
  kube::PodDisruptionBudget budget;
  budget.meta.namespace_ = std::move(ns);
  budget.meta.name = std::move(name);
  budget.disruptions_allowed = allowed;
  budget.current_healthy = healthy;
  budget.desired_healthy = desired;
  return budget;
}

kube::EvictionResult answer(kube::EvictionOutcome outcome, int http_status, std::string message,
                            std::optional<seconds> retry_after = std::nullopt) {
  kube::EvictionResult result;
  result.outcome = outcome;
  result.status = Error(ErrorCode::kUnknown, std::move(message), http_status);
  result.status.retry_after = retry_after;
  return result;
}

constexpr const char* kPdbRefusal =
    "Cannot evict pod as it would violate the pod's disruption budget.";

TEST(DecideEvictionTest, AcceptedWaitsForTermination) {
  const EvictionDecision d =
      decide_eviction(answer(kube::EvictionOutcome::kEvicted, 201, ""), {}, 3);
  EXPECT_EQ(d.next, EvictionNext::kWaitForDeletion);
  EXPECT_EQ(d.reason, PendingPodReason::kWaitingForTermination);
  EXPECT_EQ(d.refusals, 0);
  EXPECT_FALSE(d.drain_error);
}

TEST(DecideEvictionTest, NotFoundIsGone) {
  const EvictionDecision d =
      decide_eviction(answer(kube::EvictionOutcome::kNotFound, 404, "pods \"x\" not found"), {}, 2);
  EXPECT_EQ(d.next, EvictionNext::kGone);
  EXPECT_FALSE(d.drain_error);
  EXPECT_EQ(d.refusals, 0);
}

TEST(DecideEvictionTest, BlockedByPdbNamesTheBudgetAndReportsTheApiTextVerbatim) {
  const std::vector<kube::PodDisruptionBudget> covering{
      pdb("kubevirt-system", "vm-order-processing-pdb", 0, 1, 1)};
  const EvictionDecision d =
      decide_eviction(answer(kube::EvictionOutcome::kBlockedByPdb, 429, kPdbRefusal), covering, 0);
  EXPECT_EQ(d.next, EvictionNext::kRetry);
  EXPECT_EQ(d.reason, PendingPodReason::kBlockedByPdb);
  EXPECT_EQ(to_string(d.reason), "BlockedByPDB");
  EXPECT_EQ(d.message,
            "PDB kubevirt-system/vm-order-processing-pdb: 0 disruptions allowed (1 healthy, 1 "
            "desired)");
  EXPECT_TRUE(d.drain_error);
  EXPECT_EQ(d.api_message, kPdbRefusal);
  EXPECT_EQ(d.retry_after, seconds{5});
  EXPECT_EQ(d.refusals, 1);
}

TEST(DecideEvictionTest, BlockedByPdbWithoutKnownBudgetUsesTheCause) {
  kube::EvictionResult result = answer(kube::EvictionOutcome::kBlockedByPdb, 429, kPdbRefusal);
  result.status.causes.push_back(
      {.reason = "DisruptionBudget",
       .message = "The disruption budget db-pdb needs 2 healthy pods and has 2 currently",
       .field = ""});
  EXPECT_EQ(decide_eviction(result, {}, 0).message,
            "The disruption budget db-pdb needs 2 healthy pods and has 2 currently");
  result.status.causes.clear();
  EXPECT_EQ(decide_eviction(result, {}, 0).message, kPdbRefusal);
}

TEST(DecideEvictionTest, BlockedByPdbPrefersTheExhaustedBudget) {
  const std::vector<kube::PodDisruptionBudget> covering{pdb("shop", "a", 1, 3, 2),
                                                        pdb("shop", "b", 0, 2, 2)};
  EXPECT_EQ(
      decide_eviction(answer(kube::EvictionOutcome::kBlockedByPdb, 429, kPdbRefusal), covering, 0)
          .message,
      "PDB shop/b: 0 disruptions allowed (2 healthy, 2 desired)");
}

TEST(DecideEvictionTest, BackoffDoublesFrom5To30Seconds) {
  const kube::EvictionResult blocked =
      answer(kube::EvictionOutcome::kBlockedByPdb, 429, kPdbRefusal);
  int refusals = 0;
  std::vector<milliseconds> delays;
  for (int i = 0; i < 6; ++i) {
    const EvictionDecision d = decide_eviction(blocked, {}, refusals);
    delays.push_back(d.retry_after);
    refusals = d.refusals;
  }
  EXPECT_EQ(delays, (std::vector<milliseconds>{seconds{5}, seconds{10}, seconds{20}, seconds{30},
                                               seconds{30}, seconds{30}}));
  EXPECT_EQ(refusals, 6);
}

TEST(DecideEvictionTest, RetryAfterIsHonouredWhenLargerAndCapped) {
  EXPECT_EQ(refusal_delay(1, seconds{2}), seconds{5});
  EXPECT_EQ(refusal_delay(1, seconds{12}), seconds{12});
  EXPECT_EQ(refusal_delay(4, seconds{60}), seconds{60});
  EXPECT_EQ(refusal_delay(4, seconds{86400}), kMaxRetryAfter);
  EXPECT_EQ(refusal_delay(100000, std::nullopt), seconds{30});
  EXPECT_EQ(refusal_delay(0, std::nullopt), seconds{5});
  const EvictionDecision d = decide_eviction(
      answer(kube::EvictionOutcome::kBlockedByPdb, 429, kPdbRefusal, seconds{15}), {}, 0);
  EXPECT_EQ(d.retry_after, seconds{15});
}

TEST(DecideEvictionTest, ThrottledIsNotABlocker) {
  const EvictionDecision d =
      decide_eviction(answer(kube::EvictionOutcome::kThrottled, 429,
                             "Too many requests, please try again later.", seconds{2}),
                      {}, 2, 0.0);
  EXPECT_EQ(d.next, EvictionNext::kRetry);
  EXPECT_EQ(d.reason, PendingPodReason::kEvicting);
  EXPECT_EQ(d.retry_after, seconds{2});
  EXPECT_EQ(d.refusals, 2);  // the backoff does not move
  EXPECT_FALSE(d.drain_error);
  EXPECT_EQ(d.message, "");
  // Without Retry-After: 1 s; an absurd one is capped at 30 s.
  EXPECT_EQ(
      decide_eviction(answer(kube::EvictionOutcome::kThrottled, 429, "x"), {}, 0, 0.0).retry_after,
      seconds{1});
  EXPECT_EQ(
      decide_eviction(answer(kube::EvictionOutcome::kThrottled, 429, "x", seconds{999}), {}, 0, 0.0)
          .retry_after,
      seconds{30});
}

TEST(DecideEvictionTest, ThrottledRetriesSpreadAboveRetryAfter) {
  EXPECT_EQ(throttle_delay(seconds{2}, 0.0), seconds{2});
  EXPECT_EQ(throttle_delay(seconds{2}, 0.5), milliseconds{2500});
  EXPECT_EQ(throttle_delay(seconds{2}, 0.9999), milliseconds{2999});
  EXPECT_EQ(throttle_delay(std::nullopt, 0.5), milliseconds{1250});
  EXPECT_EQ(throttle_delay(seconds{999}, 0.9999), milliseconds{44998});
  EXPECT_EQ(throttle_delay(seconds{0}, 0.0), seconds{1});
}

// 32 evictions of one node (--evictions-in-flight) throttled together by Priority and Fairness.
TEST(DecideEvictionTest, EvictionsThrottledTogetherDoNotAllRetryTogether) {
  const kube::EvictionResult throttled =
      answer(kube::EvictionOutcome::kThrottled, 429, "Too many requests, please try again later.",
             seconds{1});
  std::set<milliseconds> retries;
  for (int pod = 0; pod < 32; ++pod) {
    const milliseconds retry = decide_eviction(throttled, {}, 0, pod / 32.0).retry_after;
    EXPECT_GE(retry, seconds{1});
    EXPECT_LT(retry, milliseconds{1500});
    retries.insert(retry);
  }
  EXPECT_EQ(retries.size(), 32U);
  // The default jitter is random: 32 draws over 500 possible milliseconds are not all alike.
  std::set<milliseconds> drawn;
  for (int pod = 0; pod < 32; ++pod) {
    const milliseconds retry = decide_eviction(throttled, {}, 0).retry_after;
    EXPECT_GE(retry, seconds{1});
    EXPECT_LT(retry, milliseconds{1500});
    drawn.insert(retry);
  }
  EXPECT_GT(drawn.size(), 1U);
}

TEST(DecideEvictionTest, DeferredByKubeVirt) {
  const std::string text =
      "admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied the request: "
      "Eviction triggered evacuation of VMI \"vms/order-db\"";
  const EvictionDecision d =
      decide_eviction(answer(kube::EvictionOutcome::kDeferred, 429, text), {}, 0);
  EXPECT_EQ(d.reason, PendingPodReason::kMigratingVm);
  EXPECT_EQ(to_string(d.reason), "MigratingVM");
  EXPECT_EQ(d.message, text);
  EXPECT_TRUE(d.drain_error);
  EXPECT_EQ(d.api_message, text);
  EXPECT_EQ(d.retry_after, seconds{5});

  // KubeVirt's refusal of a VM that cannot migrate: waiting alone never resolves it, so the
  // slowest pace at once.
  const std::string refused =
      "admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied the request: "
      "VMI order-db is configured with an eviction strategy but is not live-migratable";
  const EvictionDecision r =
      decide_eviction(answer(kube::EvictionOutcome::kDeferred, 429, refused), {}, 0);
  EXPECT_EQ(r.reason, PendingPodReason::kVmNotMigratable);
  EXPECT_EQ(r.retry_after, seconds{30});

  // Any other webhook's 429.
  const EvictionDecision other =
      decide_eviction(answer(kube::EvictionOutcome::kDeferred, 429, "later, please"), {}, 0);
  EXPECT_EQ(other.reason, PendingPodReason::kEvictionDeferred);
}

TEST(DecideEvictionTest, MultiplePdbsRetrySlowlyAndSaySo) {
  const std::string text =
      "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
      "support.";
  const std::vector<kube::PodDisruptionBudget> covering{pdb("shop", "a", 0, 1, 1),
                                                        pdb("shop", "b", 1, 2, 1)};
  const EvictionDecision d =
      decide_eviction(answer(kube::EvictionOutcome::kMultiplePdbs, 500, text), covering, 0);
  EXPECT_EQ(d.reason, PendingPodReason::kMultiplePdbs);
  EXPECT_EQ(to_string(d.reason), "MultiplePDBs");
  EXPECT_EQ(d.message,
            "covered by more than one PodDisruptionBudget (shop/a, shop/b); the Eviction API "
            "refuses the pod until only one remains; retrying every 30s");
  EXPECT_EQ(d.retry_after, seconds{30});
  EXPECT_TRUE(d.drain_error);
  EXPECT_EQ(d.api_message, text);
  EXPECT_EQ(decide_eviction(answer(kube::EvictionOutcome::kMultiplePdbs, 500, text), {}, 0).message,
            "covered by more than one PodDisruptionBudget; the Eviction API refuses the pod until "
            "only one remains; retrying every 30s");
}

TEST(DecideEvictionTest, NamespaceTerminatingAndOtherRefusals) {
  const std::string terminating =
      "pods \"web\" is forbidden: unable to create new content in namespace shop because it is "
      "being terminated";
  EvictionDecision d = decide_eviction(
      answer(kube::EvictionOutcome::kNamespaceTerminating, 403, terminating), {}, 1);
  EXPECT_EQ(d.reason, PendingPodReason::kNamespaceTerminating);
  EXPECT_EQ(d.message, terminating);
  EXPECT_EQ(d.retry_after, seconds{10});
  EXPECT_EQ(d.refusals, 2);

  d = decide_eviction(answer(kube::EvictionOutcome::kRefused, 403,
                             "pods \"web\" is forbidden: User cannot create pods/eviction"),
                      {}, 0);
  EXPECT_EQ(d.reason, PendingPodReason::kError);
  EXPECT_EQ(to_string(d.reason), "Error");
  EXPECT_TRUE(d.drain_error);
  EXPECT_EQ(d.api_message, "pods \"web\" is forbidden: User cannot create pods/eviction");

  // An error without a message still explains itself.
  kube::EvictionResult empty;
  empty.outcome = kube::EvictionOutcome::kRefused;
  empty.status = Error(ErrorCode::kUnavailable, "", 503);
  EXPECT_EQ(decide_eviction(empty, {}, 0).api_message, "ServiceUnavailable (503)");
}

TEST(CoveringPdbsTest, SameNamespaceAndMatchingSelector) {
  kube::Pod pod;
  pod.meta.namespace_ = "shop";
  pod.meta.labels = kube::Labels{{"app", "db"}};
  kube::PodDisruptionBudget matching = pdb("shop", "db", 0, 1, 1);
  matching.selector = kube::LabelSelector{};
  matching.selector->match_labels = kube::Labels{{"app", "db"}};
  kube::PodDisruptionBudget other_namespace = matching;
  other_namespace.meta.namespace_ = "other";
  kube::PodDisruptionBudget no_selector = pdb("shop", "none", 0, 0, 0);
  kube::PodDisruptionBudget other_labels = matching;
  other_labels.meta.name = "web";
  other_labels.selector->match_labels = kube::Labels{{"app", "web"}};
  const std::vector<kube::PodDisruptionBudget> all{matching, other_namespace, no_selector,
                                                   other_labels};
  const std::vector<kube::PodDisruptionBudget> covering = covering_pdbs(pod, all);
  ASSERT_EQ(covering.size(), 1U);
  EXPECT_EQ(covering[0].meta.name, "db");
}

TEST(TerminationMessageTest, HowLongThePodHasBeenTerminating) {
  using std::chrono::sys_days;
  using std::chrono::year;
  const kube::Time start = sys_days{year{2026} / 11 / 30};
  kube::Pod pod;
  EXPECT_EQ(terminating_since(pod), std::nullopt);
  EXPECT_EQ(termination_message(pod, start), "eviction accepted, waiting for the pod to terminate");
  // Deletion requested at `start` with a 600 s grace period: deletionTimestamp is start + 600 s.
  pod.meta.deletion_timestamp = start + seconds{600};
  pod.meta.deletion_grace_period_seconds = 600;
  EXPECT_EQ(terminating_since(pod), start);
  EXPECT_EQ(termination_message(pod, start + seconds{125} + milliseconds{900}),
            "terminating for 2m5s");
  EXPECT_EQ(termination_message(pod, start + seconds{3605}),
            "terminating for 1h0m5s (past its 10m0s grace period)");
  // Without a grace period the deletion timestamp is the start.
  pod.meta.deletion_grace_period_seconds.reset();
  EXPECT_EQ(termination_message(pod, start + seconds{700}), "terminating for 1m40s");
}

// deletionGracePeriodSeconds is any int64 a deleting client asked for, and timestamps span years
// 0001-9999: found by operator_drain_fuzz as signed overflows (UBSan) in the conversions to
// microseconds and nanoseconds.
TEST(TerminationMessageTest, AbsurdGracePeriodsAndTimestampsSaturate) {
  using std::chrono::sys_days;
  using std::chrono::year;
  const kube::Time start = sys_days{year{2026} / 11 / 30};
  kube::Pod pod;
  pod.meta.deletion_timestamp = start;
  pod.meta.deletion_grace_period_seconds = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(terminating_since(pod), start - kMaxTerminationGracePeriod);
  EXPECT_EQ(termination_message(pod, start + seconds{1}),
            "terminating for 876000h0m1s (past its 2562047h47m16s grace period)");

  pod.meta.deletion_grace_period_seconds = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(terminating_since(pod), start);
  EXPECT_EQ(termination_message(pod, start + seconds{1}),
            "terminating for 1s (past its 0s grace period)");

  // Deleted in year 1, looked at in 2026: more than a Go duration can hold.
  pod.meta.deletion_timestamp = sys_days{year{1} / 1 / 1};
  pod.meta.deletion_grace_period_seconds.reset();
  EXPECT_EQ(termination_message(pod, start), "terminating for 2562047h47m16s");
  // And a clock behind the deletion.
  EXPECT_EQ(termination_message(pod, sys_days{year{1} / 1 / 1} - seconds{5}), "terminating for 0s");
}

}  // namespace
}  // namespace nmo::op
