#include "operator/webhook/validator.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "operator/api/failure.h"

namespace nmo::op::webhook {
namespace {

// A Node name is a DNS subdomain (RFC 1123): at most 253 characters of lower-case letters,
// digits, '-' and '.', starting and ending with a letter or digit. Other names cannot name a
// Node, and are kept out of the lookup's URL.
bool is_dns_subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  const auto alphanumeric = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alphanumeric(name.front()) || !alphanumeric(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alphanumeric(c) || c == '-' || c == '.'; });
}

// Who asked, as the review says: the username, and the uid that tells apart two users of one
// name over time ("" for most certificate users). Never compared across replicas.
std::string requester_of(const AdmissionRequest& request) {
  return request.username + '\n' + request.user_uid;
}

}  // namespace

std::string unknown_node_message(std::string_view node) {
  return node_not_found_message(node) + " in cluster; invalid nodeName, no node with name " +
         std::string(node) + " found";
}

std::string already_under_maintenance_message(std::string_view node, std::string_view other) {
  return duplicate_message(node, other) + "; invalid nodeName, a NodeMaintenance for node " +
         std::string(node) + " already exists";
}

std::string etcd_quorum_violation_message(std::string_view node) {
  return "can not put master/control-plane node into maintenance at this moment, disrupting node " +
         std::string(node) + " will violate etcd quorum";
}

Validator::Validator(ClusterLookup& lookup, ValidatorOptions options)
    : lookup_(lookup), options_(options) {}

std::size_t Validator::reservation_count() const {
  const std::lock_guard lock(mutex_);
  return reservations_.size();
}

asio::awaitable<AdmissionVerdict> Validator::validate(AdmissionRequest request) {
  switch (request.operation) {
    case Operation::kCreate:
      co_return co_await validate_create(std::move(request));
    case Operation::kUpdate:
      if (!request.object || !request.old_object) {
        // decode_admission_review() never lets such a review through.
        co_return AdmissionVerdict::deny("an UPDATE review must carry object and oldObject");
      }
      if (request.object->node_name != request.old_object->node_name) {
        co_return AdmissionVerdict::deny(std::string(kNodeNameImmutableMessage));
      }
      co_return AdmissionVerdict::allow();
    case Operation::kDelete:
    case Operation::kConnect:
      break;
  }
  co_return AdmissionVerdict::allow();
}

asio::awaitable<std::optional<AdmissionVerdict>> Validator::refuse_node(std::string node) {
  if (!is_dns_subdomain(node)) {
    co_return AdmissionVerdict::deny(unknown_node_message(node));
  }
  Result<bool> exists = co_await lookup_.node_exists(node);
  if (!exists) {
    co_return AdmissionVerdict::internal_error("cannot check whether node \"" + node +
                                               "\" exists: " + exists.error().describe());
  }
  if (!*exists) {
    co_return AdmissionVerdict::deny(unknown_node_message(node));
  }
  if (options_.reject_unsafe_control_plane) {
    Result<bool> safe = co_await lookup_.etcd_quorum_safe(node);
    if (!safe) {
      co_return AdmissionVerdict::internal_error(
          "could not get node for master/control-plane quorum validation, please try again: " +
          safe.error().describe());
    }
    if (!*safe) co_return AdmissionVerdict::deny(etcd_quorum_violation_message(node));
  }
  co_return std::nullopt;
}

AdmissionVerdict Validator::check_and_reserve(const AdmissionRequest& request,
                                              const std::string& node,
                                              const std::vector<ExistingMaintenance>& existing) {
  const std::string name = request.object_name();
  std::vector<ExistingMaintenance> others;
  for (const ExistingMaintenance& maintenance : existing) {
    if (maintenance.name != name) others.push_back(maintenance);
  }
  const std::lock_guard lock(mutex_);
  const Clock::time_point now = options_.clock->now();
  // Expired reservations go, and so do this node's whose holder the lookup shows stored.
  std::erase_if(reservations_, [&](const auto& entry) {
    if (entry.second.expires <= now) return true;
    if (entry.first.first != node) return false;
    const std::string& holder = entry.second.holder;
    return std::any_of(existing.begin(), existing.end(),
                       [&](const ExistingMaintenance& m) { return m.name == holder; });
  });
  if (!others.empty()) {
    // The oldest one is the one the controller lets proceed (older wins, then the name).
    const auto first =
        std::min_element(others.begin(), others.end(),
                         [](const ExistingMaintenance& a, const ExistingMaintenance& b) {
                           if (a.created != b.created) {
                             if (!a.created) return false;
                             if (!b.created) return true;
                             return *a.created < *b.created;
                           }
                           return a.name < b.name;
                         });
    return AdmissionVerdict::deny(already_under_maintenance_message(node, first->name));
  }
  // Only the same requester's reservation refuses (see the header: a forged review must not).
  ReservationKey key{node, requester_of(request)};
  if (auto reserved = reservations_.find(key);
      reserved != reservations_.end() && reserved->second.holder != name) {
    return AdmissionVerdict::deny(already_under_maintenance_message(node, reserved->second.holder));
  }
  if (!request.dry_run) {
    reservations_[std::move(key)] =
        Reservation{.holder = name, .expires = now + options_.reservation_ttl};
  }
  return AdmissionVerdict::allow();
}

asio::awaitable<AdmissionVerdict> Validator::validate_create(AdmissionRequest request) {
  if (!request.object) {
    // decode_admission_review() never lets such a review through.
    co_return AdmissionVerdict::deny("a CREATE review must carry the object");
  }
  const std::string node = request.object->node_name;
  if (node.empty()) {
    // The CRD schema requires spec.nodeName, so only a hand-made review gets here.
    co_return AdmissionVerdict::deny("spec.nodeName is required");
  }
  if (std::optional<AdmissionVerdict> refused = co_await refuse_node(node)) {
    co_return std::move(*refused);
  }
  Result<std::vector<ExistingMaintenance>> existing = co_await lookup_.maintenances_for_node(node);
  if (!existing) {
    co_return AdmissionVerdict::internal_error("cannot list the NodeMaintenances of node \"" +
                                               node + "\": " + existing.error().describe());
  }
  // No co_await from the lookup's answer on: the check and the reservation are one step for
  // every other create awaiting its lookups meanwhile.
  co_return check_and_reserve(request, node, *existing);
}

}  // namespace nmo::op::webhook
