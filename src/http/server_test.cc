// Server: serving over TLS with keep-alive, what the server answers by itself (400, 405,
// 431, 500), timeouts, start-up failures, and the graceful stop. Our own http::Client is the
// caller; raw sockets send what a well-behaved client never would.
#include "http/server.h"

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/cert_dir.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"

namespace nmo::http {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Answers GET/POST /echo with "<METHOD> <target> <body>", 404 elsewhere.
Handler echo_handler() {
  return [](Request request) -> asio::awaitable<Response> {
    if (request.target != "/echo") {
      co_return Response{.status = 404, .headers = {}, .body = "not found"};
    }
    co_return Response{
        .status = 200,
        .headers = {{"Content-Type", "text/plain"}},
        .body = std::string(to_string(request.method)) + " " + request.target + " " + request.body};
  };
}

// What a raw client got back: everything the server wrote until it closed the connection.
std::string raw_exchange(std::uint16_t port, const std::string& bytes,
                         const std::string& address = "127.0.0.1") {
  asio::io_context context;
  asio::ip::tcp::socket socket(context);
  boost::system::error_code error;
  socket.connect({asio::ip::make_address(address), port}, error);
  EXPECT_FALSE(error) << error.message();
  asio::write(socket, asio::buffer(bytes), error);
  std::string received;
  asio::read(socket, asio::dynamic_buffer(received), error);
  return received;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(pki_, test::make_test_pki());
    certs_.write_pair(pki_.server_cert_pem, pki_.server_key_pem);
  }

  // A TLS server on 127.0.0.1 and a free port, serving `handler`.
  void start(Handler handler, ServerOptions options = {}) {
    options.bind_address = "127.0.0.1";
    options.port = 0;
    options.cert_dir = certs_.path();
    ASSERT_OK_AND_ASSIGN(server_, Server::start(io_.executor(), options, std::move(handler)));
  }
  // The same over plain HTTP.
  void start_plain(Handler handler, ServerOptions options = {}) {
    options.bind_address = "127.0.0.1";
    options.port = 0;
    ASSERT_OK_AND_ASSIGN(server_, Server::start(io_.executor(), options, std::move(handler)));
  }

  std::unique_ptr<Client> make_client(std::size_t max_idle = 16) {
    Result<std::unique_ptr<Client>> client =
        Client::create(context_.get_executor(), {.host = "127.0.0.1",
                                                 .port = std::to_string(server_->port()),
                                                 .tls = true,
                                                 .tls_options = {.ca_pem = pki_.ca_cert_pem},
                                                 .max_idle_connections = max_idle});
    EXPECT_OK(client);
    return std::move(client).value();
  }

  Result<Response> send(Client& client, Request request) {
    return test::run(context_, client.send(std::move(request)));
  }

  void stop(milliseconds grace) { io_.spawn(server_->stop(grace)).get(); }

  test::TestPki pki_;
  test::CertDir certs_;
  test::IoThread io_;         // the server's thread
  asio::io_context context_;  // the clients', run by test::run() on the test thread
  std::unique_ptr<Server> server_;
};

constexpr const char* kCloseRequest = "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

// Whether a TCP connection to `address`:`port` is accepted.
bool connects(const std::string& address, std::uint16_t port) {
  asio::io_context context;
  asio::ip::tcp::socket socket(context);
  boost::system::error_code error;
  socket.connect({asio::ip::make_address(address), port}, error);
  return !error;
}

// "::" is dual stack: one listener answers on the IPv6 and on the IPv4 loopback.
TEST(ServerAddressTest, UnspecifiedIpv6AddressAnswersOnBothLoopbacks) {
  test::IoThread io;
  ServerOptions options;
  options.bind_address = "::";
  ASSERT_OK_AND_ASSIGN(auto server, Server::start(io.executor(), options, echo_handler()));
  for (const char* address : {"::1", "127.0.0.1"}) {
    EXPECT_THAT(raw_exchange(server->port(), kCloseRequest, address), StartsWith("HTTP/1.1 200"))
        << address;
  }
  io.spawn(server->stop(milliseconds(100))).get();
}

TEST(ServerAddressTest, Ipv6LoopbackListensThereAlone) {
  test::IoThread io;
  ServerOptions options;
  options.bind_address = "::1";
  ASSERT_OK_AND_ASSIGN(auto server, Server::start(io.executor(), options, echo_handler()));
  EXPECT_THAT(raw_exchange(server->port(), kCloseRequest, "::1"), StartsWith("HTTP/1.1 200"));
  EXPECT_FALSE(connects("127.0.0.1", server->port()));
  io.spawn(server->stop(milliseconds(100))).get();
}

TEST_F(ServerTest, ServesRequestsOverTlsOnOneKeptAliveConnection) {
  start(echo_handler());
  std::unique_ptr<Client> client = make_client();
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(
        const Response response,
        send(*client, {.method = Method::kPost, .target = "/echo", .body = "hello"}));
    EXPECT_EQ(response.status, 200U);
    EXPECT_EQ(response.body, "POST /echo hello");
    EXPECT_EQ(response.header("Content-Type"), "text/plain");
    EXPECT_EQ(response.header("Connection"), std::nullopt);  // HTTP/1.1: kept alive
  }
  EXPECT_EQ(server_->certificate_generation(), 1U);
}

TEST_F(ServerTest, TheHandlerAnswersUnknownPaths) {
  start(echo_handler());
  std::unique_ptr<Client> client = make_client();
  ASSERT_OK_AND_ASSIGN(const Response response,
                       send(*client, {.method = Method::kGet, .target = "/nothing-here"}));
  EXPECT_EQ(response.status, 404U);
  EXPECT_EQ(response.body, "not found");
}

TEST_F(ServerTest, BodyOverTheLimitGets400WithoutReachingTheHandler) {
  start(echo_handler(), {.max_body_bytes = 1024});
  std::unique_ptr<Client> client = make_client();
  ASSERT_OK_AND_ASSIGN(
      const Response at_limit,
      send(*client, {.method = Method::kPost, .target = "/echo", .body = std::string(1024, 'a')}));
  EXPECT_EQ(at_limit.status, 200U);

  ASSERT_OK_AND_ASSIGN(const Response over, send(*client, {.method = Method::kPost,
                                                           .target = "/echo",
                                                           .body = std::string(100'000, 'a')}));
  EXPECT_EQ(over.status, 400U);
  EXPECT_EQ(over.body, "request body is larger than the limit of 1024 bytes\n");
  EXPECT_EQ(over.header("Connection"), "close");

  // The client's next request gets a fresh connection and is served.
  ASSERT_OK_AND_ASSIGN(const Response after,
                       send(*client, {.method = Method::kGet, .target = "/echo"}));
  EXPECT_EQ(after.status, 200U);
}

TEST_F(ServerTest, MalformedRequestGets400AndTheConnectionIsClosed) {
  start_plain(echo_handler());
  const std::string answer = raw_exchange(server_->port(), "NOT HTTP AT ALL\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_THAT(answer, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(answer, HasSubstr("\r\n\r\nmalformed HTTP request: "));
}

TEST_F(ServerTest, BadContentLengthGets400) {
  start_plain(echo_handler());
  const std::string answer = raw_exchange(
      server_->port(), "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: banana\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 Bad Request\r\n"));
}

TEST_F(ServerTest, UnsupportedMethodGets405) {
  start_plain(echo_handler());
  const std::string answer = raw_exchange(
      server_->port(), "OPTIONS /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(answer, HasSubstr("\r\n\r\nmethod OPTIONS is not supported\n"));
}

TEST_F(ServerTest, OversizedHeaderGets431) {
  start_plain(echo_handler(), {.max_header_bytes = 4096});
  const std::string answer = raw_exchange(
      server_->port(), "GET /echo HTTP/1.1\r\nX-Big: " + std::string(8192, 'x') + "\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 431 "));
  EXPECT_THAT(answer, HasSubstr("request header is larger than the limit of 4096 bytes"));
}

TEST_F(ServerTest, PlainHttpKeepsTheConnectionForTheNextRequest) {
  start_plain(echo_handler());
  const std::string answer = raw_exchange(
      server_->port(),
      "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
  EXPECT_THAT(answer, HasSubstr("\r\n\r\nGET /echo HTTP/1.1 200 OK"));
  EXPECT_THAT(answer, HasSubstr("\r\n\r\nPOST /echo hi"));
}

TEST_F(ServerTest, HandlerThatThrowsGets500) {
  start([](Request /*request*/) -> asio::awaitable<Response> {
    throw std::runtime_error("boom");
    co_return Response{};
  });
  std::unique_ptr<Client> client = make_client();
  ASSERT_OK_AND_ASSIGN(const Response response,
                       send(*client, {.method = Method::kGet, .target = "/"}));
  EXPECT_EQ(response.status, 500U);
  EXPECT_EQ(response.body, "internal error\n");
}

TEST_F(ServerTest, SilentConnectionIsClosedAfterTheHeaderTimeout) {
  start_plain(echo_handler(), {.header_timeout = milliseconds(200)});
  const auto started = std::chrono::steady_clock::now();
  const std::string answer = raw_exchange(server_->port(), "");
  EXPECT_EQ(answer, "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST_F(ServerTest, StartFailsWithoutTheCertificateFiles) {
  test::CertDir empty;
  const Result<std::unique_ptr<Server>> server =
      Server::start(io_.executor(), {.cert_dir = empty.path()}, echo_handler());
  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error(),
            Error(ErrorCode::kInvalid, empty.path() + "/tls.crt: cannot read: No such file "
                                                      "or directory"));
}

TEST_F(ServerTest, StartFailsWhenTheKeyDoesNotMatchTheCertificate) {
  ASSERT_OK_AND_ASSIGN(const test::TestPki other, test::make_test_pki());
  certs_.write_pair(pki_.server_cert_pem, other.server_key_pem);
  const Result<std::unique_ptr<Server>> server =
      Server::start(io_.executor(), {.cert_dir = certs_.path()}, echo_handler());
  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error(), Error(ErrorCode::kInvalid,
                                  certs_.path() + "/tls.key: does not match the certificate in " +
                                      certs_.path() + "/tls.crt"));
}

TEST_F(ServerTest, StartFailsWhenTheCertificateIsNotPem) {
  certs_.write("tls.crt", "not a certificate");
  const Result<std::unique_ptr<Server>> server =
      Server::start(io_.executor(), {.cert_dir = certs_.path()}, echo_handler());
  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error().code, ErrorCode::kInvalid);
  EXPECT_THAT(server.error().message,
              StartsWith(certs_.path() + "/tls.crt: not a PEM certificate chain ("));
}

TEST_F(ServerTest, StartFailsWhenThePortIsTaken) {
  start(echo_handler());
  const std::uint16_t port = server_->port();
  const Result<std::unique_ptr<Server>> second =
      Server::start(io_.executor(), {.bind_address = "127.0.0.1", .port = port}, echo_handler());
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error(),
            Error(ErrorCode::kUnavailable,
                  "listen on 127.0.0.1:" + std::to_string(port) + ": Address already in use"));
}

TEST_F(ServerTest, StartRefusesAHostName) {
  const Result<std::unique_ptr<Server>> server =
      Server::start(io_.executor(), {.bind_address = "localhost"}, echo_handler());
  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error(),
            Error(ErrorCode::kInvalid, "bind address \"localhost\" is not an IP address"));
}

// A handler that tells the test it has started, then answers after `delay`.
struct SlowHandler {
  std::shared_ptr<std::promise<void>> entered = std::make_shared<std::promise<void>>();
  milliseconds delay;

  Handler handler() const {
    return [entered = entered, delay = delay](Request /*request*/) -> asio::awaitable<Response> {
      entered->set_value();
      asio::steady_timer timer(co_await asio::this_coro::executor, delay);
      (void)co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      co_return Response{.status = 200, .headers = {}, .body = "finished"};
    };
  }
};

TEST_F(ServerTest, StopLetsRequestsInFlightFinishThenRefusesConnections) {
  SlowHandler slow{.delay = milliseconds(300)};
  start(slow.handler());
  test::IoThread client_thread;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Client> client,
      Client::create(client_thread.executor(), {.host = "127.0.0.1",
                                                .port = std::to_string(server_->port()),
                                                .tls_options = {.ca_pem = pki_.ca_cert_pem}}));
  std::future<Result<Response>> in_flight =
      client_thread.spawn(client->send({.method = Method::kGet, .target = "/"}));
  slow.entered->get_future().wait();

  stop(std::chrono::seconds(10));
  // Answered before the connection closed (the client may still be reading it).
  ASSERT_EQ(in_flight.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(const Response response, in_flight.get());
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(response.body, "finished");
  EXPECT_EQ(response.header("Connection"), "close");

  const Result<Response> refused =
      client_thread.spawn(client->send({.method = Method::kGet, .target = "/"})).get();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  client->shutdown();
}

TEST_F(ServerTest, StopClosesIdleKeptAliveConnectionsAtOnce) {
  start(echo_handler());
  std::unique_ptr<Client> client = make_client();
  ASSERT_OK(send(*client, {.method = Method::kGet, .target = "/echo"}));  // now idle in the pool
  const auto started = std::chrono::steady_clock::now();
  stop(std::chrono::seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST_F(ServerTest, StopGivesUpOnRequestsThatOutlastTheGracePeriod) {
  SlowHandler slow{.delay = std::chrono::hours(1)};
  start(slow.handler());
  test::IoThread client_thread;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Client> client,
      Client::create(client_thread.executor(), {.host = "127.0.0.1",
                                                .port = std::to_string(server_->port()),
                                                .tls_options = {.ca_pem = pki_.ca_cert_pem}}));
  std::future<Result<Response>> in_flight =
      client_thread.spawn(client->send({.method = Method::kGet, .target = "/"}));
  slow.entered->get_future().wait();

  const auto started = std::chrono::steady_clock::now();
  stop(milliseconds(200));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  const Result<Response> response = in_flight.get();
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable) << response.error().describe();
  client->shutdown();
}

}  // namespace
}  // namespace nmo::http
