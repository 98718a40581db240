#include "kube/api/workload.h"

#include <charconv>
#include <limits>
#include <system_error>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"

namespace nmo::kube {
namespace {

using internal::FieldPath;

// spec.replicas; an absent or null one is 1, as the API server defaults it.
Result<std::int32_t> spec_replicas(const boost::json::object& spec, const FieldPath& spec_path) {
  NMO_TRY_ASSIGN(const std::optional<std::int32_t> replicas,
                 internal::get_optional_int<std::int32_t>(spec, "replicas", spec_path));
  return replicas.value_or(1);
}

Result<void> decode_strategy(const boost::json::object& strategy, const FieldPath& path,
                             Deployment& deployment) {
  NMO_TRY_ASSIGN(std::string type, internal::get_string(strategy, "type", path));
  if (!type.empty()) deployment.strategy_type = std::move(type);
  NMO_TRY_ASSIGN(const boost::json::object* rolling,
                 internal::get_object(strategy, "rollingUpdate", path));
  if (rolling != nullptr) {
    const FieldPath at = path.field("rollingUpdate");
    NMO_TRY_ASSIGN(deployment.max_surge,
                   internal::get_optional_int_or_string(*rolling, "maxSurge", at));
    NMO_TRY_ASSIGN(deployment.max_unavailable,
                   internal::get_optional_int_or_string(*rolling, "maxUnavailable", at));
  }
  return {};
}

Result<void> decode_deployment_status(const boost::json::object& status, const FieldPath& path,
                                      Deployment& deployment) {
  NMO_TRY_ASSIGN(deployment.status_replicas,
                 internal::get_int<std::int32_t>(status, "replicas", path));
  NMO_TRY_ASSIGN(deployment.ready_replicas,
                 internal::get_int<std::int32_t>(status, "readyReplicas", path));
  NMO_TRY_ASSIGN(deployment.available_replicas,
                 internal::get_int<std::int32_t>(status, "availableReplicas", path));
  NMO_TRY_ASSIGN(deployment.updated_replicas,
                 internal::get_int<std::int32_t>(status, "updatedReplicas", path));
  NMO_TRY_ASSIGN(deployment.observed_generation,
                 internal::get_int<std::int64_t>(status, "observedGeneration", path));
  return {};
}

}  // namespace

std::optional<std::int64_t> scaled_value(const IntOrString& value, std::int64_t total,
                                         Rounding rounding) {
  if (value.is_int) return value.int_value;
  const std::string_view text = value.str_value;
  // Only what the API server's validation admits, digits then '%' (Go's Atoi would also take a
  // sign).
  if (text.size() < 2 || text.back() != '%' || text.front() < '0' || text.front() > '9') {
    return std::nullopt;
  }
  std::int64_t percent = 0;
  const char* end = text.data() + text.size() - 1;
  const auto [ptr, ec] = std::from_chars(text.data(), end, percent);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  // Bounds that keep percent * total within int64 for every int32 total.
  constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
  if (percent > kInt32Max || total < 0 || total > kInt32Max) return std::nullopt;
  const std::int64_t product = percent * total;
  return rounding == Rounding::kUp ? (product + 99) / 100 : product / 100;
}

std::int64_t Deployment::rolling_surge() const {
  if (is_recreate() || !max_surge) return 0;
  return scaled_value(*max_surge, replicas, Rounding::kUp).value_or(0);
}

Result<ReplicaSet> decode_replica_set(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* top, internal::object_of_kind(object, "ReplicaSet"));
  const FieldPath root;
  ReplicaSet replica_set;
  NMO_TRY_ASSIGN(replica_set.meta, decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* spec, internal::get_object(*top, "spec", root));
  if (spec != nullptr) {
    NMO_TRY_ASSIGN(replica_set.replicas, spec_replicas(*spec, root.field("spec")));
  }
  return replica_set;
}

Result<Deployment> decode_deployment(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* top, internal::object_of_kind(object, "Deployment"));
  const FieldPath root;
  Deployment deployment;
  NMO_TRY_ASSIGN(deployment.meta, decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* spec, internal::get_object(*top, "spec", root));
  if (spec != nullptr) {
    const FieldPath spec_path = root.field("spec");
    NMO_TRY_ASSIGN(deployment.replicas, spec_replicas(*spec, spec_path));
    NMO_TRY_ASSIGN(const boost::json::object* strategy,
                   internal::get_object(*spec, "strategy", spec_path));
    if (strategy != nullptr) {
      NMO_TRY(decode_strategy(*strategy, spec_path.field("strategy"), deployment));
    }
  }
  NMO_TRY_ASSIGN(const boost::json::object* status, internal::get_object(*top, "status", root));
  if (status != nullptr) {
    NMO_TRY(decode_deployment_status(*status, root.field("status"), deployment));
  }
  return deployment;
}

Result<StatefulSet> decode_stateful_set(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* top, internal::object_of_kind(object, "StatefulSet"));
  const FieldPath root;
  StatefulSet stateful_set;
  NMO_TRY_ASSIGN(stateful_set.meta, decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* spec, internal::get_object(*top, "spec", root));
  if (spec != nullptr) {
    NMO_TRY_ASSIGN(stateful_set.replicas, spec_replicas(*spec, root.field("spec")));
  }
  NMO_TRY_ASSIGN(const boost::json::object* status, internal::get_object(*top, "status", root));
  if (status != nullptr) {
    const FieldPath status_path = root.field("status");
    NMO_TRY_ASSIGN(stateful_set.ready_replicas,
                   internal::get_int<std::int32_t>(*status, "readyReplicas", status_path));
    NMO_TRY_ASSIGN(stateful_set.available_replicas,
                   internal::get_int<std::int32_t>(*status, "availableReplicas", status_path));
  }
  return stateful_set;
}

}  // namespace nmo::kube
