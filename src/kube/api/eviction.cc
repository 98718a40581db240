#include "kube/api/eviction.h"

namespace nmo::kube {

std::string_view to_string(EvictionOutcome outcome) noexcept {
  switch (outcome) {
    case EvictionOutcome::kEvicted:
      return "Evicted";
    case EvictionOutcome::kNotFound:
      return "NotFound";
    case EvictionOutcome::kBlockedByPdb:
      return "BlockedByPDB";
    case EvictionOutcome::kDeferred:
      return "Deferred";
    case EvictionOutcome::kThrottled:
      return "Throttled";
    case EvictionOutcome::kMultiplePdbs:
      return "MultiplePDBs";
    case EvictionOutcome::kNamespaceTerminating:
      return "NamespaceTerminating";
    case EvictionOutcome::kRefused:
      return "Refused";
  }
  return "Refused";
}

}  // namespace nmo::kube
