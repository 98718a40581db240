// Lease: the projection of coordination.k8s.io/v1 Lease, for leader election and for the
// operator's own coordination leases.
//
// Writes go through the client; the times it sends back must use format_micro_time()
// (metav1.MicroTime), which is what spec.acquireTime and spec.renewTime are.
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::kube {

// A Lease's metadata and spec.
struct Lease {
  ObjectMeta meta;
  std::optional<std::string> holder_identity;          // spec.holderIdentity
  std::optional<std::int32_t> lease_duration_seconds;  // spec.leaseDurationSeconds
  std::optional<Time> acquire_time;                    // spec.acquireTime (MicroTime)
  std::optional<Time> renew_time;                      // spec.renewTime (MicroTime)
  std::int32_t lease_transitions = 0;                  // spec.leaseTransitions; 0 when absent

  friend bool operator==(const Lease&, const Lease&) = default;
};

// Decodes a Lease object. `kind`, when present, must be "Lease". Errors are ErrorCode::kInvalid
// naming the field, e.g. "spec.renewTime: invalid RFC 3339 time ...".
[[nodiscard]] Result<Lease> decode_lease(const boost::json::value& object);

// The Lease as a whole object for a create or an update: apiVersion and kind; metadata name,
// namespace, labels, ownerReferences and resourceVersion (each when set; an update needs the
// resourceVersion it read); the spec fields that are set, times as MicroTime.
[[nodiscard]] boost::json::value encode_lease(const Lease& lease);

// Writes the spec fields of `lease` that are set into `object` (a Lease as read from the API
// server), keeping every other field: its metadata (the resourceVersion an update needs) and
// spec fields this projection does not know (e.g. preferredHolder), so an update written from a
// read never drops them. A missing or non-object spec is replaced. `object` must be a JSON
// object (a decoded Lease is).
void overlay_lease_spec(boost::json::value& object, const Lease& lease);

// coordination.k8s.io/v1 leases.
template <>
struct ResourceInfo<Lease> {
  static constexpr std::string_view kGroup = "coordination.k8s.io";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "leases";
  static constexpr std::string_view kKind = "Lease";
  static constexpr bool kNamespaced = true;
  // decode_lease().
  static Result<Lease> decode(const boost::json::value& object) { return decode_lease(object); }
};

}  // namespace nmo::kube
