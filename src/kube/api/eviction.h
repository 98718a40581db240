// What an eviction (POST pods/<name>/eviction, policy/v1) answered, as a business result: the
// plain value the client hands to its caller (kube/client/eviction.h classifies the HTTP answer
// into it), so that pure drain decisions can take it without the client.
//
// A refused eviction is not a failure of the client: a 429 carrying a DisruptionBudget cause is
// a PodDisruptionBudget saying "not now", a 429 from an admission webhook (KubeVirt migrating a
// VM) says "later", a 500 about several PDBs says "never, until someone fixes the PDBs".
//
// Threading: plain values and pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "base/error.h"

namespace nmo::kube {

enum class EvictionOutcome {
  kEvicted,               ///< 2xx: the pod is being deleted (watch for it to disappear)
  kNotFound,              ///< 404: the pod is already gone
  kBlockedByPdb,          ///< 429 with a DisruptionBudget cause
  kDeferred,              ///< 429 from an admission webhook (e.g. KubeVirt live migration)
  kThrottled,             ///< 429 from API Priority & Fairness: retry after Retry-After
  kMultiplePdbs,          ///< 500: the pod is covered by more than one PDB
  kNamespaceTerminating,  ///< 403: the namespace is being deleted; the pod goes with it
  kRefused,               ///< anything else (RBAC, validation, server errors)
};

/// "Evicted", "NotFound", "BlockedByPDB", "Deferred", "Throttled", "MultiplePDBs",
/// "NamespaceTerminating", "Refused".
[[nodiscard]] std::string_view to_string(EvictionOutcome outcome) noexcept;

struct EvictionResult {
  EvictionOutcome outcome = EvictionOutcome::kEvicted;
  /// The API's Status for every outcome but kEvicted: message verbatim, causes, retry_after.
  Error status;

  [[nodiscard]] std::optional<std::chrono::seconds> retry_after() const {
    return status.retry_after;
  }
};

}  // namespace nmo::kube
