// One-line messages for failures talking to the API server, as an admin reads them on a
// terminal, and the exit status each failure maps to (exit_code.h).
//
//   connection refused   cannot reach the API server at https://127.0.0.1:6443: connection refused
//   API not installed    the NodeMaintenance API is not installed in this cluster
//                        (nodemaintenances.nodemaintenance.medik8s.io): apply deploy/crd
//   credentials refused  the API server refused the credentials of <origin> (Unauthorized)
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"

namespace nmo::cli {

// A message for the user and the exit status that goes with it.
struct Failure {
  std::string message;
  int exit_code = 1;

  friend bool operator==(const Failure&, const Failure&) = default;
};

// True when `error` means no answer came from the API server (connection refused, DNS, TLS,
// timeout before a response).
[[nodiscard]] bool is_unreachable(const Error& error) noexcept;

// The message for an error of a request to the API server at `server` (RestConfig::server).
// Unreachable: "cannot reach the API server at <server>: <cause>", the cause with the client's
// "connect to host:port: " prefix removed and lower-cased ("connection refused"); exit 4.
// Unauthorized/Forbidden: the server's message; exit 4 and 1. Unauthorized without an HTTP
// status (no usable credentials, e.g. a failed exec plugin): its message; exit 4. NotFound: the
// message; exit 3. Anything else: the server's message; exit 1.
[[nodiscard]] Failure describe_api_error(const Error& error, std::string_view server);

// The message when a resource of ours is not served (its CRD is missing): `kind` is
// "NodeMaintenance" or "MaintenancePlan", `crd` the CRD's name; exit 4.
[[nodiscard]] Failure api_not_installed(std::string_view kind, std::string_view crd);

}  // namespace nmo::cli
