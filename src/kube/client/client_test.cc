// The kube Client's own bounds against an in-process HTTP server: a rate-limit wait beyond its
// deadline fails at once as a client-side throttle (docs/reliability.md, "Hostile clients"), the
// API warnings remembered to log each once are capped, and the API server's 429s slow down the
// class of the throttled request (server_throttle.h). The rest of the client is tested against
// the real API server (test/integration/).
#include "kube/client/client.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/log.h"
#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "http/testing/test_server.h"

namespace nmo::kube {
namespace {

using Respond = std::function<http::test::ServerResponse(const http::test::ReceivedRequest&)>;

// A Client against an in-process server answering with `respond`, its log lines captured.
class InProcessServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::set_writer([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override { log::set_writer({}); }

  void serve(Respond respond) {
    auto started =
        http::test::TestServer::start({.handler = http::test::answer(std::move(respond))});
    ASSERT_TRUE(started.has_value()) << started.error().describe();
    server_ = std::move(*started);
  }

  std::unique_ptr<Client> client(ClientOptions options) {
    RestConfig config;
    config.server = "http://127.0.0.1:" + server_->port();
    config.scheme = "http";
    config.host = "127.0.0.1";
    config.port = server_->port();
    auto created = Client::create(io_.get_executor(), config, options);
    EXPECT_TRUE(created.has_value());
    return created ? std::move(*created) : nullptr;
  }

  Result<boost::json::value> get(Client& client, const std::string& path) {
    return http::test::run(io_, client.get_json(path));
  }

  // How many logged lines mention `text`.
  int logged(const std::string& text) const {
    int count = 0;
    for (const auto& line : lines_) count += line.find(text) != std::string::npos ? 1 : 0;
    return count;
  }

  asio::io_context io_;
  std::unique_ptr<http::test::TestServer> server_;
  std::vector<std::string> lines_;
};

class ClientBoundsTest : public InProcessServerTest {
 protected:
  void SetUp() override {
    InProcessServerTest::SetUp();
    // Each GET of /w/<n> answers with the warning "w<n>".
    serve([](const http::test::ReceivedRequest& r) {
      return http::test::ServerResponse{
          .status = 200,
          .headers = {{"Content-Type", "application/json"},
                      {"Warning", "299 - \"" + r.target.substr(3) + "\""}},
          .body = "{}"};
    });
  }
};

TEST_F(ClientBoundsTest, ARateLimitWaitPastItsDeadlineFailsAtOnce) {
  ClientOptions options;
  options.qps = 0.1;  // the next token is 10 s away
  options.burst = 1;
  options.max_rate_limit_wait = std::chrono::milliseconds(100);
  auto limited = client(options);
  ASSERT_NE(limited, nullptr);
  EXPECT_OK(get(*limited, "/w/first"));
  const Result<boost::json::value> refused = get(*limited, "/w/second");
  ASSERT_FALSE(refused.has_value());
  EXPECT_TRUE(is_client_throttled(refused.error())) << refused.error().describe();
  EXPECT_EQ(refused.error().http_status, 0);
  EXPECT_EQ(refused.error().retry_after, std::chrono::seconds(1));
  EXPECT_EQ(server_->requests().size(), 1U) << "the refused request never reached the server";
  // A throttle from the API server is not the client's own.
  EXPECT_FALSE(is_client_throttled(Error(ErrorCode::kTooManyRequests, "slow down", 429)));
}

TEST_F(ClientBoundsTest, ZeroOrNegativeQpsIsNoClientSideRateLimit) {
  for (const double qps : {0.0, -1.0}) {
    ClientOptions options;
    options.qps = qps;
    options.burst = 1;
    // Bounds a bucket of one token would trip at the second request.
    options.max_rate_limit_wait = std::chrono::milliseconds(0);
    options.max_rate_limit_waiters = 0;
    auto unlimited = client(options);
    ASSERT_NE(unlimited, nullptr);
    const std::size_t before = server_->requests().size();
    for (int i = 0; i < 50; ++i) EXPECT_OK(get(*unlimited, "/w/q" + std::to_string(i)));
    EXPECT_EQ(server_->requests().size() - before, 50U) << "qps " << qps;
  }
}

TEST_F(ClientBoundsTest, WarningsRememberedToLogOnceAreCapped) {
  ClientOptions options;
  options.qps = 1e6;
  options.burst = 1000;
  auto unlimited = client(options);
  ASSERT_NE(unlimited, nullptr);
  for (int i = 0; i < 300; ++i) EXPECT_OK(get(*unlimited, "/w/w" + std::to_string(i) + "x"));
  EXPECT_EQ(logged("w0x"), 1);
  // A recent warning is still remembered, the oldest were forgotten to make room.
  EXPECT_OK(get(*unlimited, "/w/w299x"));
  EXPECT_EQ(logged("w299x"), 1);
  EXPECT_OK(get(*unlimited, "/w/w0x"));
  EXPECT_EQ(logged("w0x"), 2);
}

// A Status answer of 429 as kube-apiserver's Priority and Fairness sends it, with `retry_after`
// seconds and the flow schema and priority level it charged.
http::test::ServerResponse apf_throttle(int retry_after) {
  return {.status = 429,
          .headers = {{"Content-Type", "application/json"},
                      {"Retry-After", std::to_string(retry_after)},
                      {"X-Kubernetes-PF-FlowSchema-UID", "fs-5b8d"},
                      {"X-Kubernetes-PF-PriorityLevel-UID", "pl-workload-low"}},
          .body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                  R"("message":"Too many requests, please try again later.",)"
                  R"("reason":"TooManyRequests","code":429})"};
}

http::test::ServerResponse ok() {
  return {.status = 200, .headers = {{"Content-Type", "application/json"}}, .body = "{}"};
}

class ClientThrottleTest : public InProcessServerTest {
 protected:
  // A client whose jitter is always at its bottom, so waits are exact floors.
  std::unique_ptr<Client> client_with(ClientOptions options) {
    options.random = [] { return 0.0; };
    return client(std::move(options));
  }

  // One GET whose first `throttled` attempts the server throttles with `retry_after` seconds,
  // sent by a client whose backoff starts at `backoff`: the times between the arrivals of its
  // attempts.
  std::vector<std::chrono::milliseconds> gaps_of_throttled_get(int throttled, int retry_after,
                                                               std::chrono::milliseconds backoff) {
    serve([this, throttled, retry_after](const http::test::ReceivedRequest&) {
      const std::lock_guard lock(mu_);
      arrivals_.push_back(std::chrono::steady_clock::now());
      return std::ssize(arrivals_) <= throttled ? apf_throttle(retry_after) : ok();
    });
    ClientOptions options;
    options.throttle_backoff = backoff;
    auto c = client_with(options);
    EXPECT_NE(c, nullptr);
    if (c != nullptr) {
      EXPECT_OK(get(*c, "/api/v1/pods"));
    }
    const std::lock_guard lock(mu_);
    std::vector<std::chrono::milliseconds> gaps;
    for (std::size_t i = 1; i < arrivals_.size(); ++i) {
      gaps.push_back(
          std::chrono::duration_cast<std::chrono::milliseconds>(arrivals_[i] - arrivals_[i - 1]));
    }
    return gaps;
  }

  Result<boost::json::value> post(Client& client, const std::string& path) {
    return http::test::run(io_, client.create(path, boost::json::object{}));
  }

  // Whether the client itself holds back a write (is_client_throttled()), sending nothing.
  bool write_held(Client& client) {
    const Result<boost::json::value> held = post(client, "/api/v1/namespaces/a/configmaps");
    return !held.has_value() && is_client_throttled(held.error());
  }

  std::mutex mu_;
  std::vector<std::chrono::steady_clock::time_point> arrivals_;  // guarded by mu_
};

TEST_F(ClientThrottleTest, RetriesOfAThrottledReadWaitLongerEachTime) {
  const std::vector<std::chrono::milliseconds> waited =
      gaps_of_throttled_get(3, 0, std::chrono::milliseconds(150));
  ASSERT_EQ(waited.size(), 3U);
  EXPECT_GE(waited[0], std::chrono::milliseconds(150));
  EXPECT_GE(waited[1], std::chrono::milliseconds(300));
  EXPECT_GE(waited[2], std::chrono::milliseconds(600));
}

TEST_F(ClientThrottleTest, RetryAfterIsAFloorOfTheWait) {
  const std::vector<std::chrono::milliseconds> waited =
      gaps_of_throttled_get(1, 1, std::chrono::milliseconds(10));
  ASSERT_EQ(waited.size(), 1U);
  EXPECT_GE(waited[0], std::chrono::seconds(1));
}

TEST_F(ClientThrottleTest, AWaitPastTheDeadlineFailsWithoutSending) {
  serve([](const http::test::ReceivedRequest&) { return apf_throttle(5); });
  ClientOptions options;
  options.request_timeout = std::chrono::seconds(1);
  auto c = client_with(options);
  ASSERT_NE(c, nullptr);
  for (int call = 0; call < 2; ++call) {
    const Result<boost::json::value> refused = get(*c, "/api/v1/pods");
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().message,
              "the API server is throttling read requests: waiting for the Retry-After and "
              "backoff of its 429s would pass this request's deadline (1000ms)");
    EXPECT_TRUE(is_client_throttled(refused.error()));
    EXPECT_EQ(refused.error().retry_after, std::chrono::seconds(5));
  }
  EXPECT_EQ(server_->requests().size(), 1U) << "the second call never reached the server";
}

TEST_F(ClientThrottleTest, AThrottledClassDoesNotDelayTheOther) {
  serve([](const http::test::ReceivedRequest& r) {
    return r.method == "POST" ? apf_throttle(20) : ok();
  });
  ClientOptions options;
  options.max_retries = 0;
  options.request_timeout = std::chrono::seconds(5);
  auto c = client_with(options);
  ASSERT_NE(c, nullptr);
  const Result<boost::json::value> throttled = post(*c, "/api/v1/namespaces/a/configmaps");
  ASSERT_FALSE(throttled.has_value());
  EXPECT_EQ(throttled.error().http_status, 429);
  // Reads go on; writes wait (20 s, past their 5 s deadline: refused at once).
  EXPECT_OK(get(*c, "/api/v1/pods"));
  EXPECT_TRUE(write_held(*c));
  EXPECT_EQ(server_->requests().size(), 2U);
}

TEST_F(ClientThrottleTest, AThrottledEvictionSlowsWritesAndAPdbRefusalDoesNot) {
  serve([](const http::test::ReceivedRequest& r) {
    if (r.target.find("/pods/guarded/eviction") != std::string::npos) {
      return http::test::ServerResponse{
          .status = 429,
          .headers = {{"Content-Type", "application/json"}, {"Retry-After", "20"}},
          .body =
              R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
              R"("message":"Cannot evict pod as it would violate the pod's disruption budget.",)"
              R"("reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget",)"
              R"("message":"The disruption budget db needs 1 healthy pods and has 1"}]},)"
              R"("code":429})"};
    }
    return r.target.find("/eviction") != std::string::npos ? apf_throttle(20) : ok();
  });
  ClientOptions options;
  options.request_timeout = std::chrono::seconds(5);
  auto c = client_with(options);
  ASSERT_NE(c, nullptr);
  ASSERT_OK_AND_ASSIGN(const EvictionResult blocked,
                       http::test::run(io_, c->evict("a", "guarded", {})));
  EXPECT_EQ(blocked.outcome, EvictionOutcome::kBlockedByPdb);
  EXPECT_OK(post(*c, "/api/v1/namespaces/a/configmaps"));
  ASSERT_OK_AND_ASSIGN(const EvictionResult throttled,
                       http::test::run(io_, c->evict("a", "web", {})));
  EXPECT_EQ(throttled.outcome, EvictionOutcome::kThrottled);
  EXPECT_TRUE(write_held(*c));
  EXPECT_EQ(server_->requests().size(), 3U);
}

TEST_F(ClientThrottleTest, ThrottlingIsLoggedOncePerIntervalWithItsPriorityLevel) {
  serve([](const http::test::ReceivedRequest&) { return apf_throttle(0); });
  ClientOptions options;
  options.throttle_backoff = std::chrono::milliseconds(5);
  options.max_throttle_backoff = std::chrono::milliseconds(10);
  auto c = client_with(options);
  ASSERT_NE(c, nullptr);
  for (int call = 0; call < 3; ++call) {
    const Result<boost::json::value> refused = get(*c, "/api/v1/pods");
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().http_status, 429);
  }
  EXPECT_EQ(server_->requests().size(), 15U);  // 3 calls of 1 + max_retries attempts
  EXPECT_EQ(logged("slowing down their class"), 1);
  EXPECT_EQ(logged("pl-workload-low"), 1);
  EXPECT_EQ(logged("fs-5b8d"), 1);
}

}  // namespace
}  // namespace nmo::kube
