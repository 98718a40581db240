#include "http/internal/line_splitter.h"

#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo::http::internal {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> drain(LineSplitter& splitter) {
  std::vector<std::string> lines;
  while (std::optional<std::string> line = splitter.next_line()) {
    lines.push_back(*line);
  }
  return lines;
}

TEST(LineSplitterTest, SeveralLinesInOnePiece) {
  LineSplitter splitter(1024);
  splitter.append("{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
  EXPECT_THAT(drain(splitter), ElementsAre("{\"a\":1}", "{\"b\":2}", "{\"c\":3}"));
  EXPECT_EQ(splitter.buffered_bytes(), 0U);
}

TEST(LineSplitterTest, LineSplitAcrossPieces) {
  LineSplitter splitter(1024);
  splitter.append("{\"a\"");
  EXPECT_EQ(splitter.next_line(), std::nullopt);
  splitter.append(":");
  EXPECT_EQ(splitter.next_line(), std::nullopt);
  splitter.append("1}\n{\"b\":");
  EXPECT_EQ(splitter.next_line(), "{\"a\":1}");
  EXPECT_EQ(splitter.next_line(), std::nullopt);
  splitter.append("2}\n");
  EXPECT_EQ(splitter.next_line(), "{\"b\":2}");
}

TEST(LineSplitterTest, CrLfAndEmptyLines) {
  LineSplitter splitter(1024);
  splitter.append("one\r\n\ntwo\r");
  splitter.append("\n\r\n");
  EXPECT_THAT(drain(splitter), ElementsAre("one", "", "two", ""));
}

TEST(LineSplitterTest, CarriageReturnInsideALineIsKept) {
  LineSplitter splitter(1024);
  splitter.append("a\rb\n");
  EXPECT_EQ(splitter.next_line(), "a\rb");
}

TEST(LineSplitterTest, TakeRemainingReturnsTheUnterminatedTail) {
  LineSplitter splitter(1024);
  splitter.append("first\nlast without newline");
  EXPECT_EQ(splitter.next_line(), "first");
  EXPECT_EQ(splitter.next_line(), std::nullopt);
  EXPECT_EQ(splitter.buffered_bytes(), 20U);
  EXPECT_EQ(splitter.take_remaining(), "last without newline");
  EXPECT_EQ(splitter.buffered_bytes(), 0U);
  EXPECT_EQ(splitter.take_remaining(), "");
}

TEST(LineSplitterTest, TakeRemainingIncludesLinesNotYetReturned) {
  LineSplitter splitter(1024);
  splitter.append("a\nb\r\nc");
  EXPECT_EQ(splitter.next_line(), "a");
  EXPECT_EQ(splitter.take_remaining(), "b\r\nc");
}

TEST(LineSplitterTest, OverflowWhenAPartialLineExceedsTheLimit) {
  LineSplitter splitter(8);
  splitter.append("12345678");
  EXPECT_EQ(splitter.next_line(), std::nullopt);
  EXPECT_FALSE(splitter.overflowed());
  splitter.append("9");
  EXPECT_EQ(splitter.next_line(), std::nullopt);
  EXPECT_TRUE(splitter.overflowed());
}

TEST(LineSplitterTest, CompleteLinesNeverOverflow) {
  LineSplitter splitter(4);
  splitter.append("a long complete line\n");
  EXPECT_EQ(splitter.next_line(), "a long complete line");
  EXPECT_FALSE(splitter.overflowed());
}

TEST(LineSplitterTest, ManySmallPiecesKeepOrder) {
  LineSplitter splitter(1024);
  const std::string text = "alpha\nbeta\ngamma\ndelta\n";
  std::vector<std::string> lines;
  for (const char c : text) {
    splitter.append(std::string(1, c));
    while (std::optional<std::string> line = splitter.next_line()) {
      lines.push_back(*line);
    }
  }
  EXPECT_THAT(lines, ElementsAre("alpha", "beta", "gamma", "delta"));
  EXPECT_EQ(splitter.buffered_bytes(), 0U);
}

}  // namespace
}  // namespace nmo::http::internal
