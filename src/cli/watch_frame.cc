#include "cli/watch_frame.h"

#include <algorithm>

#include <fmt/format.h>

#include "cli/text.h"

namespace nmo::cli {

std::vector<std::string> fit_to_terminal(std::vector<std::string> lines, std::size_t columns,
                                         std::size_t rows) {
  if (rows > 2 && lines.size() >= rows) {
    const std::size_t more = lines.size() - (rows - 2);
    lines.resize(rows - 2);
    lines.push_back(fmt::format("... and {} more lines (a taller terminal shows them)", more));
  }
  if (columns > 1) {
    for (auto& line : lines) line = cut_to_columns(line, columns - 1);
  }
  return lines;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace nmo::cli
