#include "kube/api/pod_disruption_budget.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"

namespace nmo::kube {
namespace {

using internal::FieldPath;

Result<void> decode_spec(const boost::json::object& spec, const FieldPath& path,
                         PodDisruptionBudget& pdb) {
  if (const boost::json::value* selector = internal::find_field(spec, "selector")) {
    NMO_TRY_ASSIGN(pdb.selector,
                   internal::decode_label_selector_at(*selector, path.field("selector")));
  }
  NMO_TRY_ASSIGN(pdb.min_available,
                 internal::get_optional_int_or_string(spec, "minAvailable", path));
  NMO_TRY_ASSIGN(pdb.max_unavailable,
                 internal::get_optional_int_or_string(spec, "maxUnavailable", path));
  NMO_TRY_ASSIGN(pdb.unhealthy_pod_eviction_policy,
                 internal::get_string(spec, "unhealthyPodEvictionPolicy", path));
  return {};
}

Result<void> decode_status(const boost::json::object& status, const FieldPath& path,
                           PodDisruptionBudget& pdb) {
  NMO_TRY_ASSIGN(pdb.disruptions_allowed,
                 internal::get_int<std::int32_t>(status, "disruptionsAllowed", path));
  NMO_TRY_ASSIGN(pdb.current_healthy,
                 internal::get_int<std::int32_t>(status, "currentHealthy", path));
  NMO_TRY_ASSIGN(pdb.desired_healthy,
                 internal::get_int<std::int32_t>(status, "desiredHealthy", path));
  NMO_TRY_ASSIGN(pdb.expected_pods, internal::get_int<std::int32_t>(status, "expectedPods", path));
  NMO_TRY_ASSIGN(pdb.observed_generation,
                 internal::get_int<std::int64_t>(status, "observedGeneration", path));
  NMO_TRY_ASSIGN(const boost::json::object* disrupted,
                 internal::get_object(status, "disruptedPods", path));
  if (disrupted != nullptr) {
    const FieldPath at = path.field("disruptedPods");
    for (const auto& entry : *disrupted) {
      NMO_TRY_ASSIGN(const std::optional<Time> granted,
                     internal::get_optional_time(*disrupted, entry.key(), at));
      if (granted) pdb.disrupted_pods.emplace(std::string(entry.key()), *granted);
    }
  }
  return {};
}

}  // namespace

Result<PodDisruptionBudget> decode_pod_disruption_budget(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* top,
                 internal::object_of_kind(object, "PodDisruptionBudget"));
  const FieldPath root;
  PodDisruptionBudget pdb;
  NMO_TRY_ASSIGN(pdb.meta, decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* spec, internal::get_object(*top, "spec", root));
  if (spec != nullptr) {
    NMO_TRY(decode_spec(*spec, root.field("spec"), pdb));
  }
  NMO_TRY_ASSIGN(const boost::json::object* status, internal::get_object(*top, "status", root));
  if (status != nullptr) {
    NMO_TRY(decode_status(*status, root.field("status"), pdb));
  }
  return pdb;
}

}  // namespace nmo::kube
