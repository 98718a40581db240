// PendingReason: why a pod that must leave the node is still there, as written to
// status.pendingPodsRefs[].reason (SPEC §1.2).
//
// The drain logic keeps its own enum so it does not depend on the CR's API types; the spellings
// are the API's, so the reconciler copies to_string() into the status unchanged.
//
// Threading: plain values and pure functions; safe to use from any thread.
#pragma once

#include <optional>
#include <string_view>

namespace nmo::op {

enum class PendingReason {
  kEvicting,               // eviction not yet accepted (first try, or throttled by the API server)
  kWaitingForTermination,  // eviction accepted (or pod deleted): waiting for the pod to disappear
  kBlockedByPdb,           // 429 with a DisruptionBudget cause
  kMultiplePdbs,           // 500: more than one PodDisruptionBudget covers the pod
  kEvictionDeferred,       // 429 from an admission webhook (KubeVirt migrating the VM)
  kNamespaceTerminating,   // 403: the pod's namespace is being deleted
  kError,                  // any other refusal or failure
};

// Exactly `Evicting`, `WaitingForTermination`, `BlockedByPDB`, `MultiplePDBs`, `EvictionDeferred`,
// `NamespaceTerminating`, `Error`.
[[nodiscard]] std::string_view to_string(PendingReason reason) noexcept;

// The reason for one of the to_string() spellings (case-sensitive), or std::nullopt: used when the
// ledger is rebuilt from a CR's status after a restart.
[[nodiscard]] std::optional<PendingReason> parse_pending_reason(std::string_view text) noexcept;

}  // namespace nmo::op
