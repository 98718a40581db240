#include "base/error.h"

#include <array>
#include <utility>

namespace nmo {
namespace {

constexpr std::array kAllCodes = {
    ErrorCode::kNotFound,        ErrorCode::kAlreadyExists, ErrorCode::kConflict,
    ErrorCode::kTooManyRequests, ErrorCode::kGone,          ErrorCode::kForbidden,
    ErrorCode::kUnauthorized,    ErrorCode::kInvalid,       ErrorCode::kBadRequest,
    ErrorCode::kUnavailable,     ErrorCode::kTimeout,       ErrorCode::kInternal,
    ErrorCode::kCancelled,       ErrorCode::kExpired,       ErrorCode::kUnknown,
};

}  // namespace

std::string_view to_string(ErrorCode code) noexcept {
  // No default: -Wswitch flags a new enumerator that is missing here.
  switch (code) {
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kAlreadyExists:
      return "AlreadyExists";
    case ErrorCode::kConflict:
      return "Conflict";
    case ErrorCode::kTooManyRequests:
      return "TooManyRequests";
    case ErrorCode::kGone:
      return "Gone";
    case ErrorCode::kForbidden:
      return "Forbidden";
    case ErrorCode::kUnauthorized:
      return "Unauthorized";
    case ErrorCode::kInvalid:
      return "Invalid";
    case ErrorCode::kBadRequest:
      return "BadRequest";
    case ErrorCode::kUnavailable:
      return "ServiceUnavailable";
    case ErrorCode::kTimeout:
      return "Timeout";
    case ErrorCode::kInternal:
      return "InternalError";
    case ErrorCode::kCancelled:
      return "Cancelled";
    case ErrorCode::kExpired:
      return "Expired";
    case ErrorCode::kUnknown:
      return "Unknown";
  }
  return "Unknown";  // an out-of-range value cast into ErrorCode
}

std::optional<ErrorCode> error_code_from_reason(std::string_view reason) noexcept {
  if (reason == "ServerTimeout") {
    return ErrorCode::kTimeout;  // 500 with a retry hint; the request may be retried
  }
  for (const ErrorCode code : kAllCodes) {
    if (code != ErrorCode::kUnknown && to_string(code) == reason) {
      return code;
    }
  }
  return std::nullopt;
}

std::string Error::describe() const {
  std::string out(to_string(code));
  if (http_status != 0) {
    out += " (";
    out += std::to_string(http_status);
    out += ')';
  }
  if (!message.empty()) {
    out += ": ";
    out += message;
  }
  if (!causes.empty()) {
    out += " [";
    bool first = true;
    for (const ErrorCause& cause : causes) {
      if (!first) {
        out += "; ";
      }
      first = false;
      const std::string& label = cause.field.empty() ? cause.reason : cause.field;
      if (!label.empty()) {
        out += label;
        out += ": ";
      }
      out += cause.message;
    }
    out += ']';
  }
  if (retry_after.has_value()) {
    out += " (retry after ";
    out += std::to_string(retry_after->count());
    out += "s)";
  }
  return out;
}

}  // namespace nmo
