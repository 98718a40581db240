#include "kube/api/duration.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ParseDurationTest, AcceptsGoDurations) {
  const std::vector<std::pair<std::string, nanoseconds>> cases = {
      {"90m", minutes{90}},
      {"1h30m", minutes{90}},
      {"2h", hours{2}},
      {"45s", seconds{45}},
      {"1.5h", minutes{90}},
      {"0.5s", milliseconds{500}},
      {"300ms", milliseconds{300}},
      {"1h2m3s4ms5us6ns",
       hours{1} + minutes{2} + seconds{3} + milliseconds{4} + microseconds{5} + nanoseconds{6}},
      {"10\u00b5s", microseconds{10}},  // U+00B5 MICRO SIGN
      {"10\u03bcs", microseconds{10}},  // U+03BC GREEK SMALL LETTER MU
      {"1.000000001s", seconds{1} + nanoseconds{1}},
      {"0s", nanoseconds{0}},
      {"2562047h47m16.854775807s", nanoseconds::max()},
  };
  for (const auto& [text, expected] : cases) {
    ASSERT_OK_AND_ASSIGN(const Duration parsed, parse_duration(text));
    EXPECT_EQ(parsed, expected) << text;
  }
}

TEST(ParseDurationTest, RejectsWithClearMessages) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", R"(invalid duration "": empty (write a number and a unit, e.g. "90m" or "2h"))"},
      {"-1m", R"(invalid duration "-1m": must not be negative)"},
      {"+1m", R"(invalid duration "+1m": must not have a sign)"},
      {"5", R"(invalid duration "5": missing unit after "5" (use h, m, s, ms, us or ns))"},
      {"1h30", R"(invalid duration "1h30": missing unit after "30" (use h, m, s, ms, us or ns))"},
      {"1d", R"(invalid duration "1d": unknown unit "d" (use h, m, s, ms, us or ns))"},
      {"90 m", R"(invalid duration "90 m": unknown unit " m" (use h, m, s, ms, us or ns))"},
      {"1H", R"(invalid duration "1H": unknown unit "H" (use h, m, s, ms, us or ns))"},
      {"h", R"(invalid duration "h": expected a number at offset 0)"},
      {".5h", R"(invalid duration ".5h": expected a number at offset 0)"},
      {"1.h", R"(invalid duration "1.h": expected a digit after '.' at offset 1)"},
      {"2562047h47m16.854775808s",
       R"(invalid duration "2562047h47m16.854775808s": out of range (the longest duration is )"
       "2562047h47m16.854775807s)"},
      {"9223372036854775808h",
       R"(invalid duration "9223372036854775808h": out of range (the longest duration is )"
       "2562047h47m16.854775807s)"},
      {"99999999999999999999ns",
       R"(invalid duration "99999999999999999999ns": out of range (the longest duration is )"
       "2562047h47m16.854775807s)"},
  };
  for (const auto& [text, message] : cases) {
    const Result<Duration> parsed = parse_duration(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalid);
    EXPECT_EQ(parsed.error().message, message);
  }
}

TEST(ParseDurationTest, QuotesLongOrBinaryInputPrintably) {
  const Result<Duration> parsed = parse_duration(std::string(100, '1') + "\n");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos);
  EXPECT_LT(parsed.error().message.size(), 200U);
}

TEST(FormatDurationTest, MatchesGoDurationString) {
  // Expected values from Go's time.Duration.String().
  const std::vector<std::pair<nanoseconds, std::string>> cases = {
      {nanoseconds{0}, "0s"},
      {nanoseconds{1}, "1ns"},
      {nanoseconds{1100}, "1.1\u00b5s"},
      {microseconds{10}, "10\u00b5s"},
      {milliseconds{300}, "300ms"},
      {microseconds{2200}, "2.2ms"},
      {seconds{1}, "1s"},
      {milliseconds{1500}, "1.5s"},
      {seconds{45}, "45s"},
      {seconds{90}, "1m30s"},
      {minutes{90}, "1h30m0s"},
      {hours{2}, "2h0m0s"},
      {hours{1} + seconds{1}, "1h0m1s"},
      {hours{100}, "100h0m0s"},
      {seconds{1} + nanoseconds{1}, "1.000000001s"},
      {-minutes{2}, "-2m0s"},
      {-nanoseconds{1}, "-1ns"},
      {nanoseconds::max(), "2562047h47m16.854775807s"},
      {nanoseconds::min(), "-2562047h47m16.854775808s"},
  };
  for (const auto& [duration, text] : cases) {
    EXPECT_EQ(format_duration(duration), text) << duration.count();
  }
}

TEST(FormatDurationTest, RoundTripsThroughParse) {
  for (const char* text : {"1h30m0s", "2h0m0s", "45s", "1.5s", "300ms", "1.1\u00b5s", "1ns"}) {
    ASSERT_OK_AND_ASSIGN(const Duration parsed, parse_duration(text));
    EXPECT_EQ(format_duration(parsed), text);
  }
}

}  // namespace
}  // namespace nmo::kube
