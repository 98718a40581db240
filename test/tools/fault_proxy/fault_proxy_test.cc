// FaultProxy in front of an in-process TLS server (http_testing), called through our own HTTP
// client: forwarding (headers, bodies, chunked streams), injected 429/503 answers, eviction
// records, and each network fault.
#include "test/tools/fault_proxy/fault_proxy.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"
#include "http/testing/test_server.h"

namespace nmo::fault_proxy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::chrono::milliseconds kIdle = 10s;

class FaultProxyTest : public ::testing::Test {
 protected:
  void start(http::test::Handler handler) {
    ASSERT_OK_AND_ASSIGN(http::test::TestPki pki, http::test::make_test_pki());
    ASSERT_OK_AND_ASSIGN(server_, http::test::TestServer::start({.handler = std::move(handler),
                                                                 .cert_pem = pki.server_cert_pem,
                                                                 .key_pem = pki.server_key_pem}));
    ASSERT_OK_AND_ASSIGN(
        proxy_, FaultProxy::start(
                    {.host = "127.0.0.1", .port = server_->port(), .ca_pem = pki.ca_cert_pem}));
    http::ClientOptions options;
    options.host = "127.0.0.1";
    options.port = std::to_string(proxy_->port());
    options.tls = false;
    options.request_timeout = kIdle;
    ASSERT_OK_AND_ASSIGN(client_, http::Client::create(context_.get_executor(), options));
  }

  Result<http::Response> send(http::Method method, const std::string& target) {
    return http::test::run(context_,
                           client_->send({.method = method,
                                          .target = target,
                                          .headers = {{"Authorization", "Bearer secret"}},
                                          .body = method == http::Method::kPost ? "{}" : ""}));
  }

  Result<std::unique_ptr<http::LineStream>> watch() {
    return http::test::run(context_,
                           client_->stream({.method = http::Method::kGet, .target = "/watch"}));
  }

  Result<std::optional<std::string>> next(http::LineStream& stream) {
    return http::test::run(context_, stream.next_line(kIdle));
  }

  // Every request answered with 200 and "<method> <target> <Authorization>"; evictions with 201.
  static http::test::Handler echo() {
    return http::test::answer([](const http::test::ReceivedRequest& request) {
      const bool eviction = request.target.ends_with("/eviction");
      return http::test::ServerResponse{
          .status = eviction ? 201U : 200U,
          .body = request.method + " " + request.target + " " +
                  std::string(request.header("Authorization").value_or(""))};
    });
  }

  std::unique_ptr<http::test::TestServer> server_;
  std::unique_ptr<FaultProxy> proxy_;
  asio::io_context context_;
  std::unique_ptr<http::Client> client_;  // destroyed before context_
};

TEST_F(FaultProxyTest, ForwardsRequestsWithTheirHeaders) {
  start(echo());
  ASSERT_OK_AND_ASSIGN(http::Response response, send(http::Method::kGet, "/api/v1/nodes?limit=1"));
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(response.body, "GET /api/v1/nodes?limit=1 Bearer secret");
  ASSERT_OK_AND_ASSIGN(response, send(http::Method::kGet, "/api/v1/pods"));
  EXPECT_EQ(response.body, "GET /api/v1/pods Bearer secret");
  const Counters counters = proxy_->counters();
  EXPECT_EQ(counters.requests_forwarded, 2);
  EXPECT_EQ(counters.connections_accepted, 1);  // kept alive
  EXPECT_EQ(counters.responses_injected, 0);
  EXPECT_FALSE(proxy_->last_injected_at());
}

TEST_F(FaultProxyTest, InjectsThrottlingAsTheApiServerDoesThenForwardsAgain) {
  start(echo());
  proxy_->fail_next(2, 429, 1s);
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(http::Response response, send(http::Method::kGet, "/api/v1/pods"));
    EXPECT_EQ(response.status, 429U);
    EXPECT_EQ(response.header("Retry-After"), "1");
    EXPECT_EQ(response.header("X-Kubernetes-PF-FlowSchema-UID"), "fault-proxy");
    EXPECT_EQ(response.header("X-Kubernetes-PF-PriorityLevel-UID"), "fault-proxy");
    EXPECT_EQ(response.body,
              R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
              R"("message":"Too many requests, please try again later.",)"
              R"("reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429})");
  }
  ASSERT_OK_AND_ASSIGN(http::Response response, send(http::Method::kGet, "/api/v1/pods"));
  EXPECT_EQ(response.status, 200U);

  proxy_->fail_next(1, 503, std::nullopt);
  ASSERT_OK_AND_ASSIGN(response, send(http::Method::kGet, "/api/v1/pods"));
  EXPECT_EQ(response.status, 503U);
  EXPECT_FALSE(response.header("Retry-After"));
  EXPECT_THAT(response.body, HasSubstr(R"("reason":"ServiceUnavailable")"));
  const Counters counters = proxy_->counters();
  EXPECT_EQ(counters.responses_injected, 3);
  EXPECT_EQ(counters.requests_forwarded, 1);
  EXPECT_TRUE(proxy_->last_injected_at());
}

TEST_F(FaultProxyTest, RecordsEvictionsForwardedAndInjected) {
  start(echo());
  ASSERT_OK_AND_ASSIGN(http::Response response,
                       send(http::Method::kPost, "/api/v1/namespaces/ns-1/pods/pod-a/eviction"));
  EXPECT_EQ(response.status, 201U);
  proxy_->fail_next(1, 429, 2s);
  ASSERT_OK_AND_ASSIGN(response,
                       send(http::Method::kPost, "/api/v1/namespaces/ns-1/pods/pod-b/eviction"));
  EXPECT_EQ(response.status, 429U);
  ASSERT_OK_AND_ASSIGN(response, send(http::Method::kPost, "/api/v1/namespaces/ns-1/pods"));
  const std::vector<Eviction> evictions = proxy_->evictions();
  ASSERT_EQ(evictions.size(), 2U);
  EXPECT_EQ(evictions[0].namespace_, "ns-1");
  EXPECT_EQ(evictions[0].pod, "pod-a");
  EXPECT_EQ(evictions[0].status, 201U);
  EXPECT_FALSE(evictions[0].injected);
  EXPECT_TRUE(evictions[0].delivered);
  EXPECT_EQ(evictions[1].pod, "pod-b");
  EXPECT_EQ(evictions[1].status, 429U);
  EXPECT_TRUE(evictions[1].injected);
  EXPECT_TRUE(evictions[1].delivered);
}

TEST_F(FaultProxyTest, RelaysStreamsLineByLineAndDropAllEndsThem) {
  start(http::test::stream_pushed());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<http::LineStream> stream, watch());
  EXPECT_EQ(stream->status(), 200U);
  server_->push("one\n");
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> line, next(*stream));
  EXPECT_EQ(line, "one");
  server_->push("two\nthr");
  server_->push("ee\n");
  ASSERT_OK_AND_ASSIGN(line, next(*stream));
  EXPECT_EQ(line, "two");
  ASSERT_OK_AND_ASSIGN(line, next(*stream));
  EXPECT_EQ(line, "three");

  EXPECT_EQ(proxy_->drop_all(), 1);
  Result<std::optional<std::string>> after = next(*stream);
  ASSERT_FALSE(after.has_value());
  EXPECT_EQ(after.error().code, ErrorCode::kUnavailable) << after.error().describe();
  EXPECT_EQ(proxy_->counters().connections_dropped, 1);
}

TEST_F(FaultProxyTest, StallHoldsBytesBackUntilItEnds) {
  start(http::test::stream_pushed());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<http::LineStream> stream, watch());
  server_->push("one\n");
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> line, next(*stream));
  const auto stalled = std::chrono::steady_clock::now();
  proxy_->stall(400ms);
  server_->push("two\n");
  ASSERT_OK_AND_ASSIGN(line, next(*stream));
  EXPECT_EQ(line, "two");
  EXPECT_GE(std::chrono::steady_clock::now() - stalled, 390ms);
  EXPECT_EQ(proxy_->counters().connections_dropped, 0);
}

TEST_F(FaultProxyTest, RefusesConnectionsThenListensOnTheSamePortAgain) {
  start(echo());
  const std::uint16_t port = proxy_->port();
  ASSERT_OK(send(http::Method::kGet, "/api/v1/pods"));  // a kept-alive connection is open
  proxy_->refuse(500ms);
  EXPECT_EQ(proxy_->drop_all(), 1);
  Result<http::Response> refused = send(http::Method::kGet, "/api/v1/pods");
  ASSERT_FALSE(refused.has_value());
  EXPECT_THAT(refused.error().describe(), HasSubstr("refused"));
  // Polls until the port listens again (the refusal lasts 500 ms), within a deadline.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  Result<http::Response> response = send(http::Method::kGet, "/api/v1/pods");
  while (!response.has_value() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    response = send(http::Method::kGet, "/api/v1/pods");
  }
  ASSERT_OK(response);
  EXPECT_EQ(response->status, 200U);
  EXPECT_EQ(proxy_->port(), port);
}

}  // namespace
}  // namespace nmo::fault_proxy
