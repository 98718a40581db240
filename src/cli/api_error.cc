#include "cli/api_error.h"

#include <cctype>

#include "cli/exit_code.h"

namespace nmo::cli {

bool is_unreachable(const Error& error) noexcept {
  if (error.http_status != 0) return false;
  return error.code == ErrorCode::kUnavailable || error.code == ErrorCode::kTimeout;
}

namespace {

// "connect to 127.0.0.1:6443: Connection refused" -> "connection refused".
std::string cause_of(const std::string& message) {
  std::string cause = message;
  for (std::string_view prefix : {"connect to ", "resolve ", "TLS handshake with "}) {
    if (cause.compare(0, prefix.size(), prefix) != 0) continue;
    if (const auto colon = cause.find(": "); colon != std::string::npos) {
      cause = cause.substr(colon + 2);
    }
    break;
  }
  if (!cause.empty() && cause.size() > 1 && std::isupper(static_cast<unsigned char>(cause[0])) &&
      std::islower(static_cast<unsigned char>(cause[1]))) {
    cause[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(cause[0])));
  }
  return cause;
}

}  // namespace

Failure describe_api_error(const Error& error, std::string_view server) {
  if (is_unreachable(error)) {
    return Failure{.message = "cannot reach the API server at " + std::string(server) + ": " +
                              cause_of(error.message),
                   .exit_code = kExitUnavailable};
  }
  const std::string message = error.message.empty() ? error.describe() : error.message;
  switch (error.code) {
    case ErrorCode::kUnauthorized:
      if (error.http_status == 0) {
        // No credentials to send: an exec plugin failed (its message names the kubeconfig).
        return Failure{.message = message, .exit_code = kExitUnavailable};
      }
      return Failure{.message = "the API server at " + std::string(server) +
                                " refused the credentials: " + message,
                     .exit_code = kExitUnavailable};
    case ErrorCode::kNotFound:
      return Failure{.message = message, .exit_code = kExitNotFound};
    default:
      return Failure{.message = message, .exit_code = kExitFailed};
  }
}

Failure api_not_installed(std::string_view kind, std::string_view crd) {
  return Failure{.message = "the " + std::string(kind) + " API is not installed in this cluster (" +
                            std::string(crd) + "): apply deploy/crd",
                 .exit_code = kExitUnavailable};
}

}  // namespace nmo::cli
