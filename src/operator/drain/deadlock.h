// Whether waiting can ever let a pod's eviction through: for a pod the drain
// waits on, is the wait transient (the budget will allow it once other pods are healthy again) or
// a deadlock (no amount of waiting helps: a single-replica Deployment under `minAvailable: 1`),
// and what is the way out.
//
// The verdict follows the API server's eviction handler and the disruption controller, in order:
//   1. A pod in phase Pending, Succeeded or Failed, or already terminating, is deleted without
//      consulting any budget: kNone.
//   2. Two or more covering budgets: the eviction API answers 500 for every eviction of the pod,
//      whatever the budgets say: deadlock kMultipleBudgets.
//   3. A pod in its budget's status.disruptedPods had its eviction granted already: transient.
//   4. A pod that is not Ready is deleted without spending a disruption when its budget says
//      unhealthyPodEvictionPolicy AlwaysAllow, or (IfHealthyBudget, the default) when
//      currentHealthy >= desiredHealthy > 0: kNone.
//   5. A budget whose status predates its spec (observedGeneration < generation) is answered with
//      429 "still being processed": transient.
//   6. A budget that allows a disruption now: kNone.
//   7. Otherwise the budget allows none now. The disruption controller sets
//      disruptionsAllowed = currentHealthy - desiredHealthy, and 0 whenever expectedPods <= 0;
//      currentHealthy can never exceed expectedPods for long, so when desiredHealthy (computed
//      from the spec, desired_healthy()) is >= expectedPods, or expectedPods is 0, no amount of
//      healthy pods ever allows one: deadlock kBudgetNeverAllows. Else transient.
//
// Surge. A deadlock is surgeable when the pod belongs (through its ReplicaSet) to a Deployment
// that rolls out by starting new pods before removing old ones (RollingUpdate with a maxSurge
// above 0) and has not opted out (kSurgeAnnotation): the Deployment controller then removes the
// old pod itself, by a deletion no budget governs, once its replacement is available elsewhere.
// StatefulSets, bare pods, ReplicaSets without a Deployment, Deployments that remove first
// (Recreate, or a maxSurge resolving to 0) and opted-out workloads are never surgeable.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kube/api/meta.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/workload.h"

namespace nmo::op {

// The annotation by which a workload (Deployment) or its namespace opts out of surging:
// `nodemaintenance.medik8s.io/surge: "false"`. Any other value, or none, leaves surging allowed.
inline constexpr std::string_view kSurgeAnnotation = "nodemaintenance.medik8s.io/surge";
inline constexpr std::string_view kSurgeOptOutValue = "false";

// True when `meta` (a workload's or a namespace's) carries kSurgeAnnotation = "false".
[[nodiscard]] bool opts_out_of_surge(const kube::ObjectMeta& meta) noexcept;

// Whether the drain waits on a pod's eviction, and whether waiting helps.
enum class DisruptionWait {
  kNone,       // nothing to wait for: no budget covers the pod, or its eviction can go now
  kTransient,  // refused now, but the budget will allow it once its pods are healthy again
  kDeadlock,   // refused for as long as nothing changes but time: see DeadlockKind
};

// Why a deadlock cannot end by waiting.
enum class DeadlockKind {
  kNone,               // not a deadlock (DisruptionWait kNone or kTransient)
  kBudgetNeverAllows,  // the one budget needs as many healthy pods as it expects, or expects 0
  kMultipleBudgets,    // two or more budgets cover the pod: the eviction API refuses it (500)
};

// The pod's controller as far as the verdict needs it.
enum class PodOwnerKind {
  kDeployment,   // a ReplicaSet controlled by a Deployment
  kStatefulSet,  // a StatefulSet
  kReplicaSet,   // a ReplicaSet without a Deployment
  kOther,        // any other controller (Job, a custom resource, ...)
  kBare,         // no controller ownerReference
};

// "None", "Transient", "Deadlock".
[[nodiscard]] std::string_view to_string(DisruptionWait wait) noexcept;
// "None", "BudgetNeverAllows", "MultipleBudgets".
[[nodiscard]] std::string_view to_string(DeadlockKind kind) noexcept;
// "Deployment", "StatefulSet", "ReplicaSet", "Other", "Bare".
[[nodiscard]] std::string_view to_string(PodOwnerKind kind) noexcept;

// The workload behind a pod, resolved by the caller (pod -> controller ReplicaSet -> Deployment,
// or pod -> StatefulSet); see the owner_of() helpers.
struct PodOwner {
  PodOwnerKind kind = PodOwnerKind::kBare;
  // The workload's namespace and name (the Deployment's, not its ReplicaSet's); empty for kBare.
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  std::int32_t replicas = 0;  // the workload's spec.replicas
  // kDeployment: its rollout removes an old pod before the replacement runs (strategy Recreate,
  // or RollingUpdate whose maxSurge resolves to 0).
  bool recreate = false;
  // kSurgeAnnotation "false" on the workload or on its namespace (opts_out_of_surge()).
  bool opted_out = false;
  // The HorizontalPodAutoscaler scaling the workload, in its namespace; "" when none. The way out
  // then names its minReplicas: scaling the workload by hand would be undone.
  std::string hpa;

  friend bool operator==(const PodOwner&, const PodOwner&) = default;
};

// A PodOwner from a read model: kind, namespace, name, replicas, `recreate` (Deployment) and
// `opted_out` from the workload's own annotation. The caller adds its namespace's opt-out
// (`owner.opted_out |= opts_out_of_surge(ns.meta)`) and `hpa`.
[[nodiscard]] PodOwner owner_of(const kube::Deployment& deployment);
[[nodiscard]] PodOwner owner_of(const kube::StatefulSet& stateful_set);
[[nodiscard]] PodOwner owner_of(const kube::ReplicaSet& replica_set);  // without a Deployment

// What the drain should make of a pod's wait.
struct DisruptionVerdict {
  DisruptionWait wait = DisruptionWait::kNone;
  DeadlockKind kind = DeadlockKind::kNone;  // set when wait == kDeadlock
  bool surgeable = false;  // a deadlock the workload's own rollout can end (see the file comment)
  // For status.pendingPodsRefs[].message; "" for kNone. Names the budget as namespace/name with
  // its numbers, e.g.
  //   PodDisruptionBudget shop/web-pdb can never allow this eviction: minAvailable 1 of 1 expected
  std::string message;
  // The administrator's way out of a deadlock, for diagnose and the runbook; "" otherwise, e.g.
  //   scale deployment shop/web to 2 replicas, or relax PodDisruptionBudget shop/web-pdb
  //   (minAvailable 1 of 1 expected)
  std::string way_out;

  friend bool operator==(const DisruptionVerdict&, const DisruptionVerdict&) = default;
};

// The desiredHealthy the disruption controller computes for `pdb`'s spec and its
// status.expectedPods: with maxUnavailable (which wins when both are set),
// expectedPods - maxUnavailable, at least 0; with minAvailable, the integer as is or the
// percentage of expectedPods; 0 with neither. Percentages round up in both cases. std::nullopt
// for a value that is not a count or a percentage (the controller then stops allowing
// disruptions).
[[nodiscard]] std::optional<std::int64_t> desired_healthy(const kube::PodDisruptionBudget& pdb);

// The verdict for `pod`, which the drain must evict. `covering` are the budgets that select it
// (covering_pdbs()); `owner` its workload.
[[nodiscard]] DisruptionVerdict classify_disruption(
    const kube::Pod& pod, std::span<const kube::PodDisruptionBudget> covering,
    const PodOwner& owner);

}  // namespace nmo::op
