// Connection failures are kUnavailable values naming the server and the cause.
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"

namespace nmo::http {
namespace {

// A port nobody listens on at `address`: bound, read, and released again. Empty when the address
// is not available here (no IPv6 loopback).
std::string unused_port(const char* address = "127.0.0.1") {
  asio::io_context context;
  asio::ip::tcp::acceptor acceptor(context);
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(address), 0);
  boost::system::error_code error;
  acceptor.open(endpoint.protocol(), error);
  if (!error) {
    acceptor.bind(endpoint, error);
  }
  return error ? std::string() : std::to_string(acceptor.local_endpoint().port());
}

class ClientConnectErrorsTest : public ::testing::TestWithParam<bool> {};

TEST_P(ClientConnectErrorsTest, ConnectionRefused) {
  asio::io_context context;
  const std::string port = unused_port();
  ASSERT_OK_AND_ASSIGN(
      const std::unique_ptr<Client> client,
      Client::create(context.get_executor(),
                     {.host = "127.0.0.1", .port = port, .tls = GetParam(), .tls_options = {}}));
  const Result<Response> response =
      test::run(context, client->send({.method = Method::kGet, .target = "/"}));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(), Error(ErrorCode::kUnavailable,
                                    "connect to 127.0.0.1:" + port + ": Connection refused"));

  const Result<std::unique_ptr<LineStream>> stream =
      test::run(context, client->stream({.method = Method::kGet, .target = "/watch"}));
  ASSERT_FALSE(stream.has_value());
  EXPECT_EQ(stream.error(), response.error());
}

INSTANTIATE_TEST_SUITE_P(PlainAndTls, ClientConnectErrorsTest, ::testing::Bool());

TEST(ClientConnectErrorsIpv6Test, Ipv6AddressIsBracketedInMessages) {
  const std::string port = unused_port("::1");
  if (port.empty()) {
    GTEST_SKIP() << "no IPv6 loopback on this machine";
  }
  asio::io_context context;
  ASSERT_OK_AND_ASSIGN(
      const std::unique_ptr<Client> client,
      Client::create(context.get_executor(), {.host = "::1", .port = port, .tls = false}));
  const Result<Response> response =
      test::run(context, client->send({.method = Method::kGet, .target = "/"}));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable, "connect to [::1]:" + port + ": Connection refused"));
}

}  // namespace
}  // namespace nmo::http
