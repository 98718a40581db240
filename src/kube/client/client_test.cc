// The kube Client's own bounds against an in-process HTTP server: a rate-limit wait beyond its
// deadline fails at once as a client-side throttle (docs/reliability.md, "Hostile clients"), and
// the API warnings remembered to log each once are capped. The rest of the client is tested
// against the real API server (test/integration/).
#include "kube/client/client.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/log.h"
#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "http/testing/test_server.h"

namespace nmo::kube {
namespace {

class ClientBoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Each GET of /w/<n> answers with the warning "w<n>".
    ASSERT_OK_AND_ASSIGN(
        server_, http::test::TestServer::start(
                     {.handler = http::test::answer([](const http::test::ReceivedRequest& r) {
                        return http::test::ServerResponse{
                            .status = 200,
                            .headers = {{"Content-Type", "application/json"},
                                        {"Warning", "299 - \"" + r.target.substr(3) + "\""}},
                            .body = "{}"};
                      })}));
    log::set_writer([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override { log::set_writer({}); }

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

}  // namespace
}  // namespace nmo::kube
