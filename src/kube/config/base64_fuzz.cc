// Fuzz target: base64_decode() on arbitrary bytes. Besides not crashing, checks the codec's
// contract both ways: whatever decodes re-encodes to the input without its line breaks, and
// every byte string survives an encode/decode round trip.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/check.h"
#include "kube/config/base64.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (const std::optional<std::string> decoded = nmo::kube::base64_decode(input)) {
    std::string compact;
    for (const char c : input) {
      if (c != '\r' && c != '\n') {
        compact.push_back(c);
      }
    }
    NMO_CHECK(nmo::kube::base64_encode(*decoded) == compact, "decode/encode changed the input");
  }
  const std::optional<std::string> round_trip =
      nmo::kube::base64_decode(nmo::kube::base64_encode(input));
  NMO_CHECK(round_trip.has_value() && *round_trip == input, "encode/decode changed the bytes");
  return 0;
}
