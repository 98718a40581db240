#include "kube/api/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include "base/strings.h"
#include "kube/api/internal/json_parse.h"

namespace nmo::kube {
namespace {

// How much of a non-Status body the message quotes.
constexpr std::size_t kBodyQuoteLimit = 200;

// The string at `key`, or "" when absent or not a string: an error report is decoded leniently,
// since a half-readable Status still beats none.
std::string string_or_empty(const boost::json::object& object, std::string_view key) {
  const boost::json::value* field = object.if_contains(key);
  const boost::json::string* text = field != nullptr ? field->if_string() : nullptr;
  return text != nullptr ? std::string(text->data(), text->size()) : std::string();
}

// The integer at `key`, or 0 when absent, not an integer or outside [0, max].
std::int64_t int_or_zero(const boost::json::object& object, std::string_view key,
                         std::int64_t max) {
  const boost::json::value* field = object.if_contains(key);
  const std::int64_t* number = field != nullptr ? field->if_int64() : nullptr;
  return number != nullptr && *number >= 0 && *number <= max ? *number : 0;
}

bool is_status(const boost::json::value& value) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return false;
  }
  const boost::json::value* kind = object->if_contains("kind");
  return kind != nullptr && kind->is_string() && kind->get_string() == "Status";
}

// Builds the Error from a Status object; `response_status` is the HTTP status of the response, or
// std::nullopt for a watch event, where the Status's own code stands in.
Error decode_status(const boost::json::object& status, std::optional<int> response_status) {
  const int http_status =
      response_status.value_or(static_cast<int>(int_or_zero(status, "code", 999)));
  const std::string reason = string_or_empty(status, "reason");
  Error error(error_code_from_reason(reason).value_or(error_code_from_http_status(http_status)),
              string_or_empty(status, "message"), http_status);
  if (error.message.empty()) {
    error.message = "the server sent a Status without a message";
  }
  const boost::json::value* details_value = status.if_contains("details");
  const boost::json::object* details =
      details_value != nullptr ? details_value->if_object() : nullptr;
  if (details == nullptr) {
    return error;
  }
  const boost::json::value* causes_value = details->if_contains("causes");
  if (const boost::json::array* causes =
          causes_value != nullptr ? causes_value->if_array() : nullptr) {
    error.causes.reserve(causes->size());
    for (const boost::json::value& entry : *causes) {
      if (const boost::json::object* cause = entry.if_object()) {
        error.causes.push_back({string_or_empty(*cause, "reason"),
                                string_or_empty(*cause, "message"),
                                string_or_empty(*cause, "field")});
      }
    }
  }
  // retryAfterSeconds is an int32 in metav1.StatusDetails.
  const std::int64_t retry_after = int_or_zero(*details, "retryAfterSeconds", INT32_MAX);
  if (retry_after > 0) {
    error.retry_after = std::chrono::seconds{retry_after};
  }
  return error;
}

}  // namespace

ErrorCode error_code_from_http_status(int http_status) noexcept {
  switch (http_status) {
    case 400:
    case 405:
    case 406:
    case 413:
    case 415:
      return ErrorCode::kBadRequest;
    case 401:
      return ErrorCode::kUnauthorized;
    case 403:
      return ErrorCode::kForbidden;
    case 404:
      return ErrorCode::kNotFound;
    case 408:
    case 504:
      return ErrorCode::kTimeout;
    case 409:
      return ErrorCode::kConflict;
    case 410:
      return ErrorCode::kGone;
    case 422:
      return ErrorCode::kInvalid;
    case 429:
      return ErrorCode::kTooManyRequests;
    case 502:
    case 503:
      return ErrorCode::kUnavailable;
    default:
      return http_status >= 500 && http_status <= 599 ? ErrorCode::kInternal : ErrorCode::kUnknown;
  }
}

Error error_from_response(int http_status, std::string_view body,
                          std::optional<std::chrono::seconds> retry_after_header) {
  const std::string_view trimmed = trim(body);
  const std::string prefix = "the server answered " + std::to_string(http_status);
  Error error;
  if (trimmed.empty()) {
    error = Error(error_code_from_http_status(http_status), prefix + " with an empty body",
                  http_status);
  } else {
    // A Status body is a few hundred bytes: parse it from a stack buffer when it fits.
    unsigned char buffer[4096];
    boost::json::monotonic_resource arena(buffer, sizeof(buffer));
    Result<boost::json::value> parsed =
        trimmed.front() == '{' ? internal::parse_json(trimmed, boost::json::storage_ptr(&arena))
                               : Result<boost::json::value>(Error(ErrorCode::kInvalid, "not JSON"));
    if (parsed.has_value() && is_status(*parsed)) {
      error = decode_status(parsed->get_object(), http_status);
    } else {
      error =
          Error(error_code_from_http_status(http_status),
                prefix + " with a non-Status body: " + printable_prefix(trimmed, kBodyQuoteLimit),
                http_status);
    }
  }
  if (!error.retry_after.has_value()) {
    error.retry_after = retry_after_header;
  }
  return error;
}

Error error_from_status(const boost::json::value& status) {
  if (!is_status(status)) {
    return {ErrorCode::kUnknown, "expected a Status object"};
  }
  return decode_status(status.get_object(), std::nullopt);
}

std::optional<ErrorCause> find_cause(const Error& error, std::string_view reason) {
  for (const ErrorCause& cause : error.causes) {
    if (cause.reason == reason) {
      return cause;
    }
  }
  return std::nullopt;
}

}  // namespace nmo::kube
