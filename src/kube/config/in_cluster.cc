#include "kube/config/in_cluster.h"

#include <cstdlib>
#include <utility>

#include "base/strings.h"
#include "kube/config/internal/errors.h"
#include "kube/config/internal/file.h"
#include "kube/config/internal/server_url.h"

namespace nmo::kube {
namespace {

constexpr std::string_view kPrefix = "in-cluster config";

std::string option_or_env(const std::string& option, const char* name) {
  if (!option.empty()) {
    return option;
  }
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): see the header
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

Result<RestConfig> load_in_cluster(const InClusterOptions& options) {
  const std::string host = option_or_env(options.host, "KUBERNETES_SERVICE_HOST");
  if (host.empty()) {
    return Error(ErrorCode::kNotFound,
                 std::string(kPrefix) + ": KUBERNETES_SERVICE_HOST is not set");
  }
  const std::string port = option_or_env(options.port, "KUBERNETES_SERVICE_PORT");
  if (port.empty()) {
    return Error(ErrorCode::kNotFound,
                 std::string(kPrefix) + ": KUBERNETES_SERVICE_PORT is not set");
  }
  if (!internal::is_valid_port(port)) {
    return Error(ErrorCode::kInvalid, std::string(kPrefix) + ": KUBERNETES_SERVICE_PORT " +
                                          internal::quote(port) + " is not a port number");
  }

  RestConfig rest;
  rest.scheme = "https";
  rest.host = host;
  rest.port = port;
  rest.server = internal::format_server_url(rest.scheme, host, port);
  rest.origin = "in-cluster service account";

  rest.token = file_token(options.dir + "/token");
  Result<std::string> first = rest.token->token();
  if (!first.has_value()) {
    return internal::with_prefix(std::move(first).error(), kPrefix);
  }
  Result<std::string> ca = internal::read_file(options.dir + "/ca.crt");
  if (!ca.has_value()) {
    return internal::with_prefix(std::move(ca).error(), kPrefix);
  }
  rest.ca_pem = std::move(*ca);
  // Like client-go and controller-runtime: any problem with the namespace file means "default".
  if (Result<std::string> ns = internal::read_file(options.dir + "/namespace"); ns.has_value()) {
    if (const std::string_view trimmed = trim(*ns); !trimmed.empty()) {
      rest.default_namespace = std::string(trimmed);
    }
  }
  return rest;
}

}  // namespace nmo::kube
