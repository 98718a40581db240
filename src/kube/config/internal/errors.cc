#include "kube/config/internal/errors.h"

#include <utility>

namespace nmo::kube::internal {

std::string quote(std::string_view text) {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out.push_back(kHex[byte >> 4U]);
      out.push_back(kHex[byte & 0xFU]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

Error with_prefix(Error error, std::string_view prefix) {
  std::string message(prefix);
  message += ": ";
  message += error.message;
  error.message = std::move(message);
  return error;
}

}  // namespace nmo::kube::internal
