#include "kube/config/internal/server_url.h"

#include <cstddef>

#include "kube/config/internal/errors.h"

namespace nmo::kube::internal {
namespace {

bool is_ascii_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

// A DNS name or IPv4 address: letters, digits, '-', '.', '_' (some clusters use it in names).
bool is_valid_host_name(std::string_view host) {
  if (host.empty()) {
    return false;
  }
  for (const char c : host) {
    if (!is_ascii_alnum(c) && c != '-' && c != '.' && c != '_') {
      return false;
    }
  }
  return true;
}

// The inside of "[...]": hex digits, ':' and '.' (for an embedded IPv4 tail), at least one ':'.
bool is_valid_ipv6(std::string_view host) {
  if (host.find(':') == std::string_view::npos) {
    return false;
  }
  for (const char c : host) {
    if (!is_hex(c) && c != ':' && c != '.') {
      return false;
    }
  }
  return true;
}

Error invalid(std::string_view server, std::string_view problem) {
  return Error(ErrorCode::kInvalid, quote(server) + " " + std::string(problem));
}

}  // namespace

bool is_valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5) {
    return false;
  }
  unsigned value = 0;
  for (const char c : port) {
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10U + static_cast<unsigned>(c - '0');
  }
  return value >= 1U && value <= 65535U;
}

Result<ServerUrl> parse_server_url(std::string_view server) {
  const std::size_t scheme_end = server.find("://");
  if (scheme_end == std::string_view::npos) {
    return invalid(server, "has no scheme (expected https://host[:port])");
  }
  ServerUrl url;
  url.scheme = to_lower(server.substr(0, scheme_end));
  if (url.scheme != "https" && url.scheme != "http") {
    return invalid(
        server, "has scheme " + quote(server.substr(0, scheme_end)) + " (expected https or http)");
  }
  const std::string_view rest = server.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return invalid(server, "must not have a query or fragment");
  }
  const std::size_t authority_end = rest.find('/');
  const std::string_view authority = rest.substr(0, authority_end);
  std::string_view path =
      authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) {
    return invalid(server, "must not have user info (put credentials in users[])");
  }

  std::string_view host;
  std::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return invalid(server, "has an unterminated '[' in the host");
    }
    host = authority.substr(1, close - 1);
    if (!is_valid_ipv6(host)) {
      return invalid(server, "has an invalid IPv6 address");
    }
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return invalid(server, "has unexpected characters after the IPv6 address");
      }
      has_port = true;
      port = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      if (authority.find(':', colon + 1) != std::string_view::npos) {
        return invalid(server, "has an IPv6 address without brackets (write https://[addr]:port)");
      }
      has_port = true;
      port = authority.substr(colon + 1);
    }
    if (!is_valid_host_name(host)) {
      return invalid(server, host.empty() ? "has no host" : "has an invalid host");
    }
  }
  if (has_port && !is_valid_port(port)) {
    return invalid(server, "has an invalid port (expected 1-65535)");
  }
  url.host = std::string(host);
  url.port = has_port ? std::string(port) : (url.scheme == "https" ? "443" : "80");
  while (!path.empty() && path.back() == '/') {
    path.remove_suffix(1);
  }
  url.path_prefix = std::string(path);
  return url;
}

std::string format_server_url(std::string_view scheme, std::string_view host,
                              std::string_view port) {
  std::string out(scheme);
  out += "://";
  if (host.find(':') != std::string_view::npos) {
    out += '[';
    out += host;
    out += ']';
  } else {
    out += host;
  }
  out += ':';
  out += port;
  return out;
}

}  // namespace nmo::kube::internal
