// ServerVersion: what the API server's GET /version says about itself (version.Info), and the
// comparison the operator needs: is it at least Kubernetes 1.N.
//
// Distributions decorate the fields: EKS and GKE report minor "27+", OpenShift a gitVersion like
// "v1.27.16+03a907c". The numbers are the leading digits of major and minor; when those are
// missing or unreadable they come from gitVersion ("v1.27.3" -> 1, 27).
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"

namespace nmo::kube {

// The API server's version.
struct ServerVersion {
  int major = 0;
  int minor = 0;
  std::string git_version;  // gitVersion as reported, e.g. "v1.27.16+03a907c"

  // Whether the server is at least `major`.`minor`.
  [[nodiscard]] bool at_least(int wanted_major, int wanted_minor) const noexcept;
  // "1.27".
  [[nodiscard]] std::string minor_version() const;

  friend bool operator==(const ServerVersion&, const ServerVersion&) = default;
};

// The path of the version endpoint.
inline constexpr std::string_view kVersionPath = "/version";

// Decodes the body of GET /version. Errors are ErrorCode::kInvalid naming the field, e.g.
// "minor: expected a string, got number", or `no Kubernetes version in major "", minor "",
// gitVersion "devel"` when no field gives the numbers.
[[nodiscard]] Result<ServerVersion> decode_server_version(const boost::json::value& body);

}  // namespace nmo::kube
