#include "kube/api/namespace.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/json_fields.h"

namespace nmo::kube {

Result<Namespace> decode_namespace(const boost::json::value& object) {
  using internal::FieldPath;
  NMO_TRY_ASSIGN(const boost::json::object* top, internal::object_of_kind(object, "Namespace"));
  const FieldPath root;
  Namespace ns;
  NMO_TRY_ASSIGN(ns.meta, decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* status, internal::get_object(*top, "status", root));
  if (status != nullptr) {
    NMO_TRY_ASSIGN(ns.phase, internal::get_string(*status, "phase", root.field("status")));
  }
  return ns;
}

}  // namespace nmo::kube
