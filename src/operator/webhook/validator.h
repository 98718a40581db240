// Validator: the NodeMaintenance admission rules of docs/design.md §4.
//
//   CREATE  no such node                      node "<node>" not found in cluster; invalid
//                                               nodeName, no node with name <node> found
//   CREATE  another NodeMaintenance names     node "<node>" is already under maintenance by
//           the node (even one being deleted)   NodeMaintenance "<other>"; invalid nodeName, a
//                                               NodeMaintenance for node <node> already exists
//   UPDATE  spec.nodeName changed (also while nodeName is immutable and cannot be changed after
//           the object is being deleted)        creation; updating spec.NodeName isn't allowed
//
// Each message starts with our words (docs/design.md §4) and ends, after "; ", with upstream NMO's
// exact words for the same refusal, so that scripts written for either keep matching.
//
// Everything else is allowed. Denials are 403 Forbidden; when the cluster cannot be asked the
// answer is a 500 refusal that says so (the API server rejects the request either way, as
// failurePolicy Fail would).
//
// Races: admission runs before the object is stored, so two creates for one node that arrive
// together both find no other NodeMaintenance. The validator therefore reserves the node for the
// admitted CR and its requester (request.userInfo: username and uid) for `reservation_ttl`; a
// create by the same requester for a node it reserved under another name is denied naming the
// holder. A reservation ends when a lookup shows the holder stored (it is then found like any
// other NodeMaintenance), or when it expires (the create failed further down, e.g.
// AlreadyExists). Dry-run creates reserve nothing (the webhook declares sideEffects: None).
//
// A reservation never refuses a different requester: anyone who can reach the webhook's port
// can post a review, and a forged CREATE for a real node must not lock the admin out of it (a
// denial of service; docs/design.md §4). A create by another requester is admitted (and reserves
// for that requester in turn); if both objects get stored, the controller's older-wins rule
// (docs/design.md §2.7) keeps one and fails the other as a duplicate, as it does across
// replicas, whose reservations are not shared. The race the reservation exists for, one script
// firing two creates at once, comes from one requester and stays caught. A forger who names the
// victim's exact username (and uid) still delays that user's creates by up to reservation_ttl;
// --webhook-client-ca (mTLS, docs/operations.md) keeps forged reviews out altogether.
//
// Optional (--webhook-reject-unsafe-control-plane, ValidatorOptions::reject_unsafe_control_plane):
// upstream's reject-at-create rule for control-plane nodes whose loss would break etcd quorum:
//   CREATE  etcd quorum unsafe without the node   can not put master/control-plane node into
//                                                 maintenance at this moment, disrupting node
//                                                 <node> will violate etcd quorum
// By default such CRs are admitted and wait in Pending instead (docs/design.md §2.2).
//
// Threading: validate() may be awaited concurrently from coroutines on any executors; the
// reservations are guarded by a mutex that is never held across a co_await, and each create's
// check-and-reserve happens without a co_await in between.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "http/asio.h"
#include "operator/webhook/admission.h"
#include "operator/webhook/cluster_lookup.h"

namespace nmo::op::webhook {

// The denial messages (exact; kubectl prints them after "denied the request: ").
inline constexpr std::string_view kNodeNameImmutableMessage =
    "nodeName is immutable and cannot be changed after creation; updating spec.NodeName isn't "
    "allowed";
// The first words of each are the controller's lastError for the same fact
// (operator/api/failure.h): node_not_found_message(), duplicate_message().
[[nodiscard]] std::string unknown_node_message(std::string_view node);
[[nodiscard]] std::string already_under_maintenance_message(std::string_view node,
                                                            std::string_view other);
[[nodiscard]] std::string etcd_quorum_violation_message(std::string_view node);

struct ValidatorOptions {
  // How long an admitted create holds its node against other creates when no lookup sees the
  // CR stored. The API server stores an admitted object within milliseconds; 10 s also covers a
  // slow etcd write.
  std::chrono::milliseconds reservation_ttl{10'000};
  // Time source of the reservations (a FakeClock in tests).
  Clock* clock = &system_clock();
  // Deny creates for control-plane nodes whose loss would break etcd quorum (upstream's rule).
  bool reject_unsafe_control_plane = false;
};

class Validator {
 public:
  // `lookup` must outlive the validator.
  Validator(ClusterLookup& lookup, ValidatorOptions options);

  // The verdict on one review.
  asio::awaitable<AdmissionVerdict> validate(AdmissionRequest request);

  // Reservations held (one per node and requester; expired ones are dropped on the next create).
  [[nodiscard]] std::size_t reservation_count() const;

 private:
  asio::awaitable<AdmissionVerdict> validate_create(AdmissionRequest request);
  // The refusal of a create for `node` that names no Node, or (reject_unsafe_control_plane) a
  // control-plane node whose loss would break etcd quorum; std::nullopt when neither.
  asio::awaitable<std::optional<AdmissionVerdict>> refuse_node(std::string node);
  // The other maintenances of the node and the reservations decide, and an admitted create
  // reserves the node: one step under mutex_, with no co_await.
  AdmissionVerdict check_and_reserve(const AdmissionRequest& request, const std::string& node,
                                     const std::vector<ExistingMaintenance>& existing);

  struct Reservation {
    std::string holder;  // the admitted NodeMaintenance
    Clock::time_point expires;
  };
  // (node, requester): the requester is userInfo's username and uid.
  using ReservationKey = std::pair<std::string, std::string>;

  ClusterLookup& lookup_;
  const ValidatorOptions options_;

  mutable std::mutex mutex_;
  std::map<ReservationKey, Reservation> reservations_;  // guarded by mutex_
};

}  // namespace nmo::op::webhook
