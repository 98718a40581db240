// Namespace: the projection of core/v1 Namespace (metadata and status.phase), e.g. to tell a
// namespace being deleted ("Terminating") from a live one.
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"

namespace nmo::kube {

// A Namespace's metadata and phase.
struct Namespace {
  ObjectMeta meta;
  std::string phase;  // status.phase: "Active", "Terminating", or ""

  friend bool operator==(const Namespace&, const Namespace&) = default;
};

// Decodes a Namespace object. `kind`, when present, must be "Namespace".
[[nodiscard]] Result<Namespace> decode_namespace(const boost::json::value& object);

// core/v1 namespaces (cluster-scoped).
template <>
struct ResourceInfo<Namespace> {
  static constexpr std::string_view kGroup = "";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "namespaces";
  static constexpr std::string_view kKind = "Namespace";
  static constexpr bool kNamespaced = false;
  // decode_namespace().
  static Result<Namespace> decode(const boost::json::value& object) {
    return decode_namespace(object);
  }
};

}  // namespace nmo::kube
