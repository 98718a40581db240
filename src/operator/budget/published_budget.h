// The budget the operator runs with (--max-parallel-maintenances), published where an admin and
// `kubectl maintenance plan` can read it: the annotation
// nodemaintenance.medik8s.io/max-parallel-maintenances on the Lease `nmo-budget` in the operator
// namespace, next to the slot Leases it counts against (the operator may already write Leases
// there, so publishing needs no permission of its own).
//
//   kubectl get lease -n node-maintenance-operator-system nmo-budget -o yaml
//
// Every replica writes its value when it starts; replicas of one Deployment share their flags.
//
// Threading: publish_budget() is awaited from any coroutine; the other functions are pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "http/asio.h"
#include "kube/api/lease.h"
#include "kube/client/client.h"

namespace nmo::op {

inline constexpr std::string_view kBudgetLeaseName = "nmo-budget";
inline constexpr std::string_view kMaxParallelAnnotation =
    "nodemaintenance.medik8s.io/max-parallel-maintenances";

// Creates or updates the Lease `nmo-budget` in `namespace_` with the annotation set to
// `max_parallel`; reads it first and writes nothing when it already says so. Errors are the API
// server's (the caller logs them: publishing is a courtesy
// and never stops the operator).
asio::awaitable<Result<void>> publish_budget(kube::Client& client, std::string namespace_,
                                             int max_parallel);

// The budget published on `lease` (the Lease `nmo-budget`), or std::nullopt when the
// annotation is missing or not a whole number of at least 1.
[[nodiscard]] std::optional<int> published_max_parallel(const kube::Lease& lease);

}  // namespace nmo::op
