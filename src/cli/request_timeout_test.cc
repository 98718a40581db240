#include "cli/request_timeout.h"

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::cli {
namespace {

using std::chrono::milliseconds;

TEST(ParseRequestTimeout, ADurationOrWholeSeconds) {
  EXPECT_EQ(parse_request_timeout("30s").value(), milliseconds(30'000));
  EXPECT_EQ(parse_request_timeout("1m30s").value(), milliseconds(90'000));
  EXPECT_EQ(parse_request_timeout("250ms").value(), milliseconds(250));
  EXPECT_EQ(parse_request_timeout("15").value(), milliseconds(15'000));
}

TEST(ParseRequestTimeout, ZeroWaitsForAYear) {
  EXPECT_EQ(parse_request_timeout("0").value(), std::chrono::hours(24 * 365));
  EXPECT_EQ(parse_request_timeout("0s").value(), std::chrono::hours(24 * 365));
}

TEST(ParseRequestTimeout, AnythingElseIsInvalid) {
  const auto parsed = parse_request_timeout("soon");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(parsed.error().message, "invalid duration \"soon\": expected a number at offset 0");
  EXPECT_FALSE(parse_request_timeout(""));
}

}  // namespace
}  // namespace nmo::cli
