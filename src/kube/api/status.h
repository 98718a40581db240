// Turning API-server failures into nmo::Error: metav1.Status bodies of non-2xx responses, the
// Status objects of watch ERROR events, and the bodies that are not a Status at all (a proxy's
// HTML page, an empty or cut-off body).
//
// The eviction subresource's 429 is the case that matters most: a PDB refusal comes back as
//   {"kind":"Status","reason":"TooManyRequests","code":429,
//    "message":"Cannot evict pod as it would violate the pod's disruption budget.",
//    "details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget db-pdb
//    needs 2 healthy pods and has 2 currently"}]}}
// and must reach the drain logic with its causes intact (find_cause(error, "DisruptionBudget")).
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/error.h"

namespace nmo::kube {

// The code for an HTTP status when the body names no known reason:
//   400 BadRequest, 401 Unauthorized, 403 Forbidden, 404 NotFound, 409 Conflict, 410 Gone,
//   422 Invalid, 429 TooManyRequests, 500 InternalError, 503 ServiceUnavailable, 504 Timeout;
//   408 Timeout; 502 ServiceUnavailable (a proxy could not reach the API server: retryable);
//   405, 406, 413, 415 BadRequest (the request itself is wrong); other 5xx InternalError;
//   anything else Unknown.
[[nodiscard]] ErrorCode error_code_from_http_status(int http_status) noexcept;

// The Error for a failed response. When `body` is a metav1.Status (a JSON object with
// kind "Status"), the Error carries its message, its details.causes and its reason's code
// (falling back on error_code_from_http_status when the reason is empty or unknown to us);
// retry_after is details.retryAfterSeconds when positive, else `retry_after_header`. Otherwise
// the code comes from the HTTP status and the message quotes the body:
//   the server answered 502 with a non-Status body: <html><head>...   (first 200 bytes, printable)
//   the server answered 503 with an empty body
// http_status is always the given `http_status`. Never throws.
[[nodiscard]] Error error_from_response(int http_status, std::string_view body,
                                        std::optional<std::chrono::seconds> retry_after_header);

// The Error for a decoded metav1.Status object (as found in a watch ERROR event). The HTTP status
// is the Status's `code` (0 when absent). A value that is not a Status object gives
// ErrorCode::kUnknown with a message saying so.
[[nodiscard]] Error error_from_status(const boost::json::value& status);

// The first cause with the given reason (e.g. "DisruptionBudget"), or std::nullopt.
[[nodiscard]] std::optional<ErrorCause> find_cause(const Error& error, std::string_view reason);

}  // namespace nmo::kube
