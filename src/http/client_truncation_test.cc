// TLS truncation (the server closes TCP without close_notify): a normal end when the body was
// complete (a body delimited by the end of the connection), an error when it was not.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

// Reads one request, writes `raw` and closes TCP without close_notify.
test::Handler write_then_truncate(std::string raw) {
  return [raw = std::move(raw)](test::ServerConnection& connection) -> asio::awaitable<void> {
    const std::optional<test::ReceivedRequest> request = co_await connection.read_request();
    if (request) {
      std::string bytes = raw;
      const bool sent = co_await connection.write_raw(std::move(bytes));
      EXPECT_TRUE(sent);
    }
    connection.close();
  };
}

class ClientTruncationTest : public ::testing::Test {
 protected:
  void start(test::Handler handler) {
    ASSERT_OK_AND_ASSIGN(const test::TestPki pki, test::make_test_pki());
    ASSERT_OK_AND_ASSIGN(server_, test::TestServer::start({.handler = std::move(handler),
                                                           .cert_pem = pki.server_cert_pem,
                                                           .key_pem = pki.server_key_pem}));
    ASSERT_OK_AND_ASSIGN(client_, Client::create(context_.get_executor(),
                                                 {.host = "127.0.0.1",
                                                  .port = server_->port(),
                                                  .tls = true,
                                                  .tls_options = {.ca_pem = pki.ca_cert_pem}}));
  }

  asio::io_context context_;
  std::unique_ptr<test::TestServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTruncationTest, BodyEndingWithTheConnectionIsComplete) {
  start(write_then_truncate("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of the body"));
  ASSERT_OK_AND_ASSIGN(const Response response,
                       test::run(context_, client_->send({.method = Method::kGet, .target = "/"})));
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(response.body, "all of the body");
}

TEST_F(ClientTruncationTest, TruncationInsideAContentLengthBodyIsAnError) {
  start(write_then_truncate("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"));
  const Result<Response> response =
      test::run(context_, client_->send({.method = Method::kGet, .target = "/"}));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable, "GET / on 127.0.0.1:" + server_->port() +
                                               ": read body: connection closed by the server"));
}

TEST_F(ClientTruncationTest, TruncationInsideAChunkedBodyIsAnError) {
  start(write_then_truncate("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"));
  const Result<Response> response =
      test::run(context_, client_->send({.method = Method::kGet, .target = "/"}));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(response.error().message, "GET / on 127.0.0.1:" + server_->port() +
                                          ": read body: connection closed by the server");
}

TEST_F(ClientTruncationTest, StreamEndingWithTheConnectionEndsCleanly) {
  start(write_then_truncate("HTTP/1.1 200 OK\r\n\r\nfirst\nsecond\nlast"));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<LineStream> stream,
      test::run(context_, client_->stream({.method = Method::kGet, .target = "/watch"})));
  for (const char* expected : {"first", "second", "last"}) {
    ASSERT_OK_AND_ASSIGN(const std::optional<std::string> line,
                         test::run(context_, stream->next_line(std::chrono::seconds(30))));
    EXPECT_EQ(line, expected);
  }
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> end,
                       test::run(context_, stream->next_line(std::chrono::seconds(30))));
  EXPECT_EQ(end, std::nullopt);
}

}  // namespace
}  // namespace nmo::http
