// Fuzz target: parse_duration() (spec.drainTimeout, for one) on arbitrary bytes, and
// format_duration() on arbitrary 64-bit values. Checks both directions of Go's duration syntax:
//   - whatever parses is non-negative, and format_duration() of it parses back to the same value;
//   - a rejection is ErrorCode::kInvalid with a message that starts with `invalid duration "`;
//   - format_duration() of any non-negative count (the first 8 bytes) parses back to that count,
//     and of a negative one starts with '-' (which parse_duration() refuses).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/check.h"
#include "kube/api/duration.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nmo::Result<nmo::kube::Duration> parsed = nmo::kube::parse_duration(text);
  if (parsed.has_value()) {
    NMO_CHECK(parsed->count() >= 0, "a parsed duration is never negative");
    const std::string formatted = nmo::kube::format_duration(*parsed);
    const nmo::Result<nmo::kube::Duration> again = nmo::kube::parse_duration(formatted);
    NMO_CHECK(again.has_value() && *again == *parsed, "round trip failed for " + formatted);
  } else {
    NMO_CHECK(parsed.error().code == nmo::ErrorCode::kInvalid, parsed.error().describe());
    NMO_CHECK(parsed.error().message.starts_with("invalid duration \""), parsed.error().message);
  }

  if (size >= sizeof(std::int64_t)) {
    std::int64_t count = 0;
    std::memcpy(&count, data, sizeof(count));
    const std::string formatted = nmo::kube::format_duration(nmo::kube::Duration(count));
    if (count < 0) {
      NMO_CHECK(formatted.starts_with('-'), "a negative duration prints its sign: " + formatted);
    } else {
      const nmo::Result<nmo::kube::Duration> again = nmo::kube::parse_duration(formatted);
      NMO_CHECK(again.has_value() && again->count() == count,
                "format_duration() does not parse back: " + formatted);
    }
  }
  return 0;
}
