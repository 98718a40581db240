// The medik8s node lease (docs/design.md §3.1): the compatibility contract with Node Health Check
// and Self Node Remediation, who take the same Lease before remediating a node. Keep it
// byte-compatible.
//
//   coordination.k8s.io/v1 Lease `node-<nodeName>` in `medik8s-leases` (--lease-namespace),
//   holderIdentity `node-maintenance`, leaseDurationSeconds 3600, ownerReference to the Node.
//
// Who holds it (classify_node_lease):
//   kFree            no Lease, or a Lease without holder: ours for the taking
//   kOurs            holderIdentity is `node-maintenance` (expired or not: renew it)
//   kHeldByOther     another holder, still valid: wait (and count it against the budget)
//   kExpiredForeign  another holder, expired: may be taken over (upstream does)
// "Valid" is upstream's rule (medik8s/common lease manager): renewTime + leaseDurationSeconds >=
// now and renewTime <= now; a missing renewTime or duration makes a lease invalid. One deviation,
// on the safe side: a renewTime up to kLeaseClockSkew in the future still counts as valid (another
// component's clock may run a little ahead; upstream would take such a lease over).
//
// Renewal: upstream renews only when it reconciles, so it can lose the lease an hour after a
// maintenance succeeds. We renew every kNodeLeaseRenewInterval (15 min, so three renewals can
// fail before the hour is up; docs/design.md §2.5), on a timer, and retry failed renewals after
// kNodeLeaseRetryInterval; transient API errors are not counted in errorOnLeaseCount
// (docs/design.md §3.1).
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kube/api/lease.h"
#include "kube/api/time.h"

namespace nmo::op {

inline constexpr std::string_view kNodeLeaseHolder = "node-maintenance";  // upstream constant
inline constexpr std::string_view kDefaultLeaseNamespace = "medik8s-leases";
inline constexpr std::int32_t kNodeLeaseDurationSeconds = 3600;  // upstream NMO: 3600 s
inline constexpr std::chrono::seconds kNodeLeaseDuration{kNodeLeaseDurationSeconds};
inline constexpr std::chrono::minutes kNodeLeaseRenewInterval{15};
inline constexpr std::chrono::seconds kNodeLeaseRetryInterval{30};
inline constexpr std::chrono::seconds kLeaseClockSkew{60};
// upstream maxAllowedErrorToUpdateOwnedLease: more than 3 counted failures fail the maintenance.
inline constexpr int kMaxLeaseErrors = 3;
// Longest node name whose lease name `node-<name>` fits the 253-character limit.
inline constexpr std::size_t kMaxUnhashedLeaseNodeName = 248;

// The lease name for a node: `node-<nodeName>` (lower-cased, as upstream does). A node name longer
// than 248 characters would exceed the 253-character object name limit; such a node gets
// `node-<first 231 characters>-<16 hex digits of FNV-1a-64 of the full name>` (trailing '-' and
// '.' of the cut trimmed). NHC/SNR do not know this scheme, so they cannot coordinate with us on
// such a node (they would fail to create their own over-long lease name anyway).
[[nodiscard]] std::string node_lease_name(std::string_view node_name);

// The inverse of node_lease_name(), as far as the Lease itself tells: the Node its
// ownerReference names (we and NHC set one), else its name without the "node-" prefix, which is
// right for every name node_lease_name() did not hash; std::nullopt for a Lease whose name does
// not start with "node-". A hashed name cannot be turned back from the name alone: a caller
// that knows the node names in question (the controller indexes its NodeMaintenances by
// node_lease_name() of their node) looks those up first.
[[nodiscard]] std::optional<std::string> node_of_lease(const kube::Lease& lease);

enum class NodeLeaseState { kFree, kOurs, kHeldByOther, kExpiredForeign };

// "Free", "Ours", "HeldByOther", "ExpiredForeign".
[[nodiscard]] std::string_view to_string(NodeLeaseState state) noexcept;

// Who holds the node lease at `now` (std::nullopt: the Lease does not exist).
[[nodiscard]] NodeLeaseState classify_node_lease(const std::optional<kube::Lease>& lease,
                                                 kube::Time now);

// True when the per-node lease check of the admission gate passes: the lease is free, ours, or
// expired and foreign (we may take it over).
[[nodiscard]] inline bool node_lease_available(NodeLeaseState state) noexcept {
  return state != NodeLeaseState::kHeldByOther;
}

// The holder of a Lease, "" when it has none.
[[nodiscard]] std::string lease_holder(const kube::Lease& lease);

// When a lease stops being valid (renewTime + leaseDurationSeconds), if both are set.
[[nodiscard]] std::optional<kube::Time> lease_expiry(const kube::Lease& lease);

// The spec fields to write when taking or renewing the node lease at `now` (create it when there
// is no Lease; update it otherwise). The caller adds metadata (name, namespace, resourceVersion,
// the ownerReference to the Node) and formats times with kube::format_micro_time.
struct NodeLeaseSpec {
  std::string holder_identity;
  std::int32_t lease_duration_seconds = kNodeLeaseDurationSeconds;
  kube::Time acquire_time;
  kube::Time renew_time;
  std::int32_t lease_transitions = 0;

  friend bool operator==(const NodeLeaseSpec&, const NodeLeaseSpec&) = default;
};

// Upstream's rules: a new lease starts with transitions 0; taking a lease from another holder (or
// one without holder) sets acquireTime and adds a transition; renewing ours keeps acquireTime
// (sets it, with a transition, when it is missing). Must not be called for kHeldByOther.
[[nodiscard]] NodeLeaseSpec node_lease_spec(const std::optional<kube::Lease>& current,
                                            kube::Time now);

// True when our lease should be renewed at `now`: its renewTime is `interval` old, or the lease
// is not in the shape we write (no renewTime, another duration).
[[nodiscard]] bool should_renew_node_lease(const kube::Lease& lease, kube::Time now,
                                           std::chrono::seconds interval = kNodeLeaseRenewInterval);

// When to renew our lease next: renewTime + `interval` (now when unknown).
[[nodiscard]] kube::Time next_node_lease_renewal(
    const kube::Lease& lease, kube::Time now,
    std::chrono::seconds interval = kNodeLeaseRenewInterval);

// errorOnLeaseCount (docs/design.md §3.1). What a lease check found, for counting:
enum class LeaseCheck {
  kAcquired,        // taken or renewed: the count goes back to 0
  kHeldByOther,     // a valid lease of another holder
  kTransientError,  // an API error while reading or writing: retried, not counted
};

// The new errorOnLeaseCount: reset on kAcquired; +1 on kHeldByOther once draining has started
// (before that the CR just waits, Pending); unchanged otherwise.
[[nodiscard]] int next_error_on_lease_count(int count, LeaseCheck check,
                                            bool draining_started) noexcept;

// True when the maintenance must fail: errorOnLeaseCount > 3 (upstream).
[[nodiscard]] inline bool lease_errors_exceeded(int count) noexcept {
  return count > kMaxLeaseErrors;
}

// status.lastError for that failure (upstream's text):
//   maintenance failed: lease could not be extended after <count> attempts
[[nodiscard]] std::string lease_failure_message(int count);

}  // namespace nmo::op
