#include "kube/config/internal/server_url.h"

#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube::internal {
namespace {

TEST(ParseServerUrlTest, HttpsWithPort) {
  ASSERT_OK_AND_ASSIGN(const ServerUrl url, parse_server_url("https://127.0.0.1:6443"));
  EXPECT_EQ(url.scheme, "https");
  EXPECT_EQ(url.host, "127.0.0.1");
  EXPECT_EQ(url.port, "6443");
  EXPECT_EQ(url.path_prefix, "");
}

TEST(ParseServerUrlTest, DefaultsPortFromScheme) {
  ASSERT_OK_AND_ASSIGN(const ServerUrl https, parse_server_url("https://api.example.com"));
  EXPECT_EQ(https.host, "api.example.com");
  EXPECT_EQ(https.port, "443");
  ASSERT_OK_AND_ASSIGN(const ServerUrl http, parse_server_url("HTTP://localhost/"));
  EXPECT_EQ(http.scheme, "http");
  EXPECT_EQ(http.port, "80");
  EXPECT_EQ(http.path_prefix, "");
}

TEST(ParseServerUrlTest, KeepsPathPrefixWithoutTrailingSlash) {
  ASSERT_OK_AND_ASSIGN(const ServerUrl url,
                       parse_server_url("https://rancher.example.com/k8s/clusters/c-1/"));
  EXPECT_EQ(url.host, "rancher.example.com");
  EXPECT_EQ(url.port, "443");
  EXPECT_EQ(url.path_prefix, "/k8s/clusters/c-1");
}

TEST(ParseServerUrlTest, Ipv6InBrackets) {
  ASSERT_OK_AND_ASSIGN(const ServerUrl url, parse_server_url("https://[fd00::1]:6443/x"));
  EXPECT_EQ(url.host, "fd00::1");
  EXPECT_EQ(url.port, "6443");
  EXPECT_EQ(url.path_prefix, "/x");
  ASSERT_OK_AND_ASSIGN(const ServerUrl no_port, parse_server_url("https://[::1]"));
  EXPECT_EQ(no_port.host, "::1");
  EXPECT_EQ(no_port.port, "443");
}

void expect_invalid(const std::string& server, const std::string& message) {
  const Result<ServerUrl> url = parse_server_url(server);
  ASSERT_FALSE(url.has_value()) << server;
  EXPECT_EQ(url.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(url.error().message, message);
}

TEST(ParseServerUrlTest, RejectsMalformedValues) {
  expect_invalid("127.0.0.1:6443",
                 R"("127.0.0.1:6443" has no scheme (expected https://host[:port]))");
  expect_invalid("ftp://a", R"("ftp://a" has scheme "ftp" (expected https or http))");
  expect_invalid("https://", R"("https://" has no host)");
  expect_invalid("https://:6443", R"("https://:6443" has no host)");
  expect_invalid("https://a b", R"("https://a b" has an invalid host)");
  expect_invalid("https://a:0", R"("https://a:0" has an invalid port (expected 1-65535))");
  expect_invalid("https://a:65536", R"("https://a:65536" has an invalid port (expected 1-65535))");
  expect_invalid("https://a:", R"("https://a:" has an invalid port (expected 1-65535))");
  expect_invalid("https://a:x1", R"("https://a:x1" has an invalid port (expected 1-65535))");
  expect_invalid(
      "https://fd00::1",
      R"("https://fd00::1" has an IPv6 address without brackets (write https://[addr]:port))");
  expect_invalid("https://[fd00::1", R"("https://[fd00::1" has an unterminated '[' in the host)");
  expect_invalid("https://[zz]", R"("https://[zz]" has an invalid IPv6 address)");
  expect_invalid("https://[::1]x",
                 R"("https://[::1]x" has unexpected characters after the IPv6 address)");
  expect_invalid("https://u:p@a",
                 R"("https://u:p@a" must not have user info (put credentials in users[]))");
  expect_invalid("https://a/?x=1", R"("https://a/?x=1" must not have a query or fragment)");
}

TEST(FormatServerUrlTest, BracketsIpv6Only) {
  EXPECT_EQ(format_server_url("https", "10.96.0.1", "443"), "https://10.96.0.1:443");
  EXPECT_EQ(format_server_url("https", "fd00:10:96::1", "443"), "https://[fd00:10:96::1]:443");
}

TEST(IsValidPortTest, Range) {
  EXPECT_TRUE(is_valid_port("1"));
  EXPECT_TRUE(is_valid_port("65535"));
  EXPECT_FALSE(is_valid_port("0"));
  EXPECT_FALSE(is_valid_port("65536"));
  EXPECT_FALSE(is_valid_port("+443"));
  EXPECT_FALSE(is_valid_port("100000"));
  EXPECT_FALSE(is_valid_port(""));
}

}  // namespace
}  // namespace nmo::kube::internal
