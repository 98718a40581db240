// Parsing of a cluster's `server` URL into the parts the HTTP client connects with (private to
// nmo::kube_config).
//
// Threading: pure functions without shared state; safe to call from any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace nmo::kube::internal {

// The parts of a server URL.
struct ServerUrl {
  std::string scheme;       // "https" or "http", lower case
  std::string host;         // a name or an address; IPv6 without brackets
  std::string port;         // as written, else "443" for https and "80" for http
  std::string path_prefix;  // e.g. "/k8s/clusters/c-1" (no trailing '/'), or empty
};

// Parses `server`, e.g. "https://127.0.0.1:6443", "https://[fd00::1]:6443/prefix/",
// "http://localhost". Unlike client-go, which silently prepends "https://" to a value without a
// scheme, a missing scheme is an error: a bare "host:port" is far more often a typo than intent.
// Rejected (kInvalid, message without prefix, e.g. `"127.0.0.1:6443" has no scheme ...`): no
// scheme, a scheme other than http/https, user info, an empty or malformed host, an unbracketed
// IPv6 address, a port outside 1-65535, a query or a fragment.
[[nodiscard]] Result<ServerUrl> parse_server_url(std::string_view server);

// "scheme://host:port", with `host` in brackets when it is an IPv6 address.
[[nodiscard]] std::string format_server_url(std::string_view scheme, std::string_view host,
                                            std::string_view port);

// Whether `port` is a decimal number from 1 to 65535 without sign or leading '+'.
[[nodiscard]] bool is_valid_port(std::string_view port);

}  // namespace nmo::kube::internal
