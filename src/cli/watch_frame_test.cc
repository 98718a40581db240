#include "cli/watch_frame.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace nmo::cli {
namespace {

using Lines = std::vector<std::string>;

TEST(FitToTerminal, CutsEachLineOneColumnShortOfTheWidth) {
  EXPECT_EQ(fit_to_terminal({"abcdefgh", "abc", ""}, 5, 24), (Lines{"abcd", "abc", ""}));
}

TEST(FitToTerminal, KeepsTwoRowsFreeAndCountsWhatItLeftOut) {
  EXPECT_EQ(fit_to_terminal({"1", "2", "3", "4", "5"}, 80, 5),
            (Lines{"1", "2", "3", "... and 2 more lines (a taller terminal shows them)"}));
  // Fewer lines than rows: all of them.
  EXPECT_EQ(fit_to_terminal({"1", "2", "3", "4"}, 80, 5), (Lines{"1", "2", "3", "4"}));
  // The message is cut to the width like every line.
  EXPECT_EQ(fit_to_terminal({"1", "2", "3"}, 9, 3), (Lines{"1", "... and "}));
}

TEST(FitToTerminal, AnUnknownSizeLeavesTheLinesAlone) {
  EXPECT_EQ(fit_to_terminal({"abcdefgh", "2", "3"}, 0, 0), (Lines{"abcdefgh", "2", "3"}));
}

TEST(SplitLines, WithoutTheirEnds) {
  EXPECT_EQ(split_lines("a\nb\n"), (Lines{"a", "b"}));
  EXPECT_EQ(split_lines("a\n\nb"), (Lines{"a", "", "b"}));
  EXPECT_EQ(split_lines(""), Lines{});
}

}  // namespace
}  // namespace nmo::cli
