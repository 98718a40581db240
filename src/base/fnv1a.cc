#include "base/fnv1a.h"

namespace nmo {

std::uint64_t fnv1a64(std::string_view text) noexcept {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string fnv1a64_hex(std::string_view text) {
  constexpr std::string_view kHex = "0123456789abcdef";
  const std::uint64_t hash = fnv1a64(text);
  std::string digits;
  digits.reserve(16);
  for (int shift = 60; shift >= 0; shift -= 4) {
    digits += kHex[static_cast<std::size_t>((hash >> shift) & 0xfU)];
  }
  return digits;
}

}  // namespace nmo
