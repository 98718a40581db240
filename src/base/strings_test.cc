#include "base/strings.h"

#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo {
namespace {

using ::testing::ElementsAre;

TEST(TrimTest, RemovesAsciiWhitespaceBothEnds) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\v\fx"), "x");
  EXPECT_EQ(trim("x"), "x");
}

TEST(TrimTest, EmptyAndAllWhitespace) {
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t\n "), "");
}

TEST(TrimTest, KeepsNonAsciiBytes) {
  // U+00A0 (no-break space) is not ASCII whitespace and must survive.
  EXPECT_EQ(trim("\xc2\xa0x\xc2\xa0"), "\xc2\xa0x\xc2\xa0");
}

TEST(TrimTest, ResultViewsTheInput) {
  const std::string text = "  token ";
  const std::string_view trimmed = trim(text);
  EXPECT_EQ(trimmed.data(), text.data() + 2);
  EXPECT_EQ(trimmed.size(), 5U);
}

TEST(SplitTest, SplitsOnSeparator) {
  EXPECT_THAT(split("a,b,c", ','), ElementsAre("a", "b", "c"));
  EXPECT_THAT(split("key=value", '='), ElementsAre("key", "value"));
}

TEST(SplitTest, KeepsEmptyPieces) {
  EXPECT_THAT(split("a,,b", ','), ElementsAre("a", "", "b"));
  EXPECT_THAT(split(",", ','), ElementsAre("", ""));
  EXPECT_THAT(split("a,", ','), ElementsAre("a", ""));
}

TEST(SplitTest, NoSeparatorGivesWholeInput) {
  EXPECT_THAT(split("abc", ','), ElementsAre("abc"));
  EXPECT_THAT(split("", ','), ElementsAre(""));
}

TEST(SplitTest, PiecesViewTheInput) {
  const std::string text = "x/y";
  const auto pieces = split(text, '/');
  ASSERT_EQ(pieces.size(), 2U);
  EXPECT_EQ(pieces[1].data(), text.data() + 2);
}

TEST(QuotedTest, QuotesThePrintablePrefix) {
  EXPECT_EQ(quoted("1d", 64), "\"1d\"");
  EXPECT_EQ(quoted("a\nb-long", 4), "\"a b-...\"");
}

TEST(JoinTest, SeparatorOnlyBetweenParts) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "", "b"}, "; "), "a; ; b");
}

TEST(PrintablePrefixTest, ShortAsciiUnchanged) {
  EXPECT_EQ(printable_prefix("{\"kind\":\"Status\"}", 200), "{\"kind\":\"Status\"}");
  EXPECT_EQ(printable_prefix("", 10), "");
}

TEST(PrintablePrefixTest, CollapsesWhitespaceAndReplacesControlBytes) {
  EXPECT_EQ(printable_prefix("<h1>\r\n  Bad\tGateway</h1>", 200), "<h1> Bad Gateway</h1>");
  EXPECT_EQ(printable_prefix(std::string("a\0b\x7f"
                                         "c\xc3\xa9",
                                         7),
                             200),
            "a?b?c??");
}

TEST(PrintablePrefixTest, TruncatesWithEllipsis) {
  EXPECT_EQ(printable_prefix("<h1>\r\nBad Gateway", 8), "<h1> Ba...");
  EXPECT_EQ(printable_prefix("abcdef", 6), "abcdef");
  EXPECT_EQ(printable_prefix("abcdefg", 6), "abcdef...");
}

}  // namespace
}  // namespace nmo
