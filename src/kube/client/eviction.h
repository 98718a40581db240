// How the client reads what an eviction (POST pods/<name>/eviction, policy/v1) answered: the
// business result (kube/api/eviction.h) of a non-2xx answer.
//
// A refused eviction is not a failure of the client: a 429 carrying a DisruptionBudget cause is
// a PodDisruptionBudget saying "not now", a 429 from an admission webhook (KubeVirt migrating a
// VM) says "later", a 500 about several PDBs says "never, until someone fixes the PDBs". The
// client never retries an eviction by itself; it classifies the answer and hands it to the
// caller (the drain engine), which decides when to try again.
//
// Threading: a pure function.
#pragma once

#include "base/error.h"
#include "kube/api/eviction.h"

namespace nmo::kube {

/// Classifies a non-2xx eviction answer (already decoded into an Error).
[[nodiscard]] EvictionOutcome classify_eviction_error(const Error& error);

}  // namespace nmo::kube
