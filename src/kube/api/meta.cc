#include "kube/api/meta.h"

#include <cstddef>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/json_fields.h"

namespace nmo::kube {
namespace {

using internal::FieldPath;

Result<OwnerReference> decode_owner_reference(const boost::json::value& value,
                                              const FieldPath& path) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return internal::type_error(path, "an object", value);
  }
  OwnerReference ref;
  NMO_TRY_ASSIGN(ref.api_version, internal::get_string(*object, "apiVersion", path));
  NMO_TRY_ASSIGN(ref.kind, internal::get_string(*object, "kind", path));
  NMO_TRY_ASSIGN(ref.name, internal::get_string(*object, "name", path));
  NMO_TRY_ASSIGN(ref.uid, internal::get_string(*object, "uid", path));
  NMO_TRY_ASSIGN(ref.controller, internal::get_bool(*object, "controller", path));
  return ref;
}

}  // namespace

Result<ObjectMeta> decode_meta(const boost::json::value& object) {
  const FieldPath root;
  const boost::json::object* top = object.if_object();
  if (top == nullptr) {
    return internal::type_error(root, "an object", object);
  }
  NMO_TRY_ASSIGN(const boost::json::object* metadata, internal::get_object(*top, "metadata", root));
  ObjectMeta meta;
  if (metadata == nullptr) {
    return meta;
  }
  const FieldPath path = root.field("metadata");
  const boost::json::object& m = *metadata;
  NMO_TRY_ASSIGN(meta.name, internal::get_string(m, "name", path));
  NMO_TRY_ASSIGN(meta.namespace_, internal::get_string(m, "namespace", path));
  NMO_TRY_ASSIGN(meta.uid, internal::get_string(m, "uid", path));
  NMO_TRY_ASSIGN(meta.resource_version, internal::get_string(m, "resourceVersion", path));
  NMO_TRY_ASSIGN(meta.generation, internal::get_int<std::int64_t>(m, "generation", path));
  NMO_TRY_ASSIGN(meta.creation_timestamp,
                 internal::get_optional_time(m, "creationTimestamp", path));
  NMO_TRY_ASSIGN(meta.deletion_timestamp,
                 internal::get_optional_time(m, "deletionTimestamp", path));
  NMO_TRY_ASSIGN(meta.deletion_grace_period_seconds,
                 internal::get_optional_int<std::int64_t>(m, "deletionGracePeriodSeconds", path));
  NMO_TRY_ASSIGN(meta.labels, internal::get_string_map(m, "labels", path));
  NMO_TRY_ASSIGN(meta.annotations,
                 internal::get_string_map(m, "annotations", path, kLastAppliedAnnotation));
  NMO_TRY_ASSIGN(meta.finalizers, internal::get_string_list(m, "finalizers", path));
  NMO_TRY_ASSIGN(const boost::json::array* owners, internal::get_array(m, "ownerReferences", path));
  if (owners != nullptr) {
    const FieldPath owners_path = path.field("ownerReferences");
    meta.owner_references.reserve(owners->size());
    for (std::size_t i = 0; i < owners->size(); ++i) {
      NMO_TRY_ASSIGN(OwnerReference ref,
                     decode_owner_reference((*owners)[i], owners_path.element(i)));
      meta.owner_references.push_back(std::move(ref));
    }
  }
  return meta;
}

const OwnerReference* controller_of(const ObjectMeta& meta) noexcept {
  for (const OwnerReference& ref : meta.owner_references) {
    if (ref.controller) {
      return &ref;
    }
  }
  return nullptr;
}

}  // namespace nmo::kube
