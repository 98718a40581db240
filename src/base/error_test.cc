#include "base/error.h"

#include <chrono>
#include <optional>

#include <gtest/gtest.h>

namespace nmo {
namespace {

TEST(ErrorCodeTest, ToStringGivesKubernetesReasons) {
  EXPECT_EQ(to_string(ErrorCode::kNotFound), "NotFound");
  EXPECT_EQ(to_string(ErrorCode::kAlreadyExists), "AlreadyExists");
  EXPECT_EQ(to_string(ErrorCode::kConflict), "Conflict");
  EXPECT_EQ(to_string(ErrorCode::kTooManyRequests), "TooManyRequests");
  EXPECT_EQ(to_string(ErrorCode::kGone), "Gone");
  EXPECT_EQ(to_string(ErrorCode::kExpired), "Expired");
  EXPECT_EQ(to_string(ErrorCode::kForbidden), "Forbidden");
  EXPECT_EQ(to_string(ErrorCode::kUnauthorized), "Unauthorized");
  EXPECT_EQ(to_string(ErrorCode::kInvalid), "Invalid");
  EXPECT_EQ(to_string(ErrorCode::kBadRequest), "BadRequest");
  EXPECT_EQ(to_string(ErrorCode::kUnavailable), "ServiceUnavailable");
  EXPECT_EQ(to_string(ErrorCode::kTimeout), "Timeout");
  EXPECT_EQ(to_string(ErrorCode::kInternal), "InternalError");
  EXPECT_EQ(to_string(ErrorCode::kCancelled), "Cancelled");
  EXPECT_EQ(to_string(ErrorCode::kUnknown), "Unknown");
}

TEST(ErrorCodeTest, FromReasonRoundTripsEveryKnownCode) {
  for (const ErrorCode code : {ErrorCode::kNotFound, ErrorCode::kAlreadyExists,
                               ErrorCode::kConflict, ErrorCode::kTooManyRequests, ErrorCode::kGone,
                               ErrorCode::kForbidden, ErrorCode::kUnauthorized, ErrorCode::kInvalid,
                               ErrorCode::kBadRequest, ErrorCode::kUnavailable, ErrorCode::kTimeout,
                               ErrorCode::kInternal, ErrorCode::kCancelled, ErrorCode::kExpired}) {
    EXPECT_EQ(error_code_from_reason(to_string(code)), code) << to_string(code);
  }
}

TEST(ErrorCodeTest, FromReasonHandlesAliasesAndUnknowns) {
  EXPECT_EQ(error_code_from_reason("ServerTimeout"), ErrorCode::kTimeout);
  EXPECT_EQ(error_code_from_reason(""), std::nullopt);
  EXPECT_EQ(error_code_from_reason("Unknown"), std::nullopt);
  EXPECT_EQ(error_code_from_reason("MethodNotAllowed"), std::nullopt);
  EXPECT_EQ(error_code_from_reason("notfound"), std::nullopt);  // reasons are case-sensitive
}

TEST(ErrorTest, DefaultIsUnknownWithoutDetails) {
  const Error e;
  EXPECT_EQ(e.code, ErrorCode::kUnknown);
  EXPECT_EQ(e.http_status, 0);
  EXPECT_TRUE(e.message.empty());
  EXPECT_TRUE(e.causes.empty());
  EXPECT_FALSE(e.retry_after.has_value());
  EXPECT_EQ(e.describe(), "Unknown");
}

TEST(ErrorTest, DescribeWithHttpStatus) {
  const Error e(ErrorCode::kNotFound, R"(pods "x" not found)", 404);
  EXPECT_EQ(e.describe(), R"(NotFound (404): pods "x" not found)");
}

TEST(ErrorTest, DescribeWithoutHttpStatus) {
  const Error e(ErrorCode::kInvalid, "quantity \"12x\" has an unknown suffix");
  EXPECT_EQ(e.describe(), "Invalid: quantity \"12x\" has an unknown suffix");
}

TEST(ErrorTest, DescribeWithCausesAndRetryAfter) {
  Error e(ErrorCode::kTooManyRequests, "Cannot evict pod", 429);
  e.causes.push_back({.reason = "DisruptionBudget", .message = "needs 2 healthy pods"});
  e.causes.push_back(
      {.reason = "FieldValueRequired", .message = "Required value", .field = "spec.nodeName"});
  e.retry_after = std::chrono::seconds(10);
  EXPECT_EQ(e.describe(),
            "TooManyRequests (429): Cannot evict pod [DisruptionBudget: needs 2 healthy pods; "
            "spec.nodeName: Required value] (retry after 10s)");
}

TEST(ErrorTest, CauseWithoutLabelShowsMessageOnly) {
  Error e(ErrorCode::kInvalid, "bad");
  e.causes.push_back({.message = "something"});
  EXPECT_EQ(e.describe(), "Invalid: bad [something]");
}

TEST(ErrorTest, IsNotFoundLooksAtTheCodeOnly) {
  EXPECT_TRUE(is_not_found(Error(ErrorCode::kNotFound, "pods \"x\" not found", 404)));
  EXPECT_TRUE(is_not_found(Error(ErrorCode::kNotFound, "no such file")));
  EXPECT_FALSE(is_not_found(Error(ErrorCode::kGone, "gone", 410)));
}

TEST(ErrorTest, EqualityComparesAllFields) {
  const Error a(ErrorCode::kConflict, "stale", 409);
  Error b(ErrorCode::kConflict, "stale", 409);
  EXPECT_EQ(a, b);
  b.retry_after = std::chrono::seconds(1);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace nmo
