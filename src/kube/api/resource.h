// ResourceInfo<T>: what a generic client or reflector needs to know about a projection type:
// its API group/version/resource (to build URLs), its kind, whether it is namespaced, and how to
// decode one object into T.
//
// Each projection header (pod.h, node.h, ...) specialises ResourceInfo next to its type:
//
//   template <> struct ResourceInfo<Pod> {
//     static constexpr std::string_view kGroup = "";       // "" is the core group
//     static constexpr std::string_view kVersion = "v1";
//     static constexpr std::string_view kPlural = "pods";
//     static constexpr std::string_view kKind = "Pod";
//     static constexpr bool kNamespaced = true;
//     static Result<Pod> decode(const boost::json::value& object);
//   };
//
// Threading: compile-time data and pure functions; safe from any thread.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"

namespace nmo::kube {

// Specialised for each projection type; the primary template is deliberately undefined.
template <typename T>
struct ResourceInfo;

// A type with a complete ResourceInfo specialisation.
template <typename T>
concept Resource = requires(const boost::json::value& object) {
  { ResourceInfo<T>::kGroup } -> std::convertible_to<std::string_view>;
  { ResourceInfo<T>::kVersion } -> std::convertible_to<std::string_view>;
  { ResourceInfo<T>::kPlural } -> std::convertible_to<std::string_view>;
  { ResourceInfo<T>::kKind } -> std::convertible_to<std::string_view>;
  { ResourceInfo<T>::kNamespaced } -> std::convertible_to<bool>;
  { ResourceInfo<T>::decode(object) } -> std::same_as<Result<T>>;
};

namespace internal {

// "/api/v1" for the core group (empty `group`), "/apis/<group>/<version>" otherwise.
[[nodiscard]] std::string api_root(std::string_view group, std::string_view version);

// api_root + "/namespaces/<ns>" (when `ns` is not empty) + "/<plural>" + "/<name>" (when
// `name` is not empty). Aborts (NMO_CHECK) when a namespace is given for a cluster-scoped kind:
// that is a bug in the caller, not bad input.
[[nodiscard]] std::string resource_path(std::string_view group, std::string_view version,
                                        std::string_view plural, bool namespaced,
                                        std::string_view ns, std::string_view name);

}  // namespace internal

// The apiVersion of T's objects: "v1", "policy/v1", "coordination.k8s.io/v1".
template <Resource T>
[[nodiscard]] std::string api_version() {
  using Info = ResourceInfo<T>;
  if (std::string_view(Info::kGroup).empty()) {
    return std::string(Info::kVersion);
  }
  return std::string(Info::kGroup) + "/" + std::string(Info::kVersion);
}

// The root of T's group version, "/api/v1" or "/apis/<group>/<version>": a GET of it answers 404
// exactly while that API is not served (a CRD not installed, KubeVirt absent).
template <Resource T>
[[nodiscard]] std::string api_root_path() {
  return internal::api_root(ResourceInfo<T>::kGroup, ResourceInfo<T>::kVersion);
}

// The collection URL path for list and watch: "/api/v1/namespaces/default/pods",
// "/api/v1/pods" (namespaced kind, all namespaces: empty `ns`), "/api/v1/nodes",
// "/apis/policy/v1/namespaces/db/poddisruptionbudgets". Names and namespaces are used verbatim:
// they must be valid Kubernetes names (DNS labels need no escaping).
template <Resource T>
[[nodiscard]] std::string collection_path(std::string_view ns = {}) {
  using Info = ResourceInfo<T>;
  return internal::resource_path(Info::kGroup, Info::kVersion, Info::kPlural, Info::kNamespaced, ns,
                                 {});
}

// The URL path of one object: "/api/v1/namespaces/default/pods/web-0", "/api/v1/nodes/n1".
template <Resource T>
[[nodiscard]] std::string object_path(std::string_view ns, std::string_view name) {
  using Info = ResourceInfo<T>;
  return internal::resource_path(Info::kGroup, Info::kVersion, Info::kPlural, Info::kNamespaced, ns,
                                 name);
}

}  // namespace nmo::kube
