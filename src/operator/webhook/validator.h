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
// Each message starts with the story's words and ends, after "; ", with upstream NMO's exact
// words for the same refusal, so that scripts written for either keep matching.
//
// Everything else is allowed. Denials are 403 Forbidden; when the cluster cannot be asked the
// answer is a 500 refusal that says so (the API server rejects the request either way, as
// failurePolicy Fail would).
//
// Races: admission runs before the object is stored, so two creates for one node that arrive
// together both find no other NodeMaintenance. The validator therefore reserves the node for the
// admitted CR for `reservation_ttl`; a create for a reserved node is denied naming the holder.
// A reservation ends when a lookup shows the holder stored (it is then found like any other
// NodeMaintenance), or when it expires (the create failed further down, e.g. AlreadyExists).
// Dry-run creates reserve nothing (the webhook declares sideEffects: None). This covers one
// process; across replicas the controller's older-wins rule is the final arbiter (docs/design.md
// §4).
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
#include <string>
#include <string_view>

#include "base/clock.h"
#include "http/asio.h"
#include "operator/webhook/admission.h"
#include "operator/webhook/cluster_lookup.h"

namespace nmo::op::webhook {

// The denial messages (exact; kubectl prints them after "denied the request: ").
inline constexpr std::string_view kNodeNameImmutableMessage =
    "nodeName is immutable and cannot be changed after creation; updating spec.NodeName isn't "
    "allowed";
[[nodiscard]] std::string node_not_found_message(std::string_view node);
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

  // Nodes currently reserved (expired reservations are dropped on the next create).
  [[nodiscard]] std::size_t reservation_count() const;

 private:
  asio::awaitable<AdmissionVerdict> validate_create(AdmissionRequest request);

  struct Reservation {
    std::string holder;  // the admitted NodeMaintenance
    Clock::time_point expires;
  };

  ClusterLookup& lookup_;
  const ValidatorOptions options_;

  mutable std::mutex mutex_;
  std::map<std::string, Reservation, std::less<>> reservations_;  // by node; guarded by mutex_
};

}  // namespace nmo::op::webhook
