// What the drain does after each eviction answer (docs/design.md §2.4): the pod's pending reason
// and message for status.pendingPodsRefs, when to try again, and whether to report a DrainError.
//
//   answer (kube::EvictionOutcome)  next              reason                 DrainError  retry
//   kEvicted (2xx)                  kWaitForDeletion  WaitingForTermination  no          -
//   kNotFound (404)                 kGone             -                      no          -
//   kBlockedByPdb (429)             kRetry            BlockedByPDB           yes         backoff
//   kDeferred (429 webhook)         kRetry            EvictionDeferred       yes         backoff
//   kThrottled (429 APF)            kRetry            Evicting               no  Retry-After+jitter
//   kMultiplePdbs (500)             kRetry            MultiplePDBs           yes         30 s
//   kNamespaceTerminating (403)     kRetry            NamespaceTerminating   yes         backoff
//   kRefused (anything else)        kRetry            Error                  yes         backoff
//
// Backoff for refused pods, per pod: 5 s, 10 s, 20 s, then 30 s for every further consecutive
// refusal (docs/design.md §2.4: "from 5 s to 30 s"). A Retry-After (details.retryAfterSeconds or
// the header) larger than that step is honoured, capped at kMaxRetryAfter (5 min) so a bogus value
// cannot park a pod for hours. A refusal by the one budget covering the pod is retried earlier
// when that budget, changed since, allows a disruption (the state machine's start_due_evictions()
// in operator/controller, docs/design.md §2.4). A
// throttled answer (API Priority & Fairness) is not a refusal: it does not advance the backoff,
// keeps the pod's reason at Evicting, and retries after d to 1.5 d at random, d being Retry-After
// (1 s when absent, at most 30 s): the evictions APF throttled together (up to 32 per node) come
// back spread out, not in the same second. The client meanwhile holds back every write of its
// own after such a 429 (kube/client/server_throttle.h).
//
// Threading: pure functions, given the random fraction (the default argument draws it from the
// calling thread's own engine); safe to call from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/jitter.h"
#include "kube/api/eviction.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/time.h"
#include "operator/api/node_maintenance.h"

namespace nmo::op {

// The first delay after a refusal, the cap of the doubling, and the cap on Retry-After.
inline constexpr std::chrono::seconds kFirstRefusalDelay{5};
inline constexpr std::chrono::seconds kMaxRefusalDelay{30};
inline constexpr std::chrono::seconds kMaxRetryAfter{300};
// A throttled eviction without Retry-After is retried after this (APF itself sends 1 s), or up to
// half again with jitter.
inline constexpr std::chrono::seconds kDefaultThrottleDelay{1};

// What to do with the pod next.
enum class EvictionNext {
  kWaitForDeletion,  // accepted: watch the pod until it disappears or is replaced (new uid)
  kGone,             // the pod no longer exists: it counts as gone
  kRetry,            // send the eviction again after `retry_after`
};

struct EvictionDecision {
  EvictionNext next = EvictionNext::kRetry;
  // For status.pendingPodsRefs[]; meaningless when next == kGone.
  PendingPodReason reason = PendingPodReason::kEvicting;
  std::string message;
  // kRetry: how long to wait before the next eviction of this pod.
  std::chrono::milliseconds retry_after{0};
  // The pod's consecutive refusals after this answer; pass it back as `previous_refusals` for the
  // pod's next answer (0 after an accepted eviction; unchanged after a throttled one).
  int refusals = 0;
  // True for a refusal: emit DrainError (Warning) on the CR with `api_message` verbatim (the pod
  // in the Event's `related` field) and set status.lastError to it.
  bool drain_error = false;
  std::string api_message;

  friend bool operator==(const EvictionDecision&, const EvictionDecision&) = default;
};

// The decision for one eviction answer. `covering_pdbs` are the budgets that select the pod (see
// covering_pdbs()); they only shape the message. `previous_refusals` is the pod's `refusals` from
// its previous decision (0 at first). `jitter`, in [0, 1), places a throttled answer's retry in
// its spread (throttle_delay()); tests pass a fixed one.
[[nodiscard]] EvictionDecision decide_eviction(
    const kube::EvictionResult& result, std::span<const kube::PodDisruptionBudget> covering_pdbs,
    int previous_refusals, double jitter = uniform_random());

// The delay after the n-th consecutive refusal (n >= 1): 5 s, 10 s, 20 s, 30 s, 30 s, ...; a
// larger `retry_after` wins, capped at kMaxRetryAfter.
// The pending reason of a 429 from an admission webhook, from its message: KubeVirt's migration
// in progress (kMigratingVm), its refusal for good of a VM that cannot live-migrate
// (kVmNotMigratable), anything else kEvictionDeferred (docs/design.md §2.9).
[[nodiscard]] PendingPodReason deferred_eviction_reason(std::string_view message) noexcept;

[[nodiscard]] std::chrono::milliseconds refusal_delay(
    int refusals, std::optional<std::chrono::seconds> retry_after) noexcept;

// The delay before retrying an eviction that API Priority & Fairness throttled: d stretched by
// `jitter` (in [0, 1); NMO_CHECK) up to 1.5 d, d being `retry_after` clamped to [1 s, 30 s] (1 s
// when absent).
[[nodiscard]] std::chrono::milliseconds throttle_delay(
    std::optional<std::chrono::seconds> retry_after, double jitter);

// Whether `pdb` covers `pod`: same namespace, and its selector matches the pod's labels.
[[nodiscard]] bool covers(const kube::PodDisruptionBudget& pdb, const kube::Pod& pod);

// The budgets among `pdbs` that cover `pod` (covers()).
[[nodiscard]] std::vector<kube::PodDisruptionBudget> covering_pdbs(
    const kube::Pod& pod, std::span<const kube::PodDisruptionBudget> pdbs);

// One budget as the status shows it, e.g.
//   PDB kubevirt-system/vm-order-processing-pdb: 0 disruptions allowed (1 healthy, 1 desired)
[[nodiscard]] std::string describe_pdb(const kube::PodDisruptionBudget& pdb);

// The longest deletionGracePeriodSeconds terminating_since() takes at its word (100 years, far
// beyond any real grace period). The field is an int64 set from whatever the deleting client
// asked for; a larger value would overflow the microsecond clock of kube::Time.
inline constexpr std::chrono::seconds kMaxTerminationGracePeriod{100LL * 365 * 24 * 3600};

// When the pod started terminating: deletionTimestamp minus deletionGracePeriodSeconds (the API
// server sets deletionTimestamp to the end of the grace period), the grace period taken as 0 when
// negative and as kMaxTerminationGracePeriod when larger. std::nullopt when the pod is not
// terminating.
[[nodiscard]] std::optional<kube::Time> terminating_since(const kube::Pod& pod);

// The pendingPodsRefs message for a pod whose eviction was accepted:
//   terminating for 2m5s
//   terminating for 2m5s (past its 30s grace period)      once the grace period is over
//   eviction accepted, waiting for the pod to terminate   before deletionTimestamp is seen
// Spans beyond format_duration()'s range print as its longest duration, 2562047h47m16s.
[[nodiscard]] std::string termination_message(const kube::Pod& pod, kube::Time now);

}  // namespace nmo::op
