#include "kube/client/eviction.h"

#include "kube/api/status.h"

namespace nmo::kube {

EvictionOutcome classify_eviction_error(const Error& error) {
  switch (error.http_status) {
    case 404:
      return EvictionOutcome::kNotFound;
    case 429:
      // The eviction handler names the PDB in a DisruptionBudget cause (also while the PDB is
      // still being processed by the disruption controller).
      if (find_cause(error, "DisruptionBudget")) return EvictionOutcome::kBlockedByPdb;
      // A validating webhook that refuses with code 429 (KubeVirt while it migrates a VM).
      if (error.message.find("admission webhook") != std::string::npos) {
        return EvictionOutcome::kDeferred;
      }
      // API Priority & Fairness: "Too many requests, please try again later."
      return EvictionOutcome::kThrottled;
    case 500:
      if (error.message.find("more than one PodDisruptionBudget") != std::string::npos) {
        return EvictionOutcome::kMultiplePdbs;
      }
      return EvictionOutcome::kRefused;
    case 403:
      // NamespaceLifecycle: `... because it is being terminated`.
      if (error.message.find("being terminated") != std::string::npos) {
        return EvictionOutcome::kNamespaceTerminating;
      }
      return EvictionOutcome::kRefused;
    default:
      return EvictionOutcome::kRefused;
  }
}

}  // namespace nmo::kube
