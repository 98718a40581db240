// Connection failures are kUnavailable values naming the server and the cause.
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"

namespace nmo::http {
namespace {

// A loopback port nobody listens on: bound, read, and released again.
std::string unused_port() {
  asio::io_context context;
  asio::ip::tcp::acceptor acceptor(
      context, asio::ip::tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), 0));
  return std::to_string(acceptor.local_endpoint().port());
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

}  // namespace
}  // namespace nmo::http
