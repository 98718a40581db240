// The retry rule: a reused connection that fails before the first response byte is retried once
// on a fresh connection; anything else (a fresh connection, bytes already received, a second
// failure) is returned as an error.
#include <atomic>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

// Answers the first request on each connection, then reads the next one and closes the
// connection without a word: a server that timed out the idle connection just as the request
// came in.
asio::awaitable<void> answer_one_then_drop(test::ServerConnection& connection) {
  const std::optional<test::ReceivedRequest> first = co_await connection.read_request();
  if (!first) {
    co_return;
  }
  test::ServerResponse answered{.status = 200, .headers = {}, .body = "answered"};
  const bool written = co_await connection.write_response(std::move(answered));
  if (!written) {
    co_return;
  }
  const std::optional<test::ReceivedRequest> dropped = co_await connection.read_request();
}

// Answers the first request on a connection and then writes `reply` (a malformed or partial
// response) to the second.
test::Handler answer_one_then_reply(std::string reply) {
  return [reply = std::move(reply)](test::ServerConnection& connection) -> asio::awaitable<void> {
    const std::optional<test::ReceivedRequest> first = co_await connection.read_request();
    if (!first) {
      co_return;
    }
    test::ServerResponse ok;
    const bool written = co_await connection.write_response(std::move(ok));
    if (!written) {
      co_return;
    }
    const std::optional<test::ReceivedRequest> second = co_await connection.read_request();
    if (second) {
      std::string bytes = reply;
      const bool sent = co_await connection.write_raw(std::move(bytes));
      EXPECT_TRUE(sent);
    }
  };
}

class ClientRetryTest : public ::testing::Test {
 protected:
  void start(test::Handler handler) {
    ASSERT_OK_AND_ASSIGN(server_, test::TestServer::start({.handler = std::move(handler)}));
    ASSERT_OK_AND_ASSIGN(
        client_, Client::create(context_.get_executor(),
                                {.host = "127.0.0.1", .port = server_->port(), .tls = false}));
  }

  Result<Response> send(Method method, std::string target, std::string body = "") {
    return test::run(context_, client_->send({.method = method,
                                              .target = std::move(target),
                                              .headers = {},
                                              .body = std::move(body)}));
  }

  std::string prefix(std::string_view request) const {
    return std::string(request) + " on 127.0.0.1:" + server_->port() + ": ";
  }

  asio::io_context context_;
  std::unique_ptr<test::TestServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientRetryTest, StaleReusedConnectionIsRetriedOnAFreshOne) {
  start(answer_one_then_drop);
  EXPECT_OK(send(Method::kGet, "/first"));
  ASSERT_OK_AND_ASSIGN(const Response response, send(Method::kGet, "/second"));
  EXPECT_EQ(response.body, "answered");
  EXPECT_EQ(server_->accepted_connections(), 2);
  const std::vector<test::ReceivedRequest> requests = server_->requests();
  ASSERT_EQ(requests.size(), 3U);
  EXPECT_EQ(requests[1].target, "/second");  // dropped
  EXPECT_EQ(requests[2].target, "/second");  // retried
}

TEST_F(ClientRetryTest, RetryResendsTheBody) {
  start(answer_one_then_drop);
  EXPECT_OK(send(Method::kPost, "/first", "{}"));
  EXPECT_OK(send(Method::kPost, "/apis/x", R"({"a":1})"));
  const std::vector<test::ReceivedRequest> requests = server_->requests();
  ASSERT_EQ(requests.size(), 3U);
  EXPECT_EQ(requests[2].method, "POST");
  EXPECT_EQ(requests[2].body, R"({"a":1})");
}

TEST_F(ClientRetryTest, RetriedOnlyOnce) {
  auto answered = std::make_shared<std::atomic<int>>(0);
  start([answered](test::ServerConnection& connection) -> asio::awaitable<void> {
    for (;;) {
      const std::optional<test::ReceivedRequest> request = co_await connection.read_request();
      if (!request || answered->fetch_add(1) > 0) {
        co_return;  // every request after the very first is dropped
      }
      test::ServerResponse ok;
      const bool written = co_await connection.write_response(std::move(ok));
      if (!written) {
        co_return;
      }
    }
  });
  EXPECT_OK(send(Method::kGet, "/first"));
  const Result<Response> response = send(Method::kGet, "/second");
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable,
                  prefix("GET /second") + "read response: connection closed by the server"));
  EXPECT_EQ(server_->accepted_connections(), 2);
  EXPECT_EQ(server_->requests().size(), 3U);
}

TEST_F(ClientRetryTest, FreshConnectionFailureIsNotRetried) {
  start([](test::ServerConnection& connection) -> asio::awaitable<void> {
    const std::optional<test::ReceivedRequest> dropped = co_await connection.read_request();
  });
  const Result<Response> response = send(Method::kGet, "/only");
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable,
                  prefix("GET /only") + "read response: connection closed by the server"));
  EXPECT_EQ(server_->accepted_connections(), 1);
  EXPECT_EQ(server_->requests().size(), 1U);
}

TEST_F(ClientRetryTest, PartialResponseOnAReusedConnectionIsNotRetried) {
  start(answer_one_then_reply("HTTP/1.1 200 OK\r\nContent-Le"));
  EXPECT_OK(send(Method::kGet, "/first"));
  const Result<Response> response = send(Method::kGet, "/second");
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable,
                  prefix("GET /second") + "read response: connection closed by the server"));
  EXPECT_EQ(server_->accepted_connections(), 1);
  EXPECT_EQ(server_->requests().size(), 2U);
}

TEST_F(ClientRetryTest, TruncatedBodyIsNotRetried) {
  start(answer_one_then_reply("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
  EXPECT_OK(send(Method::kGet, "/first"));
  const Result<Response> response = send(Method::kDelete, "/second");
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable,
                  prefix("DELETE /second") + "read body: connection closed by the server"));
  EXPECT_EQ(server_->accepted_connections(), 1);
}

}  // namespace
}  // namespace nmo::http
