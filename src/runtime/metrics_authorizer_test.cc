// MetricsAuthorizer against a scripted API client and a FakeClock: how long answers are
// trusted, that refused tokens cannot push out accepted ones, that one token under review is
// reviewed once however many callers present it, and that reviews in flight and a saturated
// client turn callers away at once. The real TokenReview and SubjectAccessReview are tested end
// to end (test/e2e/metrics_test.cc).
#include "runtime/metrics_authorizer.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/redirect_error.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "kube/client/testing/unexpected_client.h"

namespace nmo::runtime {
namespace {

namespace json = boost::json;
using std::chrono::seconds;
using Verdict = AccessDecision::Verdict;

constexpr const char* kTokenReviews = "/apis/authentication.k8s.io/v1/tokenreviews";

// Answers TokenReviews from `users` (token -> username) and SubjectAccessReviews from
// `allowed` (usernames). While held (hold(true)), every review waits.
class FakeClient final : public kube::testing::UnexpectedClient {
 public:
  explicit FakeClient(asio::io_context& io) : release_(io) { hold(false); }

  asio::awaitable<Result<json::value>> create(std::string path, json::value object,
                                              kube::WriteOptions /*options*/) override {
    if (throttled) {
      Error error(ErrorCode::kTooManyRequests, "client-side rate limit exceeded");
      error.retry_after = seconds(1);
      co_return error;
    }
    const bool token_review = path == kTokenReviews;
    ++(token_review ? token_reviews : access_reviews);
    ++waiting;
    boost::system::error_code ignored;
    co_await release_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    --waiting;
    if (failing) co_return Error(ErrorCode::kUnavailable, "connection refused");
    const json::object& spec = object.as_object().at("spec").as_object();
    if (token_review) {
      const auto user = users.find(std::string(spec.at("token").as_string()));
      if (user == users.end()) {
        co_return json::value{{"status", {{"authenticated", false}, {"error", "invalid token"}}}};
      }
      co_return json::value{
          {"status",
           {{"authenticated", true},
            {"user",
             {{"username", user->second}, {"groups", json::array{"system:authenticated"}}}}}}};
    }
    const bool allow = allowed.contains(std::string(spec.at("user").as_string()));
    co_return json::value{{"status", {{"allowed", allow}, {"reason", allow ? "" : "no rule"}}}};
  }

  // While held, reviews wait; hold(false) lets the waiting ones and every later one through.
  void hold(bool held) {
    if (held) {
      release_.expires_at(asio::steady_timer::time_point::max());
    } else {
      release_.expires_at(asio::steady_timer::time_point::min());
    }
  }

  std::map<std::string, std::string> users;
  std::set<std::string> allowed;
  bool throttled = false;
  bool failing = false;
  int token_reviews = 0;
  int access_reviews = 0;
  int waiting = 0;

 private:
  asio::steady_timer release_;
};

class MetricsAuthorizerTest : public ::testing::Test {
 protected:
  MetricsAuthorizerTest() : client_(io_) {
    client_.users = {{"scraper-token", "prometheus"}, {"stranger-token", "stranger"}};
    client_.allowed = {"prometheus"};
  }

  MetricsAuthorizer& authorizer(MetricsAuthorizerOptions options = {}) {
    options.on_review = [this](std::string_view review, std::string_view result) {
      reviews_.push_back(std::string(review) + " " + std::string(result));
    };
    options.on_shed = [this](std::string_view reason) { shed_.emplace_back(reason); };
    authorizer_.emplace(client_, clock_, std::move(options));
    return *authorizer_;
  }

  // Runs one authorize() to its end.
  Result<AccessDecision> ask(const std::string& token) {
    return http::test::run(io_, authorizer_->authorize("Bearer " + token, "/metrics", "get"));
  }

  // Starts authorize() without waiting; its answer lands in the returned slot.
  std::shared_ptr<std::optional<Result<AccessDecision>>> start(const std::string& token) {
    auto slot = std::make_shared<std::optional<Result<AccessDecision>>>();
    asio::co_spawn(
        io_,
        [this, token, slot]() -> asio::awaitable<void> {
          slot->emplace(co_await authorizer_->authorize("Bearer " + token, "/metrics", "get"));
        },
        asio::detached);
    return slot;
  }

  void run_ready() {
    io_.restart();
    io_.poll();
  }

  asio::io_context io_;
  FakeClock clock_;
  FakeClient client_;
  std::optional<MetricsAuthorizer> authorizer_;
  std::vector<std::string> reviews_;
  std::vector<std::string> shed_;
};

TEST_F(MetricsAuthorizerTest, TrustsATokenForAMinuteAndAnAllowedAccessForFiveMinutes) {
  authorizer();
  ASSERT_OK_AND_ASSIGN(const AccessDecision first, ask("scraper-token"));
  EXPECT_EQ(first.verdict, Verdict::kAllowed);
  EXPECT_EQ(first.user, "prometheus");
  EXPECT_EQ(reviews_,
            (std::vector<std::string>{"TokenReview authenticated", "SubjectAccessReview allowed"}));

  clock_.advance(seconds(59));
  ASSERT_OK_AND_ASSIGN(const AccessDecision cached, ask("scraper-token"));
  EXPECT_EQ(cached.verdict, Verdict::kAllowed);
  EXPECT_EQ(client_.token_reviews, 1);
  EXPECT_EQ(client_.access_reviews, 1);

  clock_.advance(seconds(2));  // the token's review is stale, the access decision is not
  ASSERT_OK_AND_ASSIGN(const AccessDecision again, ask("scraper-token"));
  EXPECT_EQ(again.verdict, Verdict::kAllowed);
  EXPECT_EQ(client_.token_reviews, 2);
  EXPECT_EQ(client_.access_reviews, 1);

  clock_.advance(seconds(240));  // 301 s after the first access review
  ASSERT_OK_AND_ASSIGN(const AccessDecision later, ask("scraper-token"));
  EXPECT_EQ(later.verdict, Verdict::kAllowed);
  EXPECT_EQ(client_.token_reviews, 3);
  EXPECT_EQ(client_.access_reviews, 2);
}

TEST_F(MetricsAuthorizerTest, TrustsADenialForThirtySeconds) {
  authorizer();
  ASSERT_OK_AND_ASSIGN(const AccessDecision denied, ask("stranger-token"));
  EXPECT_EQ(denied.verdict, Verdict::kForbidden);
  EXPECT_EQ(denied.reason, "user \"stranger\" may not get /metrics (no rule)");
  clock_.advance(seconds(29));
  EXPECT_EQ(ask("stranger-token")->verdict, Verdict::kForbidden);
  EXPECT_EQ(client_.access_reviews, 1);
  // A binding made meanwhile counts once the denial is stale.
  client_.allowed.insert("stranger");
  clock_.advance(seconds(2));
  EXPECT_EQ(ask("stranger-token")->verdict, Verdict::kAllowed);
  EXPECT_EQ(client_.access_reviews, 2);
  EXPECT_EQ(client_.token_reviews, 1);
}

TEST_F(MetricsAuthorizerTest, RefusedTokensAreTrustedForAMinute) {
  authorizer();
  ASSERT_OK_AND_ASSIGN(const AccessDecision refused, ask("made-up"));
  EXPECT_EQ(refused.verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(refused.reason, "invalid token");
  clock_.advance(seconds(59));
  EXPECT_EQ(ask("made-up")->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(client_.token_reviews, 1);
  clock_.advance(seconds(2));
  EXPECT_EQ(ask("made-up")->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(client_.token_reviews, 2);
  EXPECT_EQ(reviews_, (std::vector<std::string>{"TokenReview unauthenticated",
                                                "TokenReview unauthenticated"}));
}

TEST_F(MetricsAuthorizerTest, RandomTokensCannotPushOutAnAcceptedOne) {
  MetricsAuthorizerOptions options;
  options.max_refused_tokens = 4;
  authorizer(options);
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(ask("random-" + std::to_string(i))->verdict, Verdict::kUnauthenticated);
  }
  EXPECT_EQ(client_.token_reviews, 101);
  // The scraper's token is still known ...
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
  EXPECT_EQ(client_.token_reviews, 101);
  // ... the last refused ones are remembered, the earlier ones forgotten (bounded).
  EXPECT_EQ(ask("random-99")->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(client_.token_reviews, 101);
  EXPECT_EQ(ask("random-0")->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(client_.token_reviews, 102);
}

TEST_F(MetricsAuthorizerTest, CallersWithOneTokenShareOneReview) {
  authorizer();
  client_.hold(true);
  std::vector<std::shared_ptr<std::optional<Result<AccessDecision>>>> answers;
  for (int i = 0; i < 50; ++i) answers.push_back(start("scraper-token"));
  run_ready();
  EXPECT_EQ(client_.waiting, 1);
  EXPECT_EQ(client_.token_reviews, 1);
  client_.hold(false);
  run_ready();
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer->has_value());
    ASSERT_TRUE(answer->value().has_value()) << answer->value().error().describe();
    EXPECT_EQ(answer->value()->verdict, Verdict::kAllowed);
  }
  EXPECT_EQ(client_.token_reviews, 1);
  EXPECT_EQ(client_.access_reviews, 1);
  EXPECT_TRUE(shed_.empty());
}

TEST_F(MetricsAuthorizerTest, ReviewsInFlightAreBoundedAndTheRestTurnedAwayAtOnce) {
  MetricsAuthorizerOptions options;
  options.max_in_flight = 3;
  authorizer(options);
  client_.hold(true);
  std::vector<std::shared_ptr<std::optional<Result<AccessDecision>>>> answers;
  for (int i = 0; i < 5; ++i) answers.push_back(start("random-" + std::to_string(i)));
  run_ready();
  EXPECT_EQ(client_.waiting, 3);
  // The two beyond the bound are answered while the three reviews still wait.
  int busy = 0;
  for (const auto& answer : answers) {
    if (!answer->has_value()) continue;
    ASSERT_TRUE(answer->value().has_value());
    EXPECT_EQ(answer->value()->verdict, Verdict::kBusy);
    EXPECT_EQ(answer->value()->retry_after, seconds(1));
    ++busy;
  }
  EXPECT_EQ(busy, 2);
  EXPECT_EQ(shed_, (std::vector<std::string>{"in_flight", "in_flight"}));
  client_.hold(false);
  run_ready();
  EXPECT_EQ(client_.token_reviews, 3);
  // Once they are answered, new callers are served again.
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
}

TEST_F(MetricsAuthorizerTest, ASaturatedClientTurnsCallersAwayAndNothingIsCached) {
  authorizer();
  client_.throttled = true;
  ASSERT_OK_AND_ASSIGN(const AccessDecision busy, ask("scraper-token"));
  EXPECT_EQ(busy.verdict, Verdict::kBusy);
  EXPECT_EQ(shed_, (std::vector<std::string>{"rate_limit"}));
  EXPECT_TRUE(reviews_.empty()) << "a throttled review was never sent";
  client_.throttled = false;
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
  EXPECT_EQ(client_.token_reviews, 1);
}

TEST_F(MetricsAuthorizerTest, AnUnreachableApiServerIsAnErrorAndNothingIsCached) {
  authorizer();
  client_.failing = true;
  const Result<AccessDecision> failed = ask("scraper-token");
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(reviews_, (std::vector<std::string>{"TokenReview error"}));
  client_.failing = false;
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
  EXPECT_EQ(client_.token_reviews, 2);
}

TEST_F(MetricsAuthorizerTest, NoBearerTokenIsRefusedWithoutAReview) {
  authorizer();
  const Result<AccessDecision> none =
      http::test::run(io_, authorizer_->authorize("Basic abc", "/metrics", "get"));
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(none->reason, "no bearer token");
  EXPECT_EQ(client_.token_reviews, 0);
}

}  // namespace
}  // namespace nmo::runtime
