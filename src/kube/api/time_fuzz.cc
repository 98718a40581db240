// Fuzz target: parse_time on arbitrary bytes. Whatever parses must format back to an instant
// that parses to the same value (MicroTime), or to the same second (Time).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "kube/api/time.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nmo::Result<nmo::kube::Time> parsed = nmo::kube::parse_time(text);
  if (!parsed.has_value()) {
    NMO_CHECK(parsed.error().code == nmo::ErrorCode::kInvalid, parsed.error().describe());
    return 0;
  }
  const std::string micro = nmo::kube::format_micro_time(*parsed);
  const nmo::Result<nmo::kube::Time> micro_again = nmo::kube::parse_time(micro);
  NMO_CHECK(micro_again.has_value() && *micro_again == *parsed,
            "MicroTime round trip failed for " + micro);
  const std::string seconds = nmo::kube::format_time(*parsed);
  const nmo::Result<nmo::kube::Time> seconds_again = nmo::kube::parse_time(seconds);
  NMO_CHECK(seconds_again.has_value() &&
                *seconds_again == std::chrono::floor<std::chrono::seconds>(*parsed),
            "Time round trip failed for " + seconds);
  return 0;
}
