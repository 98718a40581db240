// ServerSupport: the Kubernetes versions the operator is tested on (docs/operations.md,
// "Supported Kubernetes versions"), and what an older API server lacks of what the operator
// uses, each with what the operator does instead. The operator logs these once at start and
// `kubectl maintenance diagnose` repeats them.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "kube/api/version.h"

namespace nmo::op {

// The oldest and the newest Kubernetes minor the test suite runs on (1.27 and 1.37).
inline constexpr int kOldestTestedMinor = 27;
inline constexpr int kNewestTestedMinor = 37;

// "1.27 to 1.37".
[[nodiscard]] std::string tested_range();

// A feature of newer API servers that `version` lacks.
struct MissingFeature {
  std::string feature;  // "field selectors on custom resources (CRD selectableFields)"
  std::string since;    // "1.31"
  std::string instead;  // what the operator does without it

  friend bool operator==(const MissingFeature&, const MissingFeature&) = default;
};

// What the operator would use but `version` does not serve by default, oldest feature first;
// empty from 1.31 on.
[[nodiscard]] std::vector<MissingFeature> missing_features(const kube::ServerVersion& version);

// For a server older than the oldest tested version, a warning naming both, e.g.
// "Kubernetes v1.25.3 is older than 1.27, the oldest version this operator is tested on; it works
// as far as the server's API allows"; "" otherwise.
[[nodiscard]] std::string untested_version_warning(const kube::ServerVersion& version);

}  // namespace nmo::op
