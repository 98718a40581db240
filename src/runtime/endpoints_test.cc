// parse_bind_address(), the probe and metrics handlers called directly, and a server's
// connection counters in the exposition. The secure path's answers when no review is needed or
// possible are checked here; its TokenReview and SubjectAccessReview need an API server and are
// tested end to end (test/e2e/metrics_test.cc).
#include "runtime/endpoints.h"

#include <memory>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "kube/client/testing/unexpected_client.h"

namespace nmo::runtime {
namespace {

using ::testing::HasSubstr;

TEST(ParseBindAddressTest, AcceptsGoStyleListenAddresses) {
  ASSERT_OK_AND_ASSIGN(auto any, parse_bind_address(":8443"));
  EXPECT_EQ(any, (BindAddress{.ip = "::", .port = 8443}));
  ASSERT_OK_AND_ASSIGN(auto loopback, parse_bind_address("127.0.0.1:8080"));
  EXPECT_EQ(loopback, (BindAddress{.ip = "127.0.0.1", .port = 8080}));
  ASSERT_OK_AND_ASSIGN(auto v6, parse_bind_address("[::1]:0"));
  EXPECT_EQ(v6, (BindAddress{.ip = "::1", .port = 0}));
  ASSERT_OK_AND_ASSIGN(auto disabled, parse_bind_address("0"));
  EXPECT_EQ(disabled, std::nullopt);
}

TEST(ParseBindAddressTest, SaysWhatIsWrong) {
  auto no_port = parse_bind_address("8443");
  ASSERT_FALSE(no_port.has_value());
  EXPECT_EQ(no_port.error().message,
            "bind address \"8443\": expected host:port, :port or 0 (disabled)");
  auto host = parse_bind_address("localhost:8080");
  ASSERT_FALSE(host.has_value());
  EXPECT_EQ(host.error().message,
            "bind address \"localhost:8080\": \"localhost\" is not an IP address");
  auto port = parse_bind_address(":99999");
  ASSERT_FALSE(port.has_value());
  EXPECT_EQ(port.error().message, "bind address \":99999\": \"99999\" is not a port number");
}

ProbeCheck passing() {
  return []() -> asio::awaitable<std::optional<std::string>> { co_return std::nullopt; };
}
ProbeCheck failing(std::string why) {
  return [why]() -> asio::awaitable<std::optional<std::string>> { co_return why; };
}

http::Response call(const http::Handler& handler, http::Method method, std::string target) {
  asio::io_context io;
  return http::test::run(io, handler(http::Request{.method = method, .target = std::move(target)}));
}

TEST(ProbeHandlerTest, AnswersEachProbeWithItsOwnCheck) {
  const http::Handler handler = probe_handler(passing(), failing("caches not synced"));
  const http::Response healthz = call(handler, http::Method::kGet, "/healthz");
  EXPECT_EQ(healthz.status, 200U);
  EXPECT_EQ(healthz.body, "ok");
  const http::Response readyz = call(handler, http::Method::kGet, "/readyz?verbose");
  EXPECT_EQ(readyz.status, 500U);
  EXPECT_EQ(readyz.body, "readyz check failed: caches not synced\n");
  EXPECT_EQ(call(handler, http::Method::kGet, "/metrics").status, 404U);
  EXPECT_EQ(call(handler, http::Method::kPost, "/healthz").status, 405U);
}

TEST(MetricsHandlerTest, ServesTheExpositionWithoutAnAuthorizer) {
  ManagerMetrics metrics;
  metrics.set_leader("lease", true);
  const http::Handler handler = metrics_handler(metrics, nullptr);
  const http::Response response = call(handler, http::Method::kGet, "/metrics");
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(response.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(response.body, HasSubstr("leader_election_master_status{name=\"lease\"} 1\n"));
  EXPECT_EQ(call(handler, http::Method::kGet, "/other").status, 404U);
}

TEST(ExportConnectionStatsTest, EachScrapeReportsTheServersCountersPerReason) {
  ManagerMetrics metrics;
  auto webhook = std::make_shared<http::ConnectionStats>();
  auto probes = std::make_shared<http::ConnectionStats>();
  export_connection_stats(metrics, "webhook", webhook);
  export_connection_stats(metrics, "health-probes", probes);
  EXPECT_THAT(metrics.serialize(),
              HasSubstr("http_server_connections_shed_total{reason=\"header_timeout\",server="
                        "\"webhook\"} 0\n"));
  for (int i = 0; i < 3; ++i) webhook->count_accepted();
  webhook->count_shed(http::ShedReason::kIdle);
  probes->count_shed(http::ShedReason::kIncomplete);
  probes->count_shed(http::ShedReason::kIncomplete);
  const std::string text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("http_server_connections_accepted_total{server=\"webhook\"} 3\n"));
  EXPECT_THAT(
      text,
      HasSubstr("http_server_connections_shed_total{reason=\"idle\",server=\"webhook\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("http_server_connections_shed_total{reason=\"incomplete\",server="
                              "\"health-probes\"} 2\n"));
  // Counted again at the next scrape, not added twice.
  EXPECT_THAT(metrics.serialize(),
              HasSubstr("http_server_connections_accepted_total{server=\"webhook\"} 3\n"));
}

// An authorization lane whose rate limit is used up: every review is refused before it is sent.
class SaturatedClient final : public kube::testing::UnexpectedClient {
 public:
  asio::awaitable<Result<boost::json::value>> create(std::string /*path*/,
                                                     boost::json::value /*object*/,
                                                     kube::WriteOptions /*options*/) override {
    ++creates;
    Error error(ErrorCode::kTooManyRequests, "client-side rate limit exceeded");
    error.retry_after = std::chrono::seconds(1);
    co_return error;
  }
  int creates = 0;
};

http::Response call_with_token(const http::Handler& handler, const std::string& authorization) {
  asio::io_context io;
  http::Request request{.method = http::Method::kGet, .target = "/metrics"};
  if (!authorization.empty()) request.headers.emplace_back("Authorization", authorization);
  return http::test::run(io, handler(std::move(request)));
}

TEST(MetricsHandlerTest, TurnsCallersAwayWithRetryAfterWhenTheyCannotBeCheckedNow) {
  ManagerMetrics metrics;
  SaturatedClient client;
  MetricsAuthorizer authorizer(client);
  const http::Handler handler = metrics_handler(metrics, &authorizer);
  const http::Response busy = call_with_token(handler, "Bearer made-up");
  EXPECT_EQ(busy.status, 503U);
  EXPECT_EQ(busy.header("Retry-After"), "1");
  EXPECT_THAT(busy.body, HasSubstr("too many /metrics callers to check now"));
  EXPECT_EQ(client.creates, 1);
  // No token at all needs no review.
  const http::Response anonymous = call_with_token(handler, "");
  EXPECT_EQ(anonymous.status, 401U);
  EXPECT_EQ(anonymous.body, "Unauthorized: no bearer token\n");
  EXPECT_EQ(client.creates, 1);
}

}  // namespace
}  // namespace nmo::runtime
