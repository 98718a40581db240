#include "operator/drain/deadlock.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "operator/drain/pod_policy.h"

namespace nmo::op {
namespace {

using kube::PodDisruptionBudget;

// The API server's answer to unhealthy pods: delete them without spending a disruption.
constexpr std::string_view kAlwaysAllow = "AlwaysAllow";

// "shop/web-pdb".
std::string ref(std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", ns, name);
}

std::string budget_ref(const PodDisruptionBudget& pdb) {
  return ref(pdb.meta.namespace_, pdb.meta.name);
}

// The budget's rule with its expected pods: "minAvailable 1 of 1 expected",
// "maxUnavailable 0% of 3 expected", "neither minAvailable nor maxUnavailable".
std::string budget_terms(const PodDisruptionBudget& pdb) {
  if (pdb.max_unavailable) {
    return fmt::format("maxUnavailable {} of {} expected", pdb.max_unavailable->to_string(),
                       pdb.expected_pods);
  }
  if (pdb.min_available) {
    return fmt::format("minAvailable {} of {} expected", pdb.min_available->to_string(),
                       pdb.expected_pods);
  }
  return "neither minAvailable nor maxUnavailable";
}

// The eviction handler deletes such pods at once, without looking for budgets.
bool deleted_without_budget(const kube::Pod& pod) noexcept {
  return pod.phase == "Pending" || has_finished(pod) || is_terminating(pod);
}

// The eviction handler deletes a pod that is not Ready without spending a disruption when the
// budget says AlwaysAllow, or, under IfHealthyBudget (also when unset), when the budget is
// healthy: currentHealthy >= desiredHealthy > 0. Both read the budget's status as it is, before
// the handler looks at observedGeneration.
bool unhealthy_pod_allowed(const kube::Pod& pod, const PodDisruptionBudget& pdb) noexcept {
  if (pod.is_ready()) return false;
  if (pdb.unhealthy_pod_eviction_policy == kAlwaysAllow) return true;
  return pdb.current_healthy >= pdb.desired_healthy && pdb.desired_healthy > 0;
}

// The smallest expectedPods above the current one at which the budget allows a disruption once
// every pod is healthy (desired_healthy() < expectedPods); std::nullopt when none does: a
// maxUnavailable of 0 or 0%, a minAvailable of 100% or more, neither field, an invalid value.
std::optional<std::int64_t> expected_pods_needed(const PodDisruptionBudget& pdb) {
  const std::int64_t next = std::int64_t{pdb.expected_pods} + 1;
  if (pdb.max_unavailable) {
    // expected - ceil(p * expected / 100) < expected for any expected >= 1 once p >= 1.
    const std::optional<std::int64_t> at_one =
        kube::scaled_value(*pdb.max_unavailable, 1, kube::Rounding::kUp);
    if (!at_one || *at_one < 1) return std::nullopt;
    return next;
  }
  if (!pdb.min_available) return std::nullopt;
  if (pdb.min_available->is_int) return std::max(next, pdb.min_available->int_value + 1);
  // ceil(p * e / 100) < e  <=>  e * (100 - p) >= 100: reached from e = ceil(100 / (100 - p)).
  const std::optional<std::int64_t> percent =
      kube::scaled_value(*pdb.min_available, 100, kube::Rounding::kUp);
  if (!percent || *percent >= 100) return std::nullopt;
  const std::int64_t gap = 100 - *percent;
  return std::max(next, (100 + gap - 1) / gap);
}

// "scale deployment shop/web to 2 replicas, or " when adding replicas to the owner lets the
// budget allow a disruption; "" otherwise. StatefulSets are left out: their replicas are not
// interchangeable (each has its own ordinal and volume), so one more does not spare this one.
std::string scale_clause(const PodDisruptionBudget& pdb, const PodOwner& owner) {
  if (owner.kind != PodOwnerKind::kDeployment && owner.kind != PodOwnerKind::kReplicaSet) {
    return {};
  }
  // With no expected pods the budget counts none of the owner's: scaling it changes nothing.
  if (pdb.expected_pods <= 0) return {};
  const std::optional<std::int64_t> needed = expected_pods_needed(pdb);
  if (!needed) return {};
  const std::int64_t target = std::int64_t{owner.replicas} + (*needed - pdb.expected_pods);
  if (!owner.hpa.empty()) {
    return fmt::format("raise minReplicas of HorizontalPodAutoscaler {} to {}, or ",
                       ref(owner.namespace_, owner.hpa), target);
  }
  return fmt::format("scale {} {} to {} replicas, or ",
                     owner.kind == PodOwnerKind::kDeployment ? "deployment" : "replicaset",
                     ref(owner.namespace_, owner.name), target);
}

std::string never_allows_message(const PodDisruptionBudget& pdb) {
  std::string message =
      fmt::format("PodDisruptionBudget {} can never allow this eviction: ", budget_ref(pdb));
  if (!pdb.max_unavailable && !pdb.min_available) {
    message += "it sets neither minAvailable nor maxUnavailable";
  } else if (!desired_healthy(pdb)) {
    const kube::IntOrString& value =
        pdb.max_unavailable ? *pdb.max_unavailable : *pdb.min_available;
    message +=
        fmt::format("{} {} is not a count or a percentage",
                    pdb.max_unavailable ? "maxUnavailable" : "minAvailable", value.to_string());
  } else {
    message += budget_terms(pdb);
    // The controller counts, for these rules, only pods whose controller has a scale.
    if (pdb.expected_pods <= 0) message += " (only pods of a scalable controller count)";
  }
  return message;
}

std::string never_allows_way_out(const kube::Pod& pod, const PodDisruptionBudget& pdb,
                                 const PodOwner& owner) {
  std::string relax =
      fmt::format("relax PodDisruptionBudget {} ({})", budget_ref(pdb), budget_terms(pdb));
  const std::string pod_ref = ref(pod.meta.namespace_, pod.meta.name);
  switch (owner.kind) {
    case PodOwnerKind::kDeployment:
    case PodOwnerKind::kReplicaSet: {
      std::string scale = scale_clause(pdb, owner);
      if (!scale.empty()) return scale + relax;
      return fmt::format("{}, or delete pod {} yourself: {} {} recreates it on another node", relax,
                         pod_ref,
                         owner.kind == PodOwnerKind::kDeployment ? "deployment" : "replicaset",
                         ref(owner.namespace_, owner.name));
    }
    case PodOwnerKind::kStatefulSet:
      if (owner.replicas == 1) {
        return fmt::format(
            "the only replica of statefulset {} is protected: {}, or delete pod {} yourself once "
            "its data is safe (backup or failover)",
            ref(owner.namespace_, owner.name), relax, pod_ref);
      }
      return fmt::format("{}, or delete pod {} yourself once the application can spare it", relax,
                         pod_ref);
    case PodOwnerKind::kOther:
      return fmt::format("{}, or delete pod {} yourself", relax, pod_ref);
    case PodOwnerKind::kBare:
      return fmt::format("{}, or delete pod {} yourself: no controller recreates it", relax,
                         pod_ref);
  }
  return relax;
}

// "shop/a and shop/b", "shop/a, shop/b and shop/c" (with `last` as the final joiner).
std::string budget_list(std::span<const PodDisruptionBudget> budgets, std::string_view last) {
  std::string list;
  for (std::size_t i = 0; i < budgets.size(); ++i) {
    if (i > 0) list += i + 1 == budgets.size() ? fmt::format(" {} ", last) : std::string(", ");
    list += budget_ref(budgets[i]);
  }
  return list;
}

DisruptionVerdict transient(std::string message) {
  return {.wait = DisruptionWait::kTransient, .message = std::move(message)};
}

bool surgeable(const PodOwner& owner) noexcept {
  return owner.kind == PodOwnerKind::kDeployment && !owner.recreate && !owner.opted_out;
}

}  // namespace

bool opts_out_of_surge(const kube::ObjectMeta& meta) noexcept {
  const std::string* value = meta.annotations.find(kSurgeAnnotation);
  return value != nullptr && *value == kSurgeOptOutValue;
}

std::string_view to_string(DisruptionWait wait) noexcept {
  switch (wait) {
    case DisruptionWait::kNone:
      return "None";
    case DisruptionWait::kTransient:
      return "Transient";
    case DisruptionWait::kDeadlock:
      return "Deadlock";
  }
  return "Unknown";
}

std::string_view to_string(DeadlockKind kind) noexcept {
  switch (kind) {
    case DeadlockKind::kNone:
      return "None";
    case DeadlockKind::kBudgetNeverAllows:
      return "BudgetNeverAllows";
    case DeadlockKind::kMultipleBudgets:
      return "MultipleBudgets";
  }
  return "Unknown";
}

std::string_view to_string(PodOwnerKind kind) noexcept {
  switch (kind) {
    case PodOwnerKind::kDeployment:
      return "Deployment";
    case PodOwnerKind::kStatefulSet:
      return "StatefulSet";
    case PodOwnerKind::kReplicaSet:
      return "ReplicaSet";
    case PodOwnerKind::kOther:
      return "Other";
    case PodOwnerKind::kBare:
      return "Bare";
  }
  return "Unknown";
}

PodOwner owner_of(const kube::Deployment& deployment) {
  return {.kind = PodOwnerKind::kDeployment,
          .namespace_ = deployment.meta.namespace_,
          .name = deployment.meta.name,
          .replicas = deployment.replicas,
          .recreate = deployment.rolling_surge() == 0,
          .opted_out = opts_out_of_surge(deployment.meta),
          .hpa = {}};
}

PodOwner owner_of(const kube::StatefulSet& stateful_set) {
  return {.kind = PodOwnerKind::kStatefulSet,
          .namespace_ = stateful_set.meta.namespace_,
          .name = stateful_set.meta.name,
          .replicas = stateful_set.replicas,
          .recreate = false,
          .opted_out = opts_out_of_surge(stateful_set.meta),
          .hpa = {}};
}

PodOwner owner_of(const kube::ReplicaSet& replica_set) {
  return {.kind = PodOwnerKind::kReplicaSet,
          .namespace_ = replica_set.meta.namespace_,
          .name = replica_set.meta.name,
          .replicas = replica_set.replicas,
          .recreate = false,
          .opted_out = opts_out_of_surge(replica_set.meta),
          .hpa = {}};
}

std::optional<std::int64_t> desired_healthy(const PodDisruptionBudget& pdb) {
  // pkg/controller/disruption/disruption.go, getExpectedPodCount():
  //   maxUnavailable, err = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable,
  //                                                               int(expectedCount), true)
  //   desiredHealthy = expectedCount - int32(maxUnavailable)   (then at least 0)
  //   minAvailable, err = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable,
  //                                                             int(expectedCount), true)
  // The last argument is roundUp: both percentages round up, so "50%" of 3 pods is 2 for either
  // field. An integer minAvailable is taken as is.
  const std::int64_t expected = pdb.expected_pods;
  if (pdb.max_unavailable) {
    const std::optional<std::int64_t> max_unavailable =
        kube::scaled_value(*pdb.max_unavailable, expected, kube::Rounding::kUp);
    if (!max_unavailable) return std::nullopt;
    return std::max<std::int64_t>(0, expected - *max_unavailable);
  }
  if (pdb.min_available) {
    return kube::scaled_value(*pdb.min_available, expected, kube::Rounding::kUp);
  }
  return 0;
}

DisruptionVerdict classify_disruption(const kube::Pod& pod,
                                      std::span<const PodDisruptionBudget> covering,
                                      const PodOwner& owner) {
  if (covering.empty() || deleted_without_budget(pod)) return {};
  if (covering.size() > 1) {
    return {
        .wait = DisruptionWait::kDeadlock,
        .kind = DeadlockKind::kMultipleBudgets,
        .surgeable = false,
        .message = fmt::format("{} PodDisruptionBudgets cover this pod ({}): the eviction API "
                               "refuses to evict a pod under more than one",
                               covering.size(), budget_list(covering, "and")),
        .way_out =
            fmt::format("delete PodDisruptionBudget {}, or narrow its selector, until a "
                        "single budget covers pod {}",
                        budget_list(covering, "or"), ref(pod.meta.namespace_, pod.meta.name)),
    };
  }
  const PodDisruptionBudget& pdb = covering.front();
  if (pdb.disrupted_pods.contains(pod.meta.name)) {
    return transient(fmt::format(
        "PodDisruptionBudget {} already granted this pod's eviction; waiting for the pod to be "
        "deleted",
        budget_ref(pdb)));
  }
  if (unhealthy_pod_allowed(pod, pdb)) return {};
  if (pdb.observed_generation < pdb.meta.generation) {
    return transient(
        fmt::format("PodDisruptionBudget {} is still being processed by the disruption controller",
                    budget_ref(pdb)));
  }
  if (pdb.allows_disruption()) return {};
  const std::optional<std::int64_t> desired = desired_healthy(pdb);
  if (!desired || pdb.expected_pods <= 0 || *desired >= pdb.expected_pods) {
    return {
        .wait = DisruptionWait::kDeadlock,
        .kind = DeadlockKind::kBudgetNeverAllows,
        .surgeable = surgeable(owner),
        .message = never_allows_message(pdb),
        .way_out = never_allows_way_out(pod, pdb, owner),
    };
  }
  return transient(
      fmt::format("PodDisruptionBudget {} allows no disruption now: {} healthy, {} desired ({})",
                  budget_ref(pdb), pdb.current_healthy, pdb.desired_healthy, budget_terms(pdb)));
}

}  // namespace nmo::op
