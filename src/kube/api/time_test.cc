#include "kube/api/time.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::year;

constexpr Time kNov30{sys_days{year{2026} / 11 / 30} + hours{10}};

std::string error_of(std::string_view text) {
  const Result<Time> result = parse_time(text);
  if (result.has_value()) {
    return "parsed";
  }
  EXPECT_EQ(result.error().code, ErrorCode::kInvalid);
  return result.error().message;
}

TEST(ParseTimeTest, SecondsPrecisionUtc) {
  ASSERT_OK_AND_ASSIGN(const Time t, parse_time("2026-11-30T10:00:00Z"));
  EXPECT_EQ(t, kNov30);
}

TEST(ParseTimeTest, MicroTime) {
  ASSERT_OK_AND_ASSIGN(const Time t, parse_time("2026-11-30T10:00:00.123456Z"));
  EXPECT_EQ(t, kNov30 + microseconds{123456});
}

TEST(ParseTimeTest, ShortFractionsScaleUp) {
  ASSERT_OK_AND_ASSIGN(const Time one_digit, parse_time("2026-11-30T10:00:00.5Z"));
  EXPECT_EQ(one_digit, kNov30 + microseconds{500000});
  ASSERT_OK_AND_ASSIGN(const Time three_digits, parse_time("2026-11-30T10:00:00.012Z"));
  EXPECT_EQ(three_digits, kNov30 + microseconds{12000});
}

TEST(ParseTimeTest, NanosecondsAreTruncatedToMicroseconds) {
  ASSERT_OK_AND_ASSIGN(const Time t, parse_time("2026-11-30T10:00:00.123456789Z"));
  EXPECT_EQ(t, kNov30 + microseconds{123456});
}

TEST(ParseTimeTest, NumericOffsets) {
  ASSERT_OK_AND_ASSIGN(const Time plus, parse_time("2026-11-30T12:00:00+02:00"));
  EXPECT_EQ(plus, kNov30);
  ASSERT_OK_AND_ASSIGN(const Time minus, parse_time("2026-11-30T04:30:00-05:30"));
  EXPECT_EQ(minus, kNov30);
  ASSERT_OK_AND_ASSIGN(const Time zero, parse_time("2026-11-30T10:00:00-00:00"));
  EXPECT_EQ(zero, kNov30);
  // An offset may move the instant into the previous or next day, month and year.
  ASSERT_OK_AND_ASSIGN(const Time new_year, parse_time("2027-01-01T01:00:00+02:00"));
  EXPECT_EQ(new_year, sys_days{year{2026} / 12 / 31} + hours{23});
}

TEST(ParseTimeTest, LeapDays) {
  ASSERT_OK_AND_ASSIGN(const Time leap, parse_time("2024-02-29T00:00:00Z"));
  EXPECT_EQ(leap, Time{sys_days{year{2024} / 2 / 29}});
  ASSERT_OK_AND_ASSIGN(const Time century, parse_time("2000-02-29T00:00:00Z"));
  EXPECT_EQ(century, Time{sys_days{year{2000} / 2 / 29}});
  EXPECT_EQ(error_of("1900-02-29T00:00:00Z"),
            R"(invalid RFC 3339 time "1900-02-29T00:00:00Z": day 29 out of range for 1900-02)");
}

TEST(ParseTimeTest, EpochAndBefore) {
  ASSERT_OK_AND_ASSIGN(const Time epoch, parse_time("1970-01-01T00:00:00Z"));
  EXPECT_EQ(epoch.time_since_epoch().count(), 0);
  ASSERT_OK_AND_ASSIGN(const Time before, parse_time("1969-12-31T23:59:59.5Z"));
  EXPECT_EQ(before.time_since_epoch(), microseconds{-500000});
}

TEST(ParseTimeTest, RejectsOutOfRangeFields) {
  EXPECT_EQ(error_of("2026-13-01T00:00:00Z"),
            R"(invalid RFC 3339 time "2026-13-01T00:00:00Z": month 13 out of range)");
  EXPECT_EQ(error_of("2026-00-01T00:00:00Z"),
            R"(invalid RFC 3339 time "2026-00-01T00:00:00Z": month 00 out of range)");
  EXPECT_EQ(error_of("2026-02-30T00:00:00Z"),
            R"(invalid RFC 3339 time "2026-02-30T00:00:00Z": day 30 out of range for 2026-02)");
  EXPECT_EQ(error_of("2026-04-31T00:00:00Z"),
            R"(invalid RFC 3339 time "2026-04-31T00:00:00Z": day 31 out of range for 2026-04)");
  EXPECT_EQ(error_of("2026-01-00T00:00:00Z"),
            R"(invalid RFC 3339 time "2026-01-00T00:00:00Z": day 00 out of range for 2026-01)");
  EXPECT_EQ(error_of("2026-11-30T24:00:00Z"),
            R"(invalid RFC 3339 time "2026-11-30T24:00:00Z": hour 24 out of range)");
  EXPECT_EQ(error_of("2026-11-30T10:60:00Z"),
            R"(invalid RFC 3339 time "2026-11-30T10:60:00Z": minute 60 out of range)");
  EXPECT_EQ(error_of("2026-12-31T23:59:60Z"),
            R"(invalid RFC 3339 time "2026-12-31T23:59:60Z": second 60 out of range)");
  EXPECT_EQ(error_of("2026-11-30T10:00:00+24:00"),
            R"(invalid RFC 3339 time "2026-11-30T10:00:00+24:00": offset +24:00 out of range)");
  EXPECT_EQ(error_of("2026-11-30T10:00:00+02:60"),
            R"(invalid RFC 3339 time "2026-11-30T10:00:00+02:60": offset +02:60 out of range)");
}

TEST(ParseTimeTest, RejectsBadStructure) {
  EXPECT_EQ(error_of(""), R"(invalid RFC 3339 time "": expected a digit at offset 0)");
  EXPECT_EQ(error_of("2026-11-30 10:00:00Z"),
            R"(invalid RFC 3339 time "2026-11-30 10:00:00Z": expected 'T' at offset 10)");
  EXPECT_EQ(error_of("2026-11-30t10:00:00Z"),
            R"(invalid RFC 3339 time "2026-11-30t10:00:00Z": expected 'T' at offset 10)");
  EXPECT_EQ(error_of("2026-11-30"),
            R"(invalid RFC 3339 time "2026-11-30": expected 'T' at offset 10)");
  EXPECT_EQ(
      error_of("2026-11-30T10:00:00"),
      R"(invalid RFC 3339 time "2026-11-30T10:00:00": expected 'Z' or a numeric offset like +02:00 at offset 19)");
  EXPECT_EQ(
      error_of("2026-11-30T10:00:00z"),
      R"(invalid RFC 3339 time "2026-11-30T10:00:00z": expected 'Z' or a numeric offset like +02:00 at offset 19)");
  EXPECT_EQ(error_of("2026-11-30T10:00:00.Z"),
            R"(invalid RFC 3339 time "2026-11-30T10:00:00.Z": expected a digit at offset 20)");
  EXPECT_EQ(
      error_of("2026-11-30T10:00:00.1234567890Z"),
      R"(invalid RFC 3339 time "2026-11-30T10:00:00.1234567890Z": more than 9 fractional digits at offset 29)");
  EXPECT_EQ(error_of("2026-11-30T10:00:00+0200"),
            R"(invalid RFC 3339 time "2026-11-30T10:00:00+0200": expected ':' at offset 22)");
  EXPECT_EQ(
      error_of("2026-11-30T10:00:00Z "),
      R"(invalid RFC 3339 time "2026-11-30T10:00:00Z ": unexpected text after the time at offset 20)");
  EXPECT_EQ(error_of("26-11-30T10:00:00Z"),
            R"(invalid RFC 3339 time "26-11-30T10:00:00Z": expected a digit at offset 2)");
  EXPECT_EQ(error_of("2026-1-30T10:00:00Z"),
            R"(invalid RFC 3339 time "2026-1-30T10:00:00Z": expected a digit at offset 6)");
  EXPECT_EQ(error_of("garbage"),
            R"(invalid RFC 3339 time "garbage": expected a digit at offset 0)");
}

TEST(ParseTimeTest, RejectsInstantsOutsideFourDigitYears) {
  EXPECT_EQ(error_of("0000-01-01T00:30:00+01:00"),
            R"(invalid RFC 3339 time "0000-01-01T00:30:00+01:00": outside years 0000-9999 in UTC)");
  EXPECT_EQ(error_of("9999-12-31T23:30:00-01:00"),
            R"(invalid RFC 3339 time "9999-12-31T23:30:00-01:00": outside years 0000-9999 in UTC)");
  EXPECT_OK(parse_time("0000-01-01T00:00:00Z"));
  EXPECT_OK(parse_time("9999-12-31T23:59:59.999999Z"));
}

TEST(ParseTimeTest, QuotesInputPrintablyAndShort) {
  const std::string long_input = "2026-11-30T10:00:00Z" + std::string(100, 'x');
  EXPECT_EQ(error_of(long_input), "invalid RFC 3339 time \"2026-11-30T10:00:00Z" +
                                      std::string(44, 'x') +
                                      "...\": unexpected text after the time at offset 20");
  EXPECT_EQ(error_of(std::string_view("2026\n11\0", 8)),
            R"(invalid RFC 3339 time "2026 11?": expected '-' at offset 4)");
}

TEST(FormatTimeTest, SecondsPrecisionTruncates) {
  EXPECT_EQ(format_time(kNov30), "2026-11-30T10:00:00Z");
  EXPECT_EQ(format_time(kNov30 + microseconds{999999}), "2026-11-30T10:00:00Z");
  EXPECT_EQ(format_time(Time{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(format_time(Time{microseconds{-1}}), "1969-12-31T23:59:59Z");
}

TEST(FormatTimeTest, MicroTimeHasSixDigits) {
  EXPECT_EQ(format_micro_time(kNov30 + microseconds{123456}), "2026-11-30T10:00:00.123456Z");
  EXPECT_EQ(format_micro_time(kNov30 + microseconds{120}), "2026-11-30T10:00:00.000120Z");
  EXPECT_EQ(format_micro_time(kNov30), "2026-11-30T10:00:00.000000Z");
  EXPECT_EQ(format_micro_time(Time{microseconds{-1}}), "1969-12-31T23:59:59.999999Z");
}

TEST(FormatTimeTest, ClampsToFourDigitYears) {
  EXPECT_EQ(format_micro_time(Time::min()), "0000-01-01T00:00:00.000000Z");
  EXPECT_EQ(format_micro_time(Time::max()), "9999-12-31T23:59:59.999999Z");
  EXPECT_EQ(format_time(Time::max()), "9999-12-31T23:59:59Z");
}

TEST(FormatTimeTest, RoundTripsThroughParse) {
  for (const char* text : {"2026-11-30T10:00:00.123456Z", "0000-01-01T00:00:00.000000Z",
                           "2024-02-29T23:59:59.999999Z", "1969-07-20T20:17:40.000001Z"}) {
    ASSERT_OK_AND_ASSIGN(const Time t, parse_time(text));
    EXPECT_EQ(format_micro_time(t), text);
  }
  ASSERT_OK_AND_ASSIGN(const Time t, parse_time("2026-11-30T12:34:56+02:00"));
  EXPECT_EQ(format_time(t), "2026-11-30T10:34:56Z");
}

}  // namespace
}  // namespace nmo::kube
