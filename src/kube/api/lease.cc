#include "kube/api/lease.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/json_fields.h"

namespace nmo::kube {

Result<Lease> decode_lease(const boost::json::value& object) {
  using internal::FieldPath;
  NMO_TRY_ASSIGN(const boost::json::object* top, internal::object_of_kind(object, "Lease"));
  const FieldPath root;
  Lease lease;
  NMO_TRY_ASSIGN(lease.meta, decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* spec, internal::get_object(*top, "spec", root));
  if (spec == nullptr) {
    return lease;
  }
  const FieldPath path = root.field("spec");
  NMO_TRY_ASSIGN(lease.holder_identity,
                 internal::get_optional_string(*spec, "holderIdentity", path));
  NMO_TRY_ASSIGN(lease.lease_duration_seconds,
                 internal::get_optional_int<std::int32_t>(*spec, "leaseDurationSeconds", path));
  NMO_TRY_ASSIGN(lease.acquire_time, internal::get_optional_time(*spec, "acquireTime", path));
  NMO_TRY_ASSIGN(lease.renew_time, internal::get_optional_time(*spec, "renewTime", path));
  NMO_TRY_ASSIGN(lease.lease_transitions,
                 internal::get_int<std::int32_t>(*spec, "leaseTransitions", path));
  return lease;
}

}  // namespace nmo::kube
