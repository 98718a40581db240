// Fuzzes LineSplitter with arbitrary bytes cut into arbitrary pieces (a watch stream's body as a
// hostile or broken server could send it) and checks it against a direct split of the whole
// input: same lines, same remainder, overflow reported exactly when the tail is too long.
//
// Input layout: byte 0 = line limit (0..255), byte 1 = piece-size seed, the rest = the stream.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "http/internal/line_splitter.h"

namespace {

// The lines of `text` as LineStream promises them: cut at '\n', one '\r' before it dropped.
std::vector<std::string> reference_lines(std::string_view text, std::string_view& rest) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t newline = text.find('\n'); newline != std::string_view::npos;
       newline = text.find('\n', start)) {
    std::string_view line = text.substr(start, newline - start);
    if (line.ends_with('\r')) {
      line.remove_suffix(1);
    }
    lines.emplace_back(line);
    start = newline + 1;
  }
  rest = text.substr(start);
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) {
    return 0;
  }
  const std::size_t limit = data[0];
  std::size_t seed = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);

  nmo::http::internal::LineSplitter splitter(limit);
  std::vector<std::string> lines;
  for (std::size_t offset = 0; offset < text.size();) {
    seed = (seed * 131 + 7) % 251;
    const std::size_t piece = 1 + seed % 17;
    splitter.append(text.substr(offset, piece));
    offset += piece;
    while (std::optional<std::string> line = splitter.next_line()) {
      lines.push_back(*std::move(line));
    }
  }

  std::string_view expected_rest;
  const std::vector<std::string> expected = reference_lines(text, expected_rest);
  NMO_CHECK(lines == expected, "lines differ from a direct split");
  NMO_CHECK(splitter.buffered_bytes() == expected_rest.size(), "wrong remainder size");
  NMO_CHECK(splitter.overflowed() == (expected_rest.size() > limit), "wrong overflow verdict");
  NMO_CHECK(splitter.take_remaining() == expected_rest, "wrong remainder");
  NMO_CHECK(splitter.buffered_bytes() == 0, "take_remaining() left bytes behind");
  return 0;
}
