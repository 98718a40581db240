#include "kube/api/internal/printable.h"

namespace nmo::kube::internal {
namespace {

bool is_ascii_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

std::string printable_prefix(std::string_view text, std::size_t max_bytes) {
  const std::string_view head = text.substr(0, max_bytes);
  std::string out;
  out.reserve(head.size() + 3);
  for (const char c : head) {
    if (is_ascii_space(c)) {
      if (out.empty() || out.back() != ' ') {
        out += ' ';
      }
    } else if (c < ' ' || c > '~') {  // control bytes, DEL and every non-ASCII byte
      out += '?';
    } else {
      out += c;
    }
  }
  if (text.size() > max_bytes) {
    out += "...";
  }
  return out;
}

}  // namespace nmo::kube::internal
