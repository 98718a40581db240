// Fuzz target: error_from_response with an arbitrary HTTP status, Retry-After and body.
// Input: a first line "<status>[ <retry-after seconds>]" (digits; anything else gives 500 and no
// header), then the body. Must never crash or throw, and must keep the given HTTP status.
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/check.h"
#include "kube/api/status.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  const std::string_view head = input.substr(0, newline);
  const std::string_view body =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  int status = 500;
  std::optional<std::chrono::seconds> retry_after;
  const char* const end = head.data() + head.size();
  int parsed_status = 0;
  const auto [after_status, status_error] = std::from_chars(head.data(), end, parsed_status);
  if (status_error == std::errc()) {
    status = parsed_status;
    std::int64_t seconds = 0;
    if (after_status != end && *after_status == ' ' &&
        std::from_chars(after_status + 1, end, seconds).ec == std::errc()) {
      retry_after = std::chrono::seconds{seconds};
    }
  }

  const nmo::Error error = nmo::kube::error_from_response(status, body, retry_after);
  NMO_CHECK(error.http_status == status, "the HTTP status must be kept");
  NMO_CHECK(!error.message.empty(), "an error always explains itself");
  NMO_CHECK(error.retry_after.has_value() || !retry_after.has_value(),
            "the Retry-After header is a fallback, never dropped");
  (void)error.describe();
  for (const nmo::ErrorCause& cause : error.causes) {
    (void)nmo::kube::find_cause(error, cause.reason);
  }
  return 0;
}
