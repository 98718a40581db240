// send() over plain HTTP: request line, headers and body reach the server; status, headers and
// body come back; HTTP error statuses are responses, not errors.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

class ClientSendTest : public ::testing::Test {
 protected:
  void start(test::Handler handler) {
    ASSERT_OK_AND_ASSIGN(server_, test::TestServer::start({.handler = std::move(handler)}));
    ASSERT_OK_AND_ASSIGN(
        client_, Client::create(context_.get_executor(),
                                {.host = "127.0.0.1", .port = server_->port(), .tls = false}));
  }

  Result<Response> send(Request request) {
    return test::run(context_, client_->send(std::move(request)));
  }

  asio::io_context context_;
  std::unique_ptr<test::TestServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientSendTest, GetReturnsStatusHeadersAndBody) {
  start(test::answer([](const test::ReceivedRequest& request) {
    return test::ServerResponse{
        .status = 200,
        .headers = {{"Content-Type", "text/plain"}, {"X-Echo", request.target}},
        .body = "hello from " + request.target};
  }));
  ASSERT_OK_AND_ASSIGN(const Response response,
                       send({.method = Method::kGet,
                             .target = "/api/v1/namespaces?limit=1",
                             .headers = {{"Accept", "application/json"}}}));
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(response.body, "hello from /api/v1/namespaces?limit=1");
  EXPECT_EQ(response.header("content-type"), "text/plain");
  EXPECT_EQ(response.header("x-echo"), "/api/v1/namespaces?limit=1");
  EXPECT_EQ(response.header("content-length"), "37");

  const std::vector<test::ReceivedRequest> requests = server_->requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].target, "/api/v1/namespaces?limit=1");
  EXPECT_EQ(requests[0].header("Host"), "127.0.0.1:" + server_->port());
  EXPECT_EQ(requests[0].header("Accept"), "application/json");
  EXPECT_EQ(requests[0].body, "");
}

TEST_F(ClientSendTest, EveryMethodSendsItsVerbAndBody) {
  start(test::answer_with({.status = 200, .headers = {}, .body = "ok"}));
  for (const Method method :
       {Method::kGet, Method::kPost, Method::kPut, Method::kPatch, Method::kDelete}) {
    ASSERT_OK_AND_ASSIGN(
        const Response response,
        send({.method = method,
              .target = "/x",
              .headers = {{"Content-Type", "application/merge-patch+json"}},
              .body = method == Method::kGet ? "" : R"({"spec":{"unschedulable":true}})"}));
    EXPECT_EQ(response.body, "ok");
  }
  const std::vector<test::ReceivedRequest> requests = server_->requests();
  ASSERT_EQ(requests.size(), 5U);
  const char* const verbs[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].method, verbs[i]);
    EXPECT_EQ(requests[i].body, i == 0 ? "" : R"({"spec":{"unschedulable":true}})");
    EXPECT_EQ(requests[i].header("Content-Type"), "application/merge-patch+json");
  }
}

TEST_F(ClientSendTest, HttpErrorStatusesAreResponses) {
  start(test::answer([](const test::ReceivedRequest& request) {
    const unsigned status = request.target == "/missing" ? 404U : 500U;
    return test::ServerResponse{
        .status = status,
        .headers = {{"Content-Type", "application/json"}},
        .body = R"({"kind":"Status","code":)" + std::to_string(status) + "}"};
  }));
  ASSERT_OK_AND_ASSIGN(const Response not_found,
                       send({.method = Method::kGet, .target = "/missing"}));
  EXPECT_EQ(not_found.status, 404U);
  EXPECT_EQ(not_found.body, R"({"kind":"Status","code":404})");
  ASSERT_OK_AND_ASSIGN(const Response broken, send({.method = Method::kGet, .target = "/broken"}));
  EXPECT_EQ(broken.status, 500U);
}

TEST_F(ClientSendTest, RepeatedHeadersComeBackInOrder) {
  start(test::answer_with({.status = 200,
                           .headers = {{"Warning", R"(299 - "first")"},
                                       {"X-Other", "1"},
                                       {"Warning", R"(299 - "second")"}},
                           .body = ""}));
  ASSERT_OK_AND_ASSIGN(const Response response, send({.method = Method::kGet, .target = "/"}));
  EXPECT_THAT(response.header_values("warning"),
              ElementsAre(R"(299 - "first")", R"(299 - "second")"));
}

TEST_F(ClientSendTest, LargeBodyArrivesWhole) {
  const std::string big(3 * 1024 * 1024 + 17, 'x');
  start(test::answer_with({.status = 200, .headers = {}, .body = big}));
  ASSERT_OK_AND_ASSIGN(const Response response, send({.method = Method::kGet, .target = "/big"}));
  EXPECT_EQ(response.body.size(), big.size());
  EXPECT_EQ(response.body, big);
}

TEST_F(ClientSendTest, BodyOverTheLimitIsRefused) {
  start(test::answer_with({.status = 200, .headers = {}, .body = std::string(2048, 'x')}));
  ASSERT_OK_AND_ASSIGN(client_, Client::create(context_.get_executor(), {.host = "127.0.0.1",
                                                                         .port = server_->port(),
                                                                         .tls = false,
                                                                         .max_body_bytes = 1024}));
  const Result<Response> response = send({.method = Method::kGet, .target = "/big"});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kInvalid, "GET /big on 127.0.0.1:" + server_->port() +
                                           ": response body exceeds 1024 bytes"));
}

TEST_F(ClientSendTest, InvalidRequestFailsBeforeConnecting) {
  start(test::answer_with({}));
  const Result<Response> response =
      send({.method = Method::kGet, .target = "/", .headers = {{"X-Bad", "a\nb"}}});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kInvalid, "header \"X-Bad\": value contains CR, LF or NUL"));
  EXPECT_EQ(server_->accepted_connections(), 0);
}

}  // namespace
}  // namespace nmo::http
