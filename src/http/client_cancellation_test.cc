// Cancellation: Client::shutdown() and LineStream::cancel() from another thread, and the caller's
// own cancellation slot, all end work in flight with kCancelled and close the connection.
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

// Reads requests and never answers them; returns (closing its side) once the client closes.
asio::awaitable<void> read_and_hang(test::ServerConnection& connection) {
  for (;;) {
    const std::optional<test::ReceivedRequest> request = co_await connection.read_request();
    if (!request) {
      co_return;
    }
  }
}

class ClientCancellationTest : public ::testing::Test {
 protected:
  void start(test::Handler handler) {
    ASSERT_OK_AND_ASSIGN(server_, test::TestServer::start({.handler = std::move(handler)}));
    ASSERT_OK_AND_ASSIGN(
        client_, Client::create(io_.executor(),
                                {.host = "127.0.0.1", .port = server_->port(), .tls = false}));
  }

  std::string cancelled(std::string_view request) const {
    return std::string(request) + " on 127.0.0.1:" + server_->port() + ": cancelled";
  }

  std::unique_ptr<test::TestServer> server_;
  test::IoThread io_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientCancellationTest, ShutdownCancelsARequestInFlight) {
  start(read_and_hang);
  std::future<Result<Response>> response =
      io_.spawn(client_->send({.method = Method::kGet, .target = "/hang"}));
  ASSERT_TRUE(server_->wait_for_requests(1));
  client_->shutdown();
  const Result<Response> result = response.get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(), Error(ErrorCode::kCancelled, cancelled("GET /hang")));
  EXPECT_TRUE(server_->wait_for_closed_connections(1));
}

TEST_F(ClientCancellationTest, RequestsAfterShutdownAreCancelledWithoutConnecting) {
  start(test::answer_with({}));
  client_->shutdown();
  client_->shutdown();  // idempotent
  const Result<Response> response =
      io_.spawn(client_->send({.method = Method::kGet, .target = "/late"})).get();
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(), Error(ErrorCode::kCancelled, cancelled("GET /late")));
  const Result<std::unique_ptr<LineStream>> stream =
      io_.spawn(client_->stream({.method = Method::kGet, .target = "/watch"})).get();
  ASSERT_FALSE(stream.has_value());
  EXPECT_EQ(stream.error(), Error(ErrorCode::kCancelled, cancelled("GET /watch")));
  EXPECT_EQ(server_->accepted_connections(), 0);
}

TEST_F(ClientCancellationTest, ShutdownClosesIdleConnections) {
  start(test::answer_with({}));
  EXPECT_OK(io_.spawn(client_->send({.method = Method::kGet, .target = "/"})).get());
  client_->shutdown();
  EXPECT_TRUE(server_->wait_for_closed_connections(1));
}

TEST_F(ClientCancellationTest, ShutdownCancelsAnOpenStream) {
  start(test::stream_pushed());
  server_->push("one\n");
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<LineStream> stream,
      io_.spawn(client_->stream({.method = Method::kGet, .target = "/watch"})).get());
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> line,
                       io_.spawn(stream->next_line(std::chrono::minutes(5))).get());
  EXPECT_EQ(line, "one");
  std::future<Result<std::optional<std::string>>> pending =
      io_.spawn(stream->next_line(std::chrono::minutes(5)));
  client_->shutdown();
  const Result<std::optional<std::string>> result = pending.get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(), Error(ErrorCode::kCancelled, cancelled("GET /watch")));
  // The server handler notices the closed connection once it has a reason to read again.
  server_->push_end();
  EXPECT_TRUE(server_->wait_for_closed_connections(1));
}

TEST_F(ClientCancellationTest, StreamCancelFromAnotherThread) {
  start(test::stream_pushed());
  server_->push("one\n");
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<LineStream> stream,
      io_.spawn(client_->stream({.method = Method::kGet, .target = "/watch"})).get());
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> line,
                       io_.spawn(stream->next_line(std::chrono::minutes(5))).get());
  EXPECT_EQ(line, "one");
  // Nothing more is pushed, so this call can only end through cancel(), whether it is already
  // waiting on the socket or not yet started when cancel() lands.
  std::future<Result<std::optional<std::string>>> pending =
      io_.spawn(stream->next_line(std::chrono::minutes(5)));
  stream->cancel();
  const Result<std::optional<std::string>> result = pending.get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(), Error(ErrorCode::kCancelled, cancelled("GET /watch")));
  const Result<std::optional<std::string>> later =
      io_.spawn(stream->next_line(std::chrono::minutes(5))).get();
  ASSERT_FALSE(later.has_value());
  EXPECT_EQ(later.error(), result.error());
  // The server handler notices the closed connection once it has a reason to read again.
  server_->push_end();
  EXPECT_TRUE(server_->wait_for_closed_connections(1));

  // The client is unaffected: a new request gets a new connection.
  stream.reset();
  EXPECT_OK(io_.spawn(client_->send({.method = Method::kGet, .target = "/after"})).get());
  EXPECT_EQ(server_->accepted_connections(), 2);
}

TEST_F(ClientCancellationTest, CallerCancellationSlotCancelsTheRequest) {
  start(read_and_hang);
  asio::cancellation_signal signal;
  std::promise<Result<Response>> promise;
  asio::post(io_.executor(), [&] {
    asio::co_spawn(io_.executor(), client_->send({.method = Method::kGet, .target = "/hang"}),
                   asio::bind_cancellation_slot(
                       signal.slot(), [&](std::exception_ptr error, Result<Response> response) {
                         if (error) {
                           promise.set_exception(error);
                         } else {
                           promise.set_value(std::move(response));
                         }
                       }));
  });
  ASSERT_TRUE(server_->wait_for_requests(1));
  asio::post(io_.executor(), [&] { signal.emit(asio::cancellation_type::terminal); });
  const Result<Response> response = promise.get_future().get();
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(), Error(ErrorCode::kCancelled, cancelled("GET /hang")));
  EXPECT_TRUE(server_->wait_for_closed_connections(1));
}

}  // namespace
}  // namespace nmo::http
