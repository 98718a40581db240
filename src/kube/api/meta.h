// ObjectMeta: the projection of metadata every Kubernetes object carries.
//
// Only what a controller reads is kept. metadata.managedFields (often the largest part of an
// object) is never decoded, and neither is the annotation
// kubectl.kubernetes.io/last-applied-configuration, a full copy of the object that client-side
// `kubectl apply` leaves behind: both would multiply the size of every cached projection.
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
#include "kube/api/labels.h"
#include "kube/api/time.h"

namespace nmo::kube {

// The annotation decode_meta() drops (see the file comment).
inline constexpr std::string_view kLastAppliedAnnotation =
    "kubectl.kubernetes.io/last-applied-configuration";

// One entry of metadata.ownerReferences.
struct OwnerReference {
  std::string api_version;  // "apps/v1"
  std::string kind;         // "ReplicaSet"
  std::string name;
  std::string uid;
  bool controller = false;  // true for the managing controller (at most one per object)

  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

// The fields of metadata that controllers use.
struct ObjectMeta {
  std::string name;
  // Empty for cluster-scoped objects. The trailing underscore only dodges the keyword.
  std::string namespace_;  // NOLINT(readability-identifier-naming)
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;  // set once deletion has started
  std::optional<std::int64_t> deletion_grace_period_seconds;
  Labels labels;
  Labels annotations;  // without kLastAppliedAnnotation
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;

  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// Decodes `object.metadata`, where `object` is a whole Kubernetes object (Pod, Node, ...). A
// missing or null metadata gives an empty ObjectMeta. Errors (ErrorCode::kInvalid) name the
// field: `object` not being a JSON object, a field of the wrong type
// ("metadata.labels.app: expected a string, got number"), a bad timestamp.
[[nodiscard]] Result<ObjectMeta> decode_meta(const boost::json::value& object);

// The owner reference with controller=true, or nullptr. The pointer is valid while `meta` is
// alive and unmodified.
[[nodiscard]] const OwnerReference* controller_of(const ObjectMeta& meta) noexcept;

}  // namespace nmo::kube
