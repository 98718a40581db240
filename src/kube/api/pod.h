// Pod: the projection of core/v1 Pod that drains need: where it runs, whether it is done or
// ready, who owns it, and what deleting it costs (grace period, emptyDir data).
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"

namespace nmo::kube {

// The annotation the kubelet puts on mirror pods (static pods seen through the API); the API
// server refuses to evict them, so drains skip them.
inline constexpr std::string_view kMirrorPodAnnotation = "kubernetes.io/config.mirror";

// A Pod as far as the operator cares.
struct Pod {
  ObjectMeta meta;
  std::string node_name;       // spec.nodeName; empty while unscheduled
  std::string phase;           // status.phase: Pending, Running, Succeeded, Failed, Unknown, or ""
  std::string ready_status;    // the Ready condition's status: "True", "False", "Unknown" or ""
  bool has_empty_dir = false;  // some spec.volumes[] entry is an emptyDir (data lost on eviction)
  std::optional<std::int64_t> termination_grace_period_seconds;  // spec, when set

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
