#include "operator/drain/eviction_policy.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "kube/api/status.h"
#include "operator/kubevirt/vm_policy.h"

namespace nmo::op {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string api_text(const Error& status) {
  return status.message.empty() ? status.describe() : status.message;
}

std::string join_pdb_names(std::span<const kube::PodDisruptionBudget> pdbs) {
  std::string names;
  for (const kube::PodDisruptionBudget& pdb : pdbs) {
    if (!names.empty()) names += ", ";
    names += pdb.meta.namespace_;
    names += '/';
    names += pdb.meta.name;
  }
  return names;
}

// The message for a PDB refusal: the covering budgets that allow no disruption (all of them when
// the cache says otherwise), else what the API server said about the budget.
std::string pdb_blocked_message(const Error& status,
                                std::span<const kube::PodDisruptionBudget> covering) {
  std::string message;
  const bool any_exhausted = std::any_of(
      covering.begin(), covering.end(),
      [](const kube::PodDisruptionBudget& pdb) { return pdb.disruptions_allowed <= 0; });
  for (const kube::PodDisruptionBudget& pdb : covering) {
    if (any_exhausted && pdb.disruptions_allowed > 0) continue;
    if (!message.empty()) message += "; ";
    message += describe_pdb(pdb);
  }
  if (!message.empty()) return message;
  if (const std::optional<ErrorCause> cause = kube::find_cause(status, "DisruptionBudget");
      cause && !cause->message.empty()) {
    return cause->message;
  }
  return api_text(status);
}

// format_duration() of a span in seconds, which may come from any pod's metadata: negative spans
// print as 0s and spans beyond a Go duration's range (about 292 years) as that range, instead of
// overflowing in the conversion to nanoseconds.
std::string format_seconds(seconds span) {
  constexpr seconds kLongest = std::chrono::floor<seconds>(Duration::max());
  return format_duration(std::clamp(span, seconds{0}, kLongest));
}

}  // namespace

milliseconds throttle_delay(std::optional<seconds> retry_after, double jitter) {
  const seconds floor = std::clamp(retry_after.value_or(kDefaultThrottleDelay),
                                   kDefaultThrottleDelay, kMaxRefusalDelay);
  return std::chrono::duration_cast<milliseconds>(jitter_above(floor, jitter));
}

milliseconds refusal_delay(int refusals, std::optional<seconds> retry_after) noexcept {
  seconds step = kFirstRefusalDelay;
  for (int i = 1; i < refusals && step < kMaxRefusalDelay; ++i) step *= 2;
  step = std::min(step, kMaxRefusalDelay);
  if (retry_after && *retry_after > step) step = std::min(*retry_after, kMaxRetryAfter);
  return step;
}

PendingPodReason deferred_eviction_reason(std::string_view message) noexcept {
  switch (classify_kubevirt_refusal(message)) {
    case KubeVirtRefusal::kEvacuationStarted:
    case KubeVirtRefusal::kEvacuationInProgress:
      return PendingPodReason::kMigratingVm;
    case KubeVirtRefusal::kNotLiveMigratable:
      return PendingPodReason::kVmNotMigratable;
    case KubeVirtRefusal::kOther:
      break;
  }
  return PendingPodReason::kEvictionDeferred;
}

EvictionDecision decide_eviction(const kube::EvictionResult& result,
                                 std::span<const kube::PodDisruptionBudget> covering_pdbs,
                                 int previous_refusals, double jitter) {
  EvictionDecision decision;
  const Error& status = result.status;
  const int refusals = std::max(previous_refusals, 0) + 1;
  auto refuse = [&](PendingPodReason reason, std::string message, milliseconds delay) {
    decision.next = EvictionNext::kRetry;
    decision.reason = reason;
    decision.message = std::move(message);
    decision.retry_after = delay;
    decision.refusals = refusals;
    decision.drain_error = true;
    decision.api_message = api_text(status);
  };
  switch (result.outcome) {
    case kube::EvictionOutcome::kEvicted:
      decision.next = EvictionNext::kWaitForDeletion;
      decision.reason = PendingPodReason::kWaitingForTermination;
      decision.message = "eviction accepted, waiting for the pod to terminate";
      return decision;
    case kube::EvictionOutcome::kNotFound:
      decision.next = EvictionNext::kGone;
      return decision;
    case kube::EvictionOutcome::kThrottled: {
      decision.next = EvictionNext::kRetry;
      decision.reason = PendingPodReason::kEvicting;
      decision.retry_after = throttle_delay(result.retry_after(), jitter);
      decision.refusals = std::max(previous_refusals, 0);
      return decision;
    }
    case kube::EvictionOutcome::kBlockedByPdb:
      refuse(PendingPodReason::kBlockedByPdb, pdb_blocked_message(status, covering_pdbs),
             refusal_delay(refusals, result.retry_after()));
      return decision;
    case kube::EvictionOutcome::kDeferred: {
      // KubeVirt's refusal for good: waiting alone never resolves it, so the slowest pace.
      const PendingPodReason reason = deferred_eviction_reason(status.message);
      const int paced =
          reason == PendingPodReason::kVmNotMigratable ? std::max(refusals, 4) : refusals;
      refuse(reason, api_text(status), refusal_delay(paced, result.retry_after()));
      return decision;
    }
    case kube::EvictionOutcome::kMultiplePdbs: {
      // Nothing changes until someone fixes the budgets: retry at the slowest pace at once.
      const std::string names = join_pdb_names(covering_pdbs);
      refuse(PendingPodReason::kMultiplePdbs,
             fmt::format("covered by more than one PodDisruptionBudget{}; the Eviction API refuses "
                         "the pod until only one remains; retrying every {}",
                         names.empty() ? std::string() : fmt::format(" ({})", names),
                         format_duration(kMaxRefusalDelay)),
             refusal_delay(std::max(refusals, 4), result.retry_after()));
      return decision;
    }
    case kube::EvictionOutcome::kNamespaceTerminating:
      refuse(PendingPodReason::kNamespaceTerminating, api_text(status),
             refusal_delay(refusals, result.retry_after()));
      return decision;
    case kube::EvictionOutcome::kRefused:
      break;
  }
  refuse(PendingPodReason::kError, api_text(status), refusal_delay(refusals, result.retry_after()));
  return decision;
}

bool covers(const kube::PodDisruptionBudget& pdb, const kube::Pod& pod) {
  return pdb.meta.namespace_ == pod.meta.namespace_ && pdb.selects(pod.meta.labels);
}

std::vector<kube::PodDisruptionBudget> covering_pdbs(
    const kube::Pod& pod, std::span<const kube::PodDisruptionBudget> pdbs) {
  std::vector<kube::PodDisruptionBudget> covering;
  for (const kube::PodDisruptionBudget& pdb : pdbs) {
    if (covers(pdb, pod)) covering.push_back(pdb);
  }
  return covering;
}

std::string describe_pdb(const kube::PodDisruptionBudget& pdb) {
  return fmt::format("PDB {}/{}: {} disruptions allowed ({} healthy, {} desired)",
                     pdb.meta.namespace_, pdb.meta.name, pdb.disruptions_allowed,
                     pdb.current_healthy, pdb.desired_healthy);
}

std::optional<kube::Time> terminating_since(const kube::Pod& pod) {
  if (!pod.meta.deletion_timestamp) return std::nullopt;
  const seconds grace{std::clamp<std::int64_t>(pod.meta.deletion_grace_period_seconds.value_or(0),
                                               0, kMaxTerminationGracePeriod.count())};
  return *pod.meta.deletion_timestamp - grace;
}

std::string termination_message(const kube::Pod& pod, kube::Time now) {
  const std::optional<kube::Time> since = terminating_since(pod);
  if (!since) return "eviction accepted, waiting for the pod to terminate";
  const auto elapsed = std::chrono::floor<seconds>(now - *since);
  std::string message = fmt::format("terminating for {}", format_seconds(elapsed));
  if (pod.meta.deletion_grace_period_seconds && now > *pod.meta.deletion_timestamp) {
    message += fmt::format(" (past its {} grace period)",
                           format_seconds(seconds{*pod.meta.deletion_grace_period_seconds}));
  }
  return message;
}

}  // namespace nmo::op
