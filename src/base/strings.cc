#include "base/strings.h"

#include <cstddef>

namespace nmo {
namespace {

constexpr std::string_view kAsciiWhitespace = " \t\n\v\f\r";

}  // namespace

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

}  // namespace nmo
