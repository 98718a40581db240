// Error: the value every fallible operation in this project returns on failure.
//
// Its shape follows the Kubernetes `Status` object (metav1.Status) so an API error survives the
// trip from the HTTP response to a log line or an Event without losing information: a code
// mirroring `Status.reason`, the HTTP status, the server's message, `details.causes` and
// `details.retryAfterSeconds`. Errors that never touched the API server use the same codes
// (kInvalid for bad input, kTimeout, kCancelled, kInternal) with http_status 0.
//
// Threading: a plain value type. Distinct objects may be used from different threads; one object
// may be read concurrently but not written concurrently.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nmo {

// Why an operation failed. The API-server codes map one-to-one onto Kubernetes
// `metav1.StatusReason` values; to_string() gives the exact reason text.
enum class ErrorCode {
  kNotFound,         // "NotFound", HTTP 404
  kAlreadyExists,    // "AlreadyExists", HTTP 409 on create
  kConflict,         // "Conflict", HTTP 409 (stale resourceVersion)
  kTooManyRequests,  // "TooManyRequests", HTTP 429 (PDB refusal or API Priority & Fairness)
  kGone,             // "Gone", HTTP 410
  kForbidden,        // "Forbidden", HTTP 403
  kUnauthorized,     // "Unauthorized", HTTP 401
  kInvalid,          // "Invalid", HTTP 422; also local validation failures
  kBadRequest,       // "BadRequest", HTTP 400
  kUnavailable,      // "ServiceUnavailable", HTTP 503; also connection failures
  kTimeout,          // "Timeout", HTTP 504; also local deadlines
  kInternal,         // "InternalError", HTTP 500
  kCancelled,        // no Kubernetes reason: the operation was cancelled locally (shutdown)
  kExpired,          // "Expired", HTTP 410 (watch resourceVersion too old: relist)
  kUnknown,          // reason missing or not recognised
};

// The Kubernetes reason text for `code` ("NotFound", "ServiceUnavailable", "InternalError", ...).
// kCancelled gives "Cancelled" and kUnknown gives "Unknown", which Kubernetes does not define.
[[nodiscard]] std::string_view to_string(ErrorCode code) noexcept;

// The code for a `Status.reason` string, or std::nullopt when the reason is empty or not one of
// ours (then the caller falls back on the HTTP status). Accepts every text to_string() produces,
// plus "ServerTimeout", which maps to kTimeout.
[[nodiscard]] std::optional<ErrorCode> error_code_from_reason(std::string_view reason) noexcept;

// One entry of `Status.details.causes`: which field was wrong and why.
struct ErrorCause {
  std::string reason;   // e.g. "FieldValueRequired", "DisruptionBudget"
  std::string message;  // human-readable explanation
  std::string field;    // JSON path of the field, e.g. "spec.nodeName"; may be empty

  friend bool operator==(const ErrorCause&, const ErrorCause&) = default;
};

// A failure with enough context to decide what to do next (retry, relist, give up) and to
// explain it to a human.
struct Error {
  ErrorCode code = ErrorCode::kUnknown;
  int http_status = 0;  // HTTP status of the response, 0 when no response was involved
  std::string message;  // `Status.message`, or a local description
  std::vector<ErrorCause> causes;
  std::optional<std::chrono::seconds> retry_after;  // `details.retryAfterSeconds` / Retry-After

  Error() = default;
  Error(ErrorCode error_code, std::string error_message, int status = 0)
      : code(error_code), http_status(status), message(std::move(error_message)) {}

  // One line for logs and test failures, e.g.
  //   NotFound (404): pods "x" not found
  //   TooManyRequests (429): Cannot evict pod [DisruptionBudget: needs 2] (retry after 10s)
  //   Invalid: spec.nodeName: Required value
  // " (<http_status>)" appears only when http_status is non-zero; the cause list (each as
  // "field: message", or "reason: message" when there is no field) and the retry hint only when
  // present.
  [[nodiscard]] std::string describe() const;

  friend bool operator==(const Error&, const Error&) = default;
};

// A guarded write lost a race: the object changed since it was read (a resourceVersion
// precondition, 409) or a JSON patch `test` of what was read failed (422). Look again shortly.
[[nodiscard]] inline bool is_write_conflict(const Error& error) noexcept {
  return error.code == ErrorCode::kConflict || error.code == ErrorCode::kInvalid;
}

// The object asked for does not exist (or its API is not served): the one test for a gone
// object, so that every caller treats "already gone" alike.
[[nodiscard]] inline bool is_not_found(const Error& error) noexcept {
  return error.code == ErrorCode::kNotFound;
}

}  // namespace nmo
