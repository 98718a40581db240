// Pod: the projection of core/v1 Pod that drains need: where it runs, whether it is done or
// ready, who owns it, what deleting it costs (grace period, emptyDir data), and which soft
// taints its replacement would accept (the tolerations a MaintenancePlan's steering taint,
// PreferNoSchedule, is judged by).
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/meta.h"
#include "kube/api/node.h"
#include "kube/api/resource.h"

namespace nmo::kube {

// The annotation the kubelet puts on mirror pods (static pods seen through the API); the API
// server refuses to evict them, so drains skip them.
inline constexpr std::string_view kMirrorPodAnnotation = "kubernetes.io/config.mirror";

// One entry of spec.tolerations.
struct Toleration {
  std::string key;        // "" with operator Exists: every key
  std::string operator_;  // NOLINT(readability-identifier-naming): "Exists", "Equal" or "" (Equal)
  std::string value;
  std::string effect;                              // "" matches every effect
  std::optional<std::int64_t> toleration_seconds;  // NoExecute only: how long the pod may stay

  friend bool operator==(const Toleration&, const Toleration&) = default;
};

// A Pod as far as the operator cares.
struct Pod {
  ObjectMeta meta;
  std::string node_name;       // spec.nodeName; empty while unscheduled
  std::string phase;           // status.phase: Pending, Running, Succeeded, Failed, Unknown, or ""
  std::string ready_status;    // the Ready condition's status: "True", "False", "Unknown" or ""
  bool has_empty_dir = false;  // some spec.volumes[] entry is an emptyDir (data lost on eviction)
  std::optional<std::int64_t> termination_grace_period_seconds;  // spec, when set
  // spec.tolerations whose effect is "" or PreferNoSchedule, in the spec's order. The others are
  // dropped to keep a cached pod small (docs/design.md §7): every pod carries the two NoExecute
  // tolerations the API server adds, and only PreferNoSchedule taints are judged here.
  std::vector<Toleration> tolerations;

  // True when the Ready condition has status "True".
  [[nodiscard]] bool is_ready() const noexcept { return ready_status == "True"; }
  // True for a mirror pod (annotation kMirrorPodAnnotation present).
  [[nodiscard]] bool is_mirror() const noexcept {
    return meta.annotations.contains(kMirrorPodAnnotation);
  }
  // The managing controller's owner reference (controller=true), or nullptr.
  [[nodiscard]] const OwnerReference* controller() const noexcept { return controller_of(meta); }

  friend bool operator==(const Pod&, const Pod&) = default;
};

// Decodes a Pod object (a list item, a watch event's object, or a GET response). `kind`, when
// present, must be "Pod". Errors are ErrorCode::kInvalid naming the field, e.g.
// "spec.nodeName: expected a string, got number".
[[nodiscard]] Result<Pod> decode_pod(const boost::json::value& object);

// Whether `toleration` tolerates `taint`, by Kubernetes' rules (core/v1 Toleration.ToleratesTaint):
// an empty effect matches every effect; an empty key (operator Exists) matches every key; Exists
// matches any value; Equal, or an empty operator, needs the same value; any other operator
// tolerates nothing.
[[nodiscard]] bool tolerates(const Toleration& toleration, const Taint& taint) noexcept;

// Whether one of the pod's kept tolerations tolerates `taint`. Exact for PreferNoSchedule taints
// only: the tolerations of the other effects are not kept (Pod::tolerations).
[[nodiscard]] bool tolerates(const Pod& pod, const Taint& taint) noexcept;

// core/v1 pods.
template <>
struct ResourceInfo<Pod> {
  static constexpr std::string_view kGroup = "";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "pods";
  static constexpr std::string_view kKind = "Pod";
  static constexpr bool kNamespaced = true;
  // decode_pod().
  static Result<Pod> decode(const boost::json::value& object) { return decode_pod(object); }
};

}  // namespace nmo::kube
