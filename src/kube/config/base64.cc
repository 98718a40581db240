#include "kube/config/base64.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace nmo::kube {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Marks a byte that is not in the alphabet.
constexpr std::uint8_t kInvalid = 0xFF;

constexpr std::array<std::uint8_t, 256> make_decode_table() {
  std::array<std::uint8_t, 256> table{};
  for (auto& entry : table) {
    entry = kInvalid;
  }
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
  }
  return table;
}

constexpr std::array<std::uint8_t, 256> kDecode = make_decode_table();

}  // namespace

std::optional<std::string> base64_decode(std::string_view text) {
  // Drop the line breaks first, so the quartet logic below sees one continuous string.
  std::string compact;
  compact.reserve(text.size());
  for (const char c : text) {
    if (c != '\r' && c != '\n') {
      compact.push_back(c);
    }
  }
  if (compact.size() % 4 != 0) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(compact.size() / 4 * 3);
  for (std::size_t i = 0; i < compact.size(); i += 4) {
    const bool last = i + 4 == compact.size();
    // Padding may only appear in the last quartet, as "x==" or "xx=" at its end.
    std::size_t padding = 0;
    if (last && compact[i + 3] == '=') {
      padding = compact[i + 2] == '=' ? 2 : 1;
    }
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      std::uint32_t sextet = 0;
      if (j < 4 - padding) {
        const std::uint8_t value = kDecode[static_cast<unsigned char>(compact[i + j])];
        if (value == kInvalid) {
          return std::nullopt;
        }
        sextet = value;
      }
      group = (group << 6U) | sextet;
    }
    // 1 padding char leaves 2 bits unused, 2 leave 4: they must be zero (canonical form).
    if ((padding == 1 && (group & 0xFFU) != 0) || (padding == 2 && (group & 0xFFFFU) != 0)) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>((group >> 16U) & 0xFFU));
    if (padding < 2) {
      out.push_back(static_cast<char>((group >> 8U) & 0xFFU));
    }
    if (padding < 1) {
      out.push_back(static_cast<char>(group & 0xFFU));
    }
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = bytes.size() - i < 3 ? bytes.size() - i : 3;
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      const std::uint32_t byte = j < n ? static_cast<unsigned char>(bytes[i + j]) : 0U;
      group = (group << 8U) | byte;
    }
    out.push_back(kAlphabet[(group >> 18U) & 0x3FU]);
    out.push_back(kAlphabet[(group >> 12U) & 0x3FU]);
    out.push_back(n > 1 ? kAlphabet[(group >> 6U) & 0x3FU] : '=');
    out.push_back(n > 2 ? kAlphabet[group & 0x3FU] : '=');
  }
  return out;
}

}  // namespace nmo::kube
