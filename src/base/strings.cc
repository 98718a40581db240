#include "base/strings.h"

#include <cstddef>

namespace nmo {
namespace {

constexpr std::string_view kAsciiWhitespace = " \t\n\v\f\r";

bool is_ascii_space(char c) noexcept { return kAsciiWhitespace.find(c) != std::string_view::npos; }

}  // namespace

std::string printable_prefix(std::string_view text, std::size_t max_bytes) {
  const std::string_view head = text.substr(0, max_bytes);
  std::string out;
  out.reserve(head.size() + 3);
  for (const char c : head) {
    if (is_ascii_space(c)) {
      if (out.empty() || out.back() != ' ') out += ' ';
    } else if (c < ' ' || c > '~') {  // control bytes, DEL and every non-ASCII byte
      out += '?';
    } else {
      out += c;
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

std::string_view trim(std::string_view text) noexcept {
  const std::size_t first = text.find_first_not_of(kAsciiWhitespace);
  if (first == std::string_view::npos) {
    return text.substr(text.size());  // all whitespace: an empty view at the end of `text`
  }
  const std::size_t last = text.find_last_not_of(kAsciiWhitespace);
  return text.substr(first, last - first + 1);
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      return pieces;
    }
    pieces.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string quoted(std::string_view text, std::size_t max_bytes) {
  return "\"" + printable_prefix(text, max_bytes) + "\"";
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

}  // namespace nmo
