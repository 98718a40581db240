// Deadlines: the request timeout (client default and per request), the connect timeout that
// covers the TLS handshake, and a stream's header and idle-read timeouts. Each server accepts and
// then stays silent; the assertions are on the outcome (kTimeout and its message), not on
// elapsed time.
#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

using std::chrono::milliseconds;

class ClientTimeoutTest : public ::testing::Test {
 protected:
  // A plain server running `handler` and a client for it; `tls` makes the client speak TLS to
  // the plain server, whose silence then stalls the handshake.
  void start(test::Handler handler, ClientOptions options) {
    ASSERT_OK_AND_ASSIGN(server_, test::TestServer::start({.handler = std::move(handler)}));
    options.host = "127.0.0.1";
    options.port = server_->port();
    ASSERT_OK_AND_ASSIGN(client_, Client::create(context_.get_executor(), options));
  }

  std::string authority() const { return "127.0.0.1:" + server_->port(); }

  asio::io_context context_;
  std::unique_ptr<test::TestServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTimeoutTest, RequestTimesOutWhenTheServerNeverAnswers) {
  start(test::never_answer(), {.tls = false, .request_timeout = milliseconds(200)});
  const Result<Response> response =
      test::run(context_, client_->send({.method = Method::kGet, .target = "/slow"}));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kTimeout, "GET /slow on " + authority() + ": timed out after 200ms"));
  EXPECT_EQ(server_->accepted_connections(), 1);
}

TEST_F(ClientTimeoutTest, PerRequestTimeoutOverridesTheClientDefault) {
  start(test::never_answer(), {.tls = false, .request_timeout = std::chrono::minutes(10)});
  const Result<Response> response = test::run(
      context_,
      client_->send({.method = Method::kGet, .target = "/slow", .timeout = milliseconds(150)}));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kTimeout, "GET /slow on " + authority() + ": timed out after 150ms"));
}

TEST_F(ClientTimeoutTest, StalledTlsHandshakeTimesOutWithinTheConnectTimeout) {
  start(test::never_answer(), {.tls = true,
                               .tls_options = {.insecure_skip_verify = true},
                               .connect_timeout = milliseconds(200),
                               .request_timeout = std::chrono::minutes(10)});
  const Result<Response> response =
      test::run(context_, client_->send({.method = Method::kGet, .target = "/"}));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(), Error(ErrorCode::kTimeout, "TLS handshake with " + authority() +
                                                             ": timed out after 200ms"));
}

TEST_F(ClientTimeoutTest, ConnectTimeoutIsCappedByTheRequestTimeout) {
  start(test::never_answer(), {.tls = true,
                               .tls_options = {.insecure_skip_verify = true},
                               .connect_timeout = std::chrono::minutes(10)});
  const Result<Response> response = test::run(
      context_,
      client_->send({.method = Method::kGet, .target = "/", .timeout = milliseconds(150)}));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(), Error(ErrorCode::kTimeout, "TLS handshake with " + authority() +
                                                             ": timed out after 150ms"));
}

TEST_F(ClientTimeoutTest, StreamHeadersTimeOut) {
  start(test::never_answer(), {.tls = false, .request_timeout = milliseconds(150)});
  const Result<std::unique_ptr<LineStream>> stream =
      test::run(context_, client_->stream({.method = Method::kGet, .target = "/watch"}));
  ASSERT_FALSE(stream.has_value());
  EXPECT_EQ(stream.error(),
            Error(ErrorCode::kTimeout, "GET /watch on " + authority() + ": timed out after 150ms"));
}

TEST_F(ClientTimeoutTest, StreamIdleReadTimesOut) {
  start(test::stream_pushed(), {.tls = false});
  server_->push("{\"n\":1}\n");
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<LineStream> stream,
      test::run(context_, client_->stream({.method = Method::kGet, .target = "/watch"})));
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> line,
                       test::run(context_, stream->next_line(std::chrono::seconds(30))));
  EXPECT_EQ(line, "{\"n\":1}");

  const Result<std::optional<std::string>> idle =
      test::run(context_, stream->next_line(milliseconds(100)));
  ASSERT_FALSE(idle.has_value());
  EXPECT_EQ(idle.error(),
            Error(ErrorCode::kTimeout, "GET /watch on " + authority() + ": no data for 100ms"));
  // The stream is finished: the error sticks.
  EXPECT_EQ(test::run(context_, stream->next_line(milliseconds(100))).error(), idle.error());
}

TEST_F(ClientTimeoutTest, ReadRestTimesOut) {
  start(test::stream_pushed(500), {.tls = false});
  server_->push("{\"kind\":\"Status\",");
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<LineStream> stream,
      test::run(context_, client_->stream({.method = Method::kGet, .target = "/watch"})));
  EXPECT_EQ(stream->status(), 500U);
  const Result<std::string> rest = test::run(context_, stream->read_rest(milliseconds(100)));
  ASSERT_FALSE(rest.has_value());
  EXPECT_EQ(rest.error(),
            Error(ErrorCode::kTimeout, "GET /watch on " + authority() + ": timed out after 100ms"));
}

}  // namespace
}  // namespace nmo::http
