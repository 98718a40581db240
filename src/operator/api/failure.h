// Why a maintenance failed, as a typed value kept in the cluster: the reason of the Ready
// condition of a Failed status (docs/design.md §1.2). The status is all that survives a
// restart, so the reconcile reads the kind back from there, never from lastError's wording.
//
//   kind           Ready reason            lastError                              node
//   kNodeMissing   NodeNotFound            node "<n>" not found                   undone
//   kTimeout       DrainTimeout            drain did not complete within <d>: ..  kept (safe side)
//   kLeaseLost     NodeLeaseLost           maintenance failed: lease could not..  undone
//   kDuplicate     DuplicateMaintenance    node "<n>" is already under maint...   never touched
//   kInvalid       InvalidSpec             the spec's validation error            never touched
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "operator/api/node_maintenance.h"

namespace nmo::op {

enum class FailureKind { kNodeMissing, kTimeout, kLeaseLost, kDuplicate, kInvalid };

// The Ready condition's reason for `kind`: "NodeNotFound", "DrainTimeout", "NodeLeaseLost",
// "DuplicateMaintenance", "InvalidSpec".
[[nodiscard]] std::string_view failure_reason(FailureKind kind) noexcept;

// The failure recorded in `status`; std::nullopt unless the phase is Failed. A Failed status
// without a typed reason was written by an operator older than the typed reasons (its Ready
// reason is "Failed", or it has none): its kind is read from lastError, the only record then.
[[nodiscard]] std::optional<FailureKind> failure_of(const NodeMaintenanceStatus& status);

// Whether the failure undid the maintenance (or never touched the node): nothing is left to
// clean up but the finalizer. A drain timeout keeps the node cordoned, tainted and its slot.
[[nodiscard]] bool cleanup_finished(FailureKind kind) noexcept;

// The Ready condition of a Failed status.
[[nodiscard]] Condition failure_condition(FailureKind kind, std::string message);

// The lastError texts.
[[nodiscard]] std::string node_not_found_message(std::string_view node);
[[nodiscard]] std::string duplicate_message(std::string_view node, std::string_view older);
[[nodiscard]] std::string drain_timeout_message(Duration timeout, std::int64_t pending);

}  // namespace nmo::op
