// DaemonSet: apps/v1 DaemonSet reduced to its metadata. Drains only need to know that the
// DaemonSet owning a pod exists (kubectl drain --ignore-daemonsets skips such pods, since the
// DaemonSet controller would recreate them at once).
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"

namespace nmo::kube {

// A DaemonSet's metadata.
struct DaemonSet {
  ObjectMeta meta;

  friend bool operator==(const DaemonSet&, const DaemonSet&) = default;
};

// Decodes a DaemonSet object (metadata only). `kind`, when present, must be "DaemonSet".
[[nodiscard]] Result<DaemonSet> decode_daemon_set(const boost::json::value& object);

// apps/v1 daemonsets.
template <>
struct ResourceInfo<DaemonSet> {
  static constexpr std::string_view kGroup = "apps";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "daemonsets";
  static constexpr std::string_view kKind = "DaemonSet";
  static constexpr bool kNamespaced = true;
  // decode_daemon_set().
  static Result<DaemonSet> decode(const boost::json::value& object) {
    return decode_daemon_set(object);
  }
};

}  // namespace nmo::kube
