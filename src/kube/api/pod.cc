#include "kube/api/pod.h"

#include <cstddef>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"

namespace nmo::kube {
namespace {

using internal::FieldPath;

Result<void> decode_spec(const boost::json::object& spec, const FieldPath& path, Pod& pod) {
  NMO_TRY_ASSIGN(pod.node_name, internal::get_string(spec, "nodeName", path));
  NMO_TRY_ASSIGN(
      pod.termination_grace_period_seconds,
      internal::get_optional_int<std::int64_t>(spec, "terminationGracePeriodSeconds", path));
  NMO_TRY_ASSIGN(const boost::json::array* volumes, internal::get_array(spec, "volumes", path));
  if (volumes == nullptr) {
    return {};
  }
  const FieldPath volumes_path = path.field("volumes");
  for (std::size_t i = 0; i < volumes->size(); ++i) {
    const boost::json::value& volume = (*volumes)[i];
    const boost::json::object* object = volume.if_object();
    if (object == nullptr) {
      return internal::type_error(volumes_path.element(i), "an object", volume);
    }
    if (internal::find_field(*object, "emptyDir") != nullptr) {
      pod.has_empty_dir = true;
    }
  }
  return {};
}

}  // namespace

Result<Pod> decode_pod(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* top, internal::object_of_kind(object, "Pod"));
  const FieldPath root;
  Pod pod;
  NMO_TRY_ASSIGN(pod.meta, decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* spec, internal::get_object(*top, "spec", root));
  if (spec != nullptr) {
    NMO_TRY(decode_spec(*spec, root.field("spec"), pod));
  }
  NMO_TRY_ASSIGN(const boost::json::object* status, internal::get_object(*top, "status", root));
  if (status != nullptr) {
    const FieldPath status_path = root.field("status");
    NMO_TRY_ASSIGN(pod.phase, internal::get_string(*status, "phase", status_path));
    NMO_TRY_ASSIGN(pod.ready_status, internal::condition_status(*status, "Ready", status_path));
  }
  return pod;
}

}  // namespace nmo::kube
