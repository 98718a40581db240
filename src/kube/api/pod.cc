#include "kube/api/pod.h"

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"

namespace nmo::kube {
namespace {

using internal::FieldPath;

// The only effect besides "" (every effect) whose tolerations a Pod keeps.
constexpr std::string_view kPreferNoSchedule = "PreferNoSchedule";

Result<Toleration> decode_toleration(const boost::json::value& value, const FieldPath& path) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return internal::type_error(path, "an object", value);
  }
  Toleration toleration;
  NMO_TRY_ASSIGN(toleration.key, internal::get_string(*object, "key", path));
  NMO_TRY_ASSIGN(toleration.operator_, internal::get_string(*object, "operator", path));
  NMO_TRY_ASSIGN(toleration.value, internal::get_string(*object, "value", path));
  NMO_TRY_ASSIGN(toleration.effect, internal::get_string(*object, "effect", path));
  NMO_TRY_ASSIGN(toleration.toleration_seconds,
                 internal::get_optional_int<std::int64_t>(*object, "tolerationSeconds", path));
  return toleration;
}

// The kept tolerations (Pod::tolerations); every entry is checked, kept or not.
Result<void> decode_tolerations(const boost::json::object& spec, const FieldPath& path, Pod& pod) {
  NMO_TRY_ASSIGN(const boost::json::array* tolerations,
                 internal::get_array(spec, "tolerations", path));
  if (tolerations == nullptr) {
    return {};
  }
  const FieldPath tolerations_path = path.field("tolerations");
  for (std::size_t i = 0; i < tolerations->size(); ++i) {
    NMO_TRY_ASSIGN(Toleration toleration,
                   decode_toleration((*tolerations)[i], tolerations_path.element(i)));
    if (toleration.effect.empty() || toleration.effect == kPreferNoSchedule) {
      pod.tolerations.push_back(std::move(toleration));
    }
  }
  return {};
}

Result<void> decode_spec(const boost::json::object& spec, const FieldPath& path, Pod& pod) {
  NMO_TRY_ASSIGN(pod.node_name, internal::get_string(spec, "nodeName", path));
  NMO_TRY_ASSIGN(
      pod.termination_grace_period_seconds,
      internal::get_optional_int<std::int64_t>(spec, "terminationGracePeriodSeconds", path));
  NMO_TRY(decode_tolerations(spec, path, pod));
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

bool tolerates(const Toleration& toleration, const Taint& taint) noexcept {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  if (toleration.operator_ == "Exists") return true;
  if (toleration.operator_.empty() || toleration.operator_ == "Equal") {
    return toleration.value == taint.value;
  }
  return false;
}

bool tolerates(const Pod& pod, const Taint& taint) noexcept {
  return std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                     [&taint](const Toleration& t) { return tolerates(t, taint); });
}

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
