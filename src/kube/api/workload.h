// Workloads: apps/v1 ReplicaSet, Deployment and StatefulSet reduced to what explains a pod's
// eviction: who owns whom (a Deployment's pods belong to its ReplicaSets), how many replicas are
// wanted, and how a Deployment replaces its pods (its rollout strategy). Also the rule both the
// Deployment and the disruption controllers use to turn `2` or `"25%"` into a count.
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/int_or_string.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"

namespace nmo::kube {

// How scaled_value() rounds a percentage.
enum class Rounding { kDown, kUp };

// The count `value` stands for against `total` (intstr.GetScaledValueFromIntOrPercent): an
// integer as is; "N%" as N percent of `total`, rounded by `rounding`. std::nullopt for a string
// that is not a non-negative whole percentage ("abc", "-5%", "1.5%") or whose product with
// `total` would overflow; the API server's validation keeps such values out of real objects.
[[nodiscard]] std::optional<std::int64_t> scaled_value(const IntOrString& value, std::int64_t total,
                                                       Rounding rounding);

// A ReplicaSet: its owner references (the Deployment behind a pod) and its scale.
struct ReplicaSet {
  ObjectMeta meta;
  std::int32_t replicas = 1;  // spec.replicas; the API server defaults an absent one to 1

  friend bool operator==(const ReplicaSet&, const ReplicaSet&) = default;
};

// spec.strategy.type values.
inline constexpr std::string_view kRollingUpdateStrategy = "RollingUpdate";
inline constexpr std::string_view kRecreateStrategy = "Recreate";

// A Deployment: its scale, its rollout strategy and its rollout's progress.
struct Deployment {
  ObjectMeta meta;            // annotations included: owners of a workload annotate it
  std::int32_t replicas = 1;  // spec.replicas; the API server defaults an absent one to 1
  // spec.strategy.type: kRollingUpdateStrategy (also when absent) or kRecreateStrategy.
  std::string strategy_type{kRollingUpdateStrategy};
  // spec.strategy.rollingUpdate.{maxSurge,maxUnavailable}; the API server defaults both to 25%
  // for a RollingUpdate Deployment, so they are absent only for Recreate.
  std::optional<IntOrString> max_surge;
  std::optional<IntOrString> max_unavailable;
  std::int32_t status_replicas = 0;      // status.replicas
  std::int32_t ready_replicas = 0;       // status.readyReplicas
  std::int32_t available_replicas = 0;   // status.availableReplicas
  std::int32_t updated_replicas = 0;     // status.updatedReplicas
  std::int64_t observed_generation = 0;  // status.observedGeneration

  // True for strategy Recreate: every old pod is killed before any new one starts.
  [[nodiscard]] bool is_recreate() const noexcept { return strategy_type == kRecreateStrategy; }

  // How many pods a rolling update may start above `replicas` (the Deployment controller's
  // ResolveFenceposts): maxSurge of `replicas`, a percentage rounded up; 0 when absent, as in
  // that controller (the API server fills in 25% on create), for a Recreate Deployment, and for a
  // maxSurge that scaled_value() rejects. A rolling update with 0 surge removes an old pod before
  // its replacement runs.
  [[nodiscard]] std::int64_t rolling_surge() const;

  friend bool operator==(const Deployment&, const Deployment&) = default;
};

// A StatefulSet: its scale and how many of its pods are ready.
struct StatefulSet {
  ObjectMeta meta;
  std::int32_t replicas = 1;            // spec.replicas; absent means 1
  std::int32_t ready_replicas = 0;      // status.readyReplicas
  std::int32_t available_replicas = 0;  // status.availableReplicas

  friend bool operator==(const StatefulSet&, const StatefulSet&) = default;
};

// Decoders. `kind`, when present, must match. Errors are ErrorCode::kInvalid naming the field,
// e.g. "spec.replicas: expected an integer, got string",
// "spec.strategy.rollingUpdate.maxSurge: expected an integer or a string, got bool".
[[nodiscard]] Result<ReplicaSet> decode_replica_set(const boost::json::value& object);
[[nodiscard]] Result<Deployment> decode_deployment(const boost::json::value& object);
[[nodiscard]] Result<StatefulSet> decode_stateful_set(const boost::json::value& object);

// apps/v1 replicasets.
template <>
struct ResourceInfo<ReplicaSet> {
  static constexpr std::string_view kGroup = "apps";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "replicasets";
  static constexpr std::string_view kKind = "ReplicaSet";
  static constexpr bool kNamespaced = true;
  // decode_replica_set().
  static Result<ReplicaSet> decode(const boost::json::value& object) {
    return decode_replica_set(object);
  }
};

// apps/v1 deployments.
template <>
struct ResourceInfo<Deployment> {
  static constexpr std::string_view kGroup = "apps";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "deployments";
  static constexpr std::string_view kKind = "Deployment";
  static constexpr bool kNamespaced = true;
  // decode_deployment().
  static Result<Deployment> decode(const boost::json::value& object) {
    return decode_deployment(object);
  }
};

// apps/v1 statefulsets.
template <>
struct ResourceInfo<StatefulSet> {
  static constexpr std::string_view kGroup = "apps";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "statefulsets";
  static constexpr std::string_view kKind = "StatefulSet";
  static constexpr bool kNamespaced = true;
  // decode_stateful_set().
  static Result<StatefulSet> decode(const boost::json::value& object) {
    return decode_stateful_set(object);
  }
};

}  // namespace nmo::kube
