#include "http/internal/request_encoding.h"

#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::http::internal {
namespace {

ServerAddress server() {
  return {.host = "127.0.0.1",
          .port = 6443,
          .authority = "127.0.0.1:6443",
          .tls_name = "127.0.0.1",
          .verify = true};
}

std::string field(const BeastRequest& message, std::string_view name) {
  return std::string(message[name]);
}

TEST(RequestEncodingTest, GetWithoutBodyHasHostAndNoContentLength) {
  ASSERT_OK_AND_ASSIGN(
      const BeastRequest message,
      encode_request({.method = Method::kGet,
                      .target = "/api/v1/pods?limit=500",
                      .headers = {{"Accept", "application/json"}, {"Authorization", "Bearer t"}},
                      .body = "",
                      .timeout = std::nullopt},
                     server()));
  EXPECT_EQ(message.method_string(), "GET");
  EXPECT_EQ(message.target(), "/api/v1/pods?limit=500");
  EXPECT_EQ(message.version(), 11U);
  EXPECT_EQ(field(message, "Host"), "127.0.0.1:6443");
  EXPECT_EQ(field(message, "Accept"), "application/json");
  EXPECT_EQ(field(message, "Authorization"), "Bearer t");
  EXPECT_EQ(field(message, "Content-Length"), "");
  EXPECT_TRUE(message.keep_alive());
}

TEST(RequestEncodingTest, BodySetsContentLength) {
  ASSERT_OK_AND_ASSIGN(const BeastRequest message, encode_request({.method = Method::kPatch,
                                                                   .target = "/apis/x",
                                                                   .headers = {},
                                                                   .body = "{\"a\":1}",
                                                                   .timeout = std::nullopt},
                                                                  server()));
  EXPECT_EQ(message.method_string(), "PATCH");
  EXPECT_EQ(field(message, "Content-Length"), "7");
  EXPECT_EQ(message.body(), "{\"a\":1}");
}

TEST(RequestEncodingTest, PostWithoutBodySendsContentLengthZero) {
  ASSERT_OK_AND_ASSIGN(const BeastRequest message,
                       encode_request({.method = Method::kPost, .target = "/x"}, server()));
  EXPECT_EQ(field(message, "Content-Length"), "0");
}

TEST(RequestEncodingTest, CallerHostWins) {
  ASSERT_OK_AND_ASSIGN(const BeastRequest message,
                       encode_request({.method = Method::kGet,
                                       .target = "/",
                                       .headers = {{"host", "kube.example"}},
                                       .body = "",
                                       .timeout = std::nullopt},
                                      server()));
  EXPECT_EQ(field(message, "Host"), "kube.example");
}

TEST(RequestEncodingTest, RejectsTargetsThatAreNotPaths) {
  for (const std::string target : {"", "api/v1", "/a b", "/a\r\nX: y", "http://x/"}) {
    const Result<BeastRequest> message =
        encode_request({.method = Method::kGet, .target = target}, server());
    ASSERT_FALSE(message.has_value()) << target;
    EXPECT_EQ(message.error().code, ErrorCode::kInvalid);
  }
  EXPECT_EQ(encode_request({.method = Method::kGet, .target = "a b"}, server()).error().message,
            "request target \"a b\" must be a path starting with '/' without spaces or control "
            "characters");
}

TEST(RequestEncodingTest, RejectsHeaderInjection) {
  const Result<BeastRequest> message =
      encode_request({.method = Method::kGet,
                      .target = "/",
                      .headers = {{"X-Token", "a\r\nX-Admin: yes"}},
                      .body = "",
                      .timeout = std::nullopt},
                     server());
  ASSERT_FALSE(message.has_value());
  EXPECT_EQ(message.error(),
            Error(ErrorCode::kInvalid, "header \"X-Token\": value contains CR, LF or NUL"));
}

TEST(RequestEncodingTest, RejectsBadHeaderNames) {
  for (const std::string name : {"", "X Token", "X:Token", "X-Tök"}) {
    const Result<BeastRequest> message = encode_request({.method = Method::kGet,
                                                         .target = "/",
                                                         .headers = {{name, "v"}},
                                                         .body = "",
                                                         .timeout = std::nullopt},
                                                        server());
    ASSERT_FALSE(message.has_value()) << name;
    EXPECT_EQ(message.error().message, "header name \"" + name + "\" is not an HTTP token");
  }
}

TEST(RequestEncodingTest, RejectsFramingHeaders) {
  const Result<BeastRequest> message =
      encode_request({.method = Method::kPost,
                      .target = "/",
                      .headers = {{"Transfer-Encoding", "chunked"}},
                      .body = "x",
                      .timeout = std::nullopt},
                     server());
  ASSERT_FALSE(message.has_value());
  EXPECT_EQ(message.error().message,
            "header \"Transfer-Encoding\" is set by the client from the body");
}

}  // namespace
}  // namespace nmo::http::internal
