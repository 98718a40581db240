#include "operator/gates/internal/hashed_name.h"

#include "base/check.h"

namespace nmo::op::internal {

std::uint64_t fnv1a64(std::string_view text) noexcept {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string fit_name(std::string_view prefix, std::string_view name, std::size_t max_length) {
  constexpr std::size_t kHashDigits = 16;
  NMO_CHECK(max_length > prefix.size() + kHashDigits + 1, "name limit too small for a hash");
  if (prefix.size() + name.size() <= max_length) {
    std::string fitted(prefix);
    fitted += name;
    return fitted;
  }
  std::string_view kept = name.substr(0, max_length - prefix.size() - kHashDigits - 1);
  while (!kept.empty() && (kept.back() == '-' || kept.back() == '.')) kept.remove_suffix(1);
  std::string fitted(prefix);
  fitted += kept;
  if (!kept.empty()) fitted += '-';
  constexpr std::string_view kHex = "0123456789abcdef";
  const std::uint64_t hash = fnv1a64(name);
  for (int shift = 60; shift >= 0; shift -= 4) {
    fitted += kHex[static_cast<std::size_t>((hash >> shift) & 0xfU)];
  }
  return fitted;
}

}  // namespace nmo::op::internal
