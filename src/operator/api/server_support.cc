#include "operator/api/server_support.h"

#include <string>
#include <vector>

namespace nmo::op {

std::string tested_range() {
  return "1." + std::to_string(kOldestTestedMinor) + " to 1." + std::to_string(kNewestTestedMinor);
}

std::vector<MissingFeature> missing_features(const kube::ServerVersion& version) {
  std::vector<MissingFeature> missing;
  if (!version.at_least(1, 28)) {
    missing.push_back(
        {.feature = "matchConditions in admission webhooks",
         .since = "1.28",
         .instead = "the API server calls the webhook for every NodeMaintenance update, also the "
                    "operator's finalizer writes; the webhook allows every update that keeps "
                    "spec.nodeName, so they pass while a replica answers"});
  }
  if (!version.at_least(1, 31)) {
    missing.push_back(
        {.feature = "field selectors on custom resources (CRD selectableFields)",
         .since = "1.31",
         .instead = "install the CRD without selectableFields (deploy/before-1.31); the webhook "
                    "finds a node's NodeMaintenances in a watched cache instead of a filtered "
                    "list"});
  }
  return missing;
}

std::string untested_version_warning(const kube::ServerVersion& version) {
  if (version.at_least(1, kOldestTestedMinor)) return "";
  const std::string shown =
      version.git_version.empty() ? version.minor_version() : version.git_version;
  return "Kubernetes " + shown + " is older than 1." + std::to_string(kOldestTestedMinor) +
         ", the oldest version this operator is tested on; it works as far as the server's API "
         "allows";
}

}  // namespace nmo::op
