#include "kube/api/status.h"

#include <chrono>
#include <optional>
#include <string>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace nmo::kube {
namespace {

using std::chrono::seconds;

// The eviction subresource's answer when a PodDisruptionBudget blocks the eviction.
constexpr const char* kEvictionBlocked =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
    R"("message":"Cannot evict pod as it would violate the pod's disruption budget.",)"
    R"("reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget",)"
    R"("message":"The disruption budget db-pdb needs 2 healthy pods and has 2 currently"}]},)"
    R"("code":429})";

TEST(ErrorFromResponseTest, EvictionBlockedByPdb) {
  const Error error = error_from_response(429, kEvictionBlocked, std::nullopt);
  EXPECT_EQ(error.code, ErrorCode::kTooManyRequests);
  EXPECT_EQ(error.http_status, 429);
  EXPECT_EQ(error.message, "Cannot evict pod as it would violate the pod's disruption budget.");
  ASSERT_EQ(error.causes.size(), 1U);
  EXPECT_EQ(
      error.causes[0],
      (ErrorCause{"DisruptionBudget",
                  "The disruption budget db-pdb needs 2 healthy pods and has 2 currently", ""}));
  EXPECT_EQ(error.retry_after, std::nullopt);
  EXPECT_EQ(error.describe(),
            "TooManyRequests (429): Cannot evict pod as it would violate the pod's disruption "
            "budget. [DisruptionBudget: The disruption budget db-pdb needs 2 healthy pods and has "
            "2 currently]");
  const std::optional<ErrorCause> cause = find_cause(error, "DisruptionBudget");
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->message,
            "The disruption budget db-pdb needs 2 healthy pods and has 2 currently");
  EXPECT_EQ(find_cause(error, "FieldValueInvalid"), std::nullopt);
}

TEST(ErrorFromResponseTest, NotFound) {
  const Error error = error_from_response(404, R"({"kind":"Status","apiVersion":"v1",
      "metadata":{},"status":"Failure","message":"pods \"web-0\" not found","reason":"NotFound",
      "details":{"name":"web-0","kind":"pods"},"code":404})",
                                          std::nullopt);
  EXPECT_EQ(error, Error(ErrorCode::kNotFound, R"(pods "web-0" not found)", 404));
}

TEST(ErrorFromResponseTest, ConflictOnStaleResourceVersion) {
  const Error error = error_from_response(409, R"({"kind":"Status","apiVersion":"v1",
      "metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on leases.coordination.k8s.io \"nmo\": the object has been modified; please apply your changes to the latest version and try again",
      "reason":"Conflict","details":{"name":"nmo","group":"coordination.k8s.io","kind":"leases"},
      "code":409})",
                                          std::nullopt);
  EXPECT_EQ(error.code, ErrorCode::kConflict);
  EXPECT_EQ(error.http_status, 409);
}

TEST(ErrorFromResponseTest, InvalidWithFieldCauses) {
  const Error error = error_from_response(422, R"({"kind":"Status","apiVersion":"v1",
      "metadata":{},"status":"Failure",
      "message":"Pod \"x\" is invalid: spec.containers: Required value",
      "reason":"Invalid","details":{"name":"x","kind":"Pod","causes":[
        {"reason":"FieldValueRequired","message":"Required value","field":"spec.containers"},
        {"reason":"FieldValueInvalid","message":"Invalid value: \"\"","field":"metadata.name"}]},
      "code":422})",
                                          std::nullopt);
  EXPECT_EQ(error.code, ErrorCode::kInvalid);
  ASSERT_EQ(error.causes.size(), 2U);
  EXPECT_EQ(error.causes[1],
            (ErrorCause{"FieldValueInvalid", "Invalid value: \"\"", "metadata.name"}));
  EXPECT_EQ(error.describe(),
            "Invalid (422): Pod \"x\" is invalid: spec.containers: Required value "
            "[spec.containers: Required value; metadata.name: Invalid value: \"\"]");
}

TEST(ErrorFromResponseTest, ExpiredContinueToken) {
  const Error error = error_from_response(410, R"({"kind":"Status","apiVersion":"v1",
      "metadata":{},"status":"Failure","message":"The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
      "reason":"Expired","code":410})",
                                          std::nullopt);
  EXPECT_EQ(error.code, ErrorCode::kExpired);
}

TEST(ErrorFromResponseTest, RetryAfterFromDetailsThenHeader) {
  const char* throttled = R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"Too many requests, please try again later.",
      "reason":"TooManyRequests","details":{"retryAfterSeconds":3},"code":429})";
  EXPECT_EQ(error_from_response(429, throttled, seconds{10}).retry_after, seconds{3});
  EXPECT_EQ(error_from_response(429, kEvictionBlocked, seconds{10}).retry_after, seconds{10});
  EXPECT_EQ(error_from_response(503, "", seconds{5}).retry_after, seconds{5});
}

TEST(ErrorFromResponseTest, ServerTimeoutReason) {
  const Error error = error_from_response(504, R"({"kind":"Status","apiVersion":"v1",
      "metadata":{},"status":"Failure","message":"The list operation against pods could not be completed at this time, please try again.",
      "reason":"ServerTimeout","details":{"name":"list","kind":"pods","retryAfterSeconds":2},
      "code":504})",
                                          std::nullopt);
  EXPECT_EQ(error.code, ErrorCode::kTimeout);
  EXPECT_EQ(error.retry_after, seconds{2});
}

TEST(ErrorFromResponseTest, UnknownReasonFallsBackOnHttpStatus) {
  const Error error = error_from_response(
      405,
      R"({"kind":"Status","reason":"MethodNotAllowed","message":"the server does not allow this method on the requested resource","code":405})",
      std::nullopt);
  EXPECT_EQ(error.code, ErrorCode::kBadRequest);
  EXPECT_EQ(error.message, "the server does not allow this method on the requested resource");
}

TEST(ErrorFromResponseTest, StatusWithoutMessage) {
  const Error error =
      error_from_response(403, R"({"kind":"Status","reason":"Forbidden"})", std::nullopt);
  EXPECT_EQ(error, Error(ErrorCode::kForbidden, "the server sent a Status without a message", 403));
}

TEST(ErrorFromResponseTest, KeepsTheGivenHttpStatusEvenWhenTheStatusDisagrees) {
  // Found by kube_status_fuzz: with http_status 0 the Status's own code used to leak through.
  const char* body = R"({"kind":"Status","reason":"Invalid","message":"bad","code":422})";
  EXPECT_EQ(error_from_response(0, body, std::nullopt), Error(ErrorCode::kInvalid, "bad", 0));
  EXPECT_EQ(error_from_response(400, body, std::nullopt), Error(ErrorCode::kInvalid, "bad", 400));
}

TEST(ErrorFromResponseTest, HtmlFromAProxy) {
  const Error error = error_from_response(
      502,
      "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n</body>\r\n</html>\r\n",
      std::nullopt);
  EXPECT_EQ(error, Error(ErrorCode::kUnavailable,
                         "the server answered 502 with a non-Status body: <html> <head><title>502 "
                         "Bad Gateway</title></head> <body> </body> </html>",
                         502));
}

TEST(ErrorFromResponseTest, LongBodyIsCutAt200Bytes) {
  const std::string body = std::string(150, 'a') + "\x01" + std::string(100, 'b');
  const Error error = error_from_response(500, body, std::nullopt);
  EXPECT_EQ(error.code, ErrorCode::kInternal);
  EXPECT_EQ(error.message, "the server answered 500 with a non-Status body: " +
                               std::string(150, 'a') + "?" + std::string(49, 'b') + "...");
}

TEST(ErrorFromResponseTest, EmptyTruncatedAndForeignJsonBodies) {
  EXPECT_EQ(error_from_response(503, "", std::nullopt),
            Error(ErrorCode::kUnavailable, "the server answered 503 with an empty body", 503));
  EXPECT_EQ(error_from_response(401, " \r\n", std::nullopt),
            Error(ErrorCode::kUnauthorized, "the server answered 401 with an empty body", 401));
  EXPECT_EQ(
      error_from_response(500, R"({"kind":"Status","message":"cut)", std::nullopt),
      Error(ErrorCode::kInternal,
            R"(the server answered 500 with a non-Status body: {"kind":"Status","message":"cut)",
            500));
  EXPECT_EQ(error_from_response(404, R"({"error":"no route"})", std::nullopt),
            Error(ErrorCode::kNotFound,
                  R"(the server answered 404 with a non-Status body: {"error":"no route"})", 404));
  EXPECT_EQ(error_from_response(418, "teapot", std::nullopt).code, ErrorCode::kUnknown);
}

TEST(ErrorCodeFromHttpStatusTest, Table) {
  EXPECT_EQ(error_code_from_http_status(400), ErrorCode::kBadRequest);
  EXPECT_EQ(error_code_from_http_status(401), ErrorCode::kUnauthorized);
  EXPECT_EQ(error_code_from_http_status(403), ErrorCode::kForbidden);
  EXPECT_EQ(error_code_from_http_status(404), ErrorCode::kNotFound);
  EXPECT_EQ(error_code_from_http_status(405), ErrorCode::kBadRequest);
  EXPECT_EQ(error_code_from_http_status(408), ErrorCode::kTimeout);
  EXPECT_EQ(error_code_from_http_status(409), ErrorCode::kConflict);
  EXPECT_EQ(error_code_from_http_status(410), ErrorCode::kGone);
  EXPECT_EQ(error_code_from_http_status(415), ErrorCode::kBadRequest);
  EXPECT_EQ(error_code_from_http_status(422), ErrorCode::kInvalid);
  EXPECT_EQ(error_code_from_http_status(429), ErrorCode::kTooManyRequests);
  EXPECT_EQ(error_code_from_http_status(500), ErrorCode::kInternal);
  EXPECT_EQ(error_code_from_http_status(501), ErrorCode::kInternal);
  EXPECT_EQ(error_code_from_http_status(502), ErrorCode::kUnavailable);
  EXPECT_EQ(error_code_from_http_status(503), ErrorCode::kUnavailable);
  EXPECT_EQ(error_code_from_http_status(504), ErrorCode::kTimeout);
  EXPECT_EQ(error_code_from_http_status(302), ErrorCode::kUnknown);
  EXPECT_EQ(error_code_from_http_status(0), ErrorCode::kUnknown);
  EXPECT_EQ(error_code_from_http_status(-1), ErrorCode::kUnknown);
}

TEST(ErrorFromStatusTest, UsesTheStatusCode) {
  const Error error = error_from_status(boost::json::parse(R"json({"kind":"Status",
      "apiVersion":"v1","metadata":{},"status":"Failure",
      "message":"too old resource version: 1000 (20391)","reason":"Expired","code":410})json"));
  EXPECT_EQ(error, Error(ErrorCode::kExpired, "too old resource version: 1000 (20391)", 410));
}

TEST(ErrorFromStatusTest, NotAStatus) {
  EXPECT_EQ(error_from_status(boost::json::parse(R"({"kind":"Pod"})")),
            Error(ErrorCode::kUnknown, "expected a Status object"));
  EXPECT_EQ(error_from_status(boost::json::parse("[]")),
            Error(ErrorCode::kUnknown, "expected a Status object"));
}

}  // namespace
}  // namespace nmo::kube
