// One drawing of an object that `watch`, `start --wait` and `plan-status --watch` follow, and how
// it fits a terminal that is redrawn in place (cmd/kubectl-maintenance/follow.h draws it).
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nmo::cli {

// One drawing of the followed object.
struct Frame {
  std::vector<std::string> lines;  // without line ends
  // What the drawing says, without what only moves with the clock: when it is the same as the
  // last one, nothing is printed to a pipe or as JSON (a terminal is redrawn all the same).
  std::string signature;
};

// `lines` as they fit on a terminal of `columns` x `rows` (0 when unknown): each cut to one
// column less than its width, so none wraps, and no more than its height less two, the last
// saying how many more there were, as the cursor cannot go back up into the scrollback; either
// way the count of lines to go back up over stays right.
[[nodiscard]] std::vector<std::string> fit_to_terminal(std::vector<std::string> lines,
                                                       std::size_t columns, std::size_t rows);

// The lines of `text`, without their ends ("a\nb\n" is {"a", "b"}; "a\nb" too).
[[nodiscard]] std::vector<std::string> split_lines(std::string_view text);

}  // namespace nmo::cli
