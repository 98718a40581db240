#include "kube/api/lease.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/check.h"
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

namespace {

// The spec fields of `lease` that are set, times as MicroTime.
boost::json::object spec_json(const Lease& lease) {
  boost::json::object spec;
  if (lease.holder_identity) spec["holderIdentity"] = *lease.holder_identity;
  if (lease.lease_duration_seconds) spec["leaseDurationSeconds"] = *lease.lease_duration_seconds;
  if (lease.acquire_time) spec["acquireTime"] = format_micro_time(*lease.acquire_time);
  if (lease.renew_time) spec["renewTime"] = format_micro_time(*lease.renew_time);
  if (lease.lease_transitions != 0) spec["leaseTransitions"] = lease.lease_transitions;
  return spec;
}

}  // namespace

boost::json::value encode_lease(const Lease& lease) {
  boost::json::object metadata{{"name", lease.meta.name}};
  if (!lease.meta.namespace_.empty()) metadata["namespace"] = lease.meta.namespace_;
  if (!lease.meta.resource_version.empty()) {
    metadata["resourceVersion"] = lease.meta.resource_version;
  }
  if (lease.meta.labels.size() > 0) {
    boost::json::object labels;
    for (const auto& [key, value] : lease.meta.labels) labels[key] = value;
    metadata["labels"] = std::move(labels);
  }
  if (lease.meta.annotations.size() > 0) {
    boost::json::object annotations;
    for (const auto& [key, value] : lease.meta.annotations) annotations[key] = value;
    metadata["annotations"] = std::move(annotations);
  }
  if (!lease.meta.owner_references.empty()) {
    boost::json::array owners;
    for (const OwnerReference& owner : lease.meta.owner_references) {
      boost::json::object ref{{"apiVersion", owner.api_version},
                              {"kind", owner.kind},
                              {"name", owner.name},
                              {"uid", owner.uid}};
      if (owner.controller) ref["controller"] = true;
      owners.push_back(std::move(ref));
    }
    metadata["ownerReferences"] = std::move(owners);
  }
  return boost::json::object{{"apiVersion", "coordination.k8s.io/v1"},
                             {"kind", "Lease"},
                             {"metadata", std::move(metadata)},
                             {"spec", spec_json(lease)}};
}

void overlay_lease_spec(boost::json::value& object, const Lease& lease) {
  NMO_CHECK(object.is_object(), "overlay_lease_spec needs a Lease object");
  boost::json::value& spec = object.as_object()["spec"];
  if (!spec.is_object()) spec = boost::json::object{};
  for (auto& [key, value] : spec_json(lease)) spec.as_object()[key] = std::move(value);
}

}  // namespace nmo::kube
