// Keep-alive pooling: connections are reused, bounded by max_idle_connections and
// idle_connection_timeout, and never reused after the server closed them.
#include <memory>
#include <string>
#include <tuple>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

using namespace boost::asio::experimental::
    awaitable_operators;  // NOLINT(google-build-using-namespace)

class ClientPoolTest : public ::testing::Test {
 protected:
  void start(test::ServerResponse response, ClientOptions options = {}) {
    ASSERT_OK_AND_ASSIGN(server_,
                         test::TestServer::start({.handler = test::answer_with(response)}));
    options.host = "127.0.0.1";
    options.port = server_->port();
    options.tls = false;
    ASSERT_OK_AND_ASSIGN(client_, Client::create(context_.get_executor(), options));
  }

  Result<Response> get() {
    return test::run(context_, client_->send({.method = Method::kGet, .target = "/"}));
  }

  // Two requests in flight at the same time.
  void get_two_concurrently() {
    auto [first, second] =
        test::run(context_, client_->send({.method = Method::kGet, .target = "/1"}) &&
                                client_->send({.method = Method::kGet, .target = "/2"}));
    EXPECT_OK(first);
    EXPECT_OK(second);
  }

  asio::io_context context_;
  std::unique_ptr<test::TestServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientPoolTest, KeepAliveReusesTheConnection) {
  start({.status = 200, .headers = {}, .body = "ok"});
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(const Response response, get());
    EXPECT_EQ(response.body, "ok");
  }
  EXPECT_EQ(server_->accepted_connections(), 1);
  EXPECT_EQ(server_->requests().size(), 3U);
}

TEST_F(ClientPoolTest, ConnectionCloseFromTheServerIsHonoured) {
  start({.status = 200, .headers = {}, .body = "ok", .after = test::AfterResponse::kClose});
  EXPECT_OK(get());
  EXPECT_OK(get());
  EXPECT_EQ(server_->accepted_connections(), 2);
}

TEST_F(ClientPoolTest, IdleConnectionClosedByTheServerIsNotReused) {
  start({.status = 200, .headers = {}, .body = "ok", .after = test::AfterResponse::kCloseSilently});
  EXPECT_OK(get());
  ASSERT_TRUE(server_->wait_for_closed_connections(1));
  ASSERT_OK_AND_ASSIGN(const Response response, get());
  EXPECT_EQ(response.body, "ok");
  EXPECT_EQ(server_->accepted_connections(), 2);
  EXPECT_EQ(server_->requests().size(), 2U);
}

TEST_F(ClientPoolTest, ZeroIdleConnectionsDisablesReuse) {
  start({}, {.max_idle_connections = 0});
  EXPECT_OK(get());
  EXPECT_OK(get());
  EXPECT_EQ(server_->accepted_connections(), 2);
}

TEST_F(ClientPoolTest, ConnectionIdleForTheTimeoutIsNotReused) {
  start({}, {.idle_connection_timeout = std::chrono::milliseconds(0)});
  EXPECT_OK(get());
  EXPECT_OK(get());
  EXPECT_EQ(server_->accepted_connections(), 2);
  ASSERT_TRUE(server_->wait_for_closed_connections(1));
}

TEST_F(ClientPoolTest, ConcurrentRequestsUseSeparateConnectionsThenShareThePool) {
  start({});
  get_two_concurrently();
  EXPECT_EQ(server_->accepted_connections(), 2);
  get_two_concurrently();
  EXPECT_OK(get());
  EXPECT_EQ(server_->accepted_connections(), 2);
  EXPECT_EQ(server_->requests().size(), 5U);
}

TEST_F(ClientPoolTest, PoolKeepsAtMostMaxIdleConnections) {
  start({}, {.max_idle_connections = 1});
  get_two_concurrently();
  EXPECT_EQ(server_->accepted_connections(), 2);
  ASSERT_TRUE(server_->wait_for_closed_connections(1));  // the one that did not fit
  get_two_concurrently();
  EXPECT_EQ(server_->accepted_connections(), 3);
}

// TLS servers send session tickets after the handshake; a pooled TLS connection must still be
// judged idle and reused.
TEST(ClientPoolTlsTest, TlsConnectionIsReusedWithoutANewHandshake) {
  asio::io_context context;
  ASSERT_OK_AND_ASSIGN(const test::TestPki pki, test::make_test_pki());
  ASSERT_OK_AND_ASSIGN(const std::unique_ptr<test::TestServer> server,
                       test::TestServer::start({.handler = test::answer_with({}),
                                                .cert_pem = pki.server_cert_pem,
                                                .key_pem = pki.server_key_pem}));
  ASSERT_OK_AND_ASSIGN(
      const std::unique_ptr<Client> client,
      Client::create(context.get_executor(), {.host = "127.0.0.1",
                                              .port = server->port(),
                                              .tls = true,
                                              .tls_options = {.ca_pem = pki.ca_cert_pem}}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_OK(test::run(context, client->send({.method = Method::kGet, .target = "/"})));
  }
  EXPECT_EQ(server->accepted_connections(), 1);
  EXPECT_EQ(server->handshakes().size(), 1U);
}

}  // namespace
}  // namespace nmo::http
