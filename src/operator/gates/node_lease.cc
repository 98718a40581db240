#include "operator/gates/node_lease.h"

#include <algorithm>
#include <cctype>

#include "operator/gates/internal/hashed_name.h"

namespace nmo::op {

std::string node_lease_name(std::string_view node_name) {
  std::string lower(node_name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return internal::fit_name("node-", lower, 253);
}

std::optional<std::string> node_of_lease(const kube::Lease& lease) {
  constexpr std::string_view kPrefix = "node-";
  if (!lease.meta.name.starts_with(kPrefix)) return std::nullopt;
  for (const kube::OwnerReference& owner : lease.meta.owner_references) {
    if (owner.kind == "Node" && owner.api_version == "v1" && !owner.name.empty()) {
      return owner.name;
    }
  }
  return lease.meta.name.substr(kPrefix.size());
}

std::string_view to_string(NodeLeaseState state) noexcept {
  switch (state) {
    case NodeLeaseState::kFree:
      return "Free";
    case NodeLeaseState::kOurs:
      return "Ours";
    case NodeLeaseState::kHeldByOther:
      return "HeldByOther";
    case NodeLeaseState::kExpiredForeign:
      return "ExpiredForeign";
  }
  return "Free";
}

std::string lease_holder(const kube::Lease& lease) { return lease.holder_identity.value_or(""); }

std::optional<kube::Time> lease_expiry(const kube::Lease& lease) {
  if (!lease.renew_time || !lease.lease_duration_seconds) return std::nullopt;
  return *lease.renew_time + std::chrono::seconds{*lease.lease_duration_seconds};
}

NodeLeaseState classify_node_lease(const std::optional<kube::Lease>& lease, kube::Time now) {
  if (!lease) return NodeLeaseState::kFree;
  const std::string holder = lease_holder(*lease);
  if (holder.empty()) return NodeLeaseState::kFree;
  if (holder == kNodeLeaseHolder) return NodeLeaseState::kOurs;
  const std::optional<kube::Time> expiry = lease_expiry(*lease);
  const bool valid = expiry && *expiry >= now && *lease->renew_time <= now + kLeaseClockSkew;
  return valid ? NodeLeaseState::kHeldByOther : NodeLeaseState::kExpiredForeign;
}

NodeLeaseSpec node_lease_spec(const std::optional<kube::Lease>& current, kube::Time now) {
  NodeLeaseSpec spec{.holder_identity = std::string(kNodeLeaseHolder),
                     .lease_duration_seconds = kNodeLeaseDurationSeconds,
                     .acquire_time = now,
                     .renew_time = now,
                     .lease_transitions = 0};
  if (!current) return spec;
  spec.lease_transitions = current->lease_transitions;
  if (lease_holder(*current) == kNodeLeaseHolder && current->acquire_time) {
    spec.acquire_time = *current->acquire_time;
  } else {
    ++spec.lease_transitions;
  }
  return spec;
}

bool should_renew_node_lease(const kube::Lease& lease, kube::Time now,
                             std::chrono::seconds interval) {
  if (!lease.renew_time || lease.lease_duration_seconds != kNodeLeaseDurationSeconds) return true;
  return now >= *lease.renew_time + interval;
}

kube::Time next_node_lease_renewal(const kube::Lease& lease, kube::Time now,
                                   std::chrono::seconds interval) {
  if (!lease.renew_time || lease.lease_duration_seconds != kNodeLeaseDurationSeconds) return now;
  return std::max(now, *lease.renew_time + interval);
}

int next_error_on_lease_count(int count, LeaseCheck check, bool draining_started) noexcept {
  switch (check) {
    case LeaseCheck::kAcquired:
      return 0;
    case LeaseCheck::kHeldByOther:
      return draining_started ? count + 1 : count;
    case LeaseCheck::kTransientError:
      return count;
  }
  return count;
}

std::string lease_failure_message(int count) {
  return "maintenance failed: lease could not be extended after " + std::to_string(count) +
         " attempts";
}

}  // namespace nmo::op
