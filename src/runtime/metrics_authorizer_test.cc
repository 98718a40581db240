// MetricsAuthorizer against the in-memory API server (its TokenReview and SubjectAccessReview
// answers computed by on_create hooks) and a FakeClock: how long answers are
// trusted, that refused tokens cannot push out accepted ones, that one token under review is
// reviewed once however many callers present it, and that reviews in flight and a saturated
// client turn callers away at once. The real TokenReview and SubjectAccessReview are tested end
// to end (test/e2e/metrics_test.cc).
#include "runtime/metrics_authorizer.h"

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "kube/client/testing/fake_api_server.h"

namespace nmo::runtime {
namespace {

namespace json = boost::json;
using std::chrono::seconds;
using Verdict = AccessDecision::Verdict;

constexpr const char* kTokenReviews = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr const char* kAccessReviews = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

class MetricsAuthorizerTest : public ::testing::Test {
 protected:
  // The API server answers TokenReviews from `users_` (token -> username) and
  // SubjectAccessReviews from `allowed_` (usernames), as the real one answers from its
  // authenticators and RBAC.
  MetricsAuthorizerTest() {
    server_.on_create(kTokenReviews, [this](const json::value& review) -> Result<json::value> {
      const json::object& spec = review.at("spec").as_object();
      const auto user = users_.find(std::string(spec.at("token").as_string()));
      if (user == users_.end()) {
        return json::value{{"status", {{"authenticated", false}, {"error", "invalid token"}}}};
      }
      return json::value{
          {"status",
           {{"authenticated", true},
            {"user",
             {{"username", user->second}, {"groups", json::array{"system:authenticated"}}}}}}};
    });
    server_.on_create(kAccessReviews, [this](const json::value& review) -> Result<json::value> {
      const json::object& spec = review.at("spec").as_object();
      const bool allow = allowed_.contains(std::string(spec.at("user").as_string()));
      return json::value{{"status", {{"allowed", allow}, {"reason", allow ? "" : "no rule"}}}};
    });
  }

  // The authorizer only creates reviews.
  void TearDown() override {
    for (const kube::testing::FakeRequest& request : server_.requests()) {
      EXPECT_TRUE(request.verb == "create" &&
                  (request.path == kTokenReviews || request.path == kAccessReviews))
          << "unexpected " << request.verb << " " << request.path;
    }
  }

  // The reviews sent to the API server.
  [[nodiscard]] std::size_t token_reviews() const { return server_.count("create", kTokenReviews); }
  [[nodiscard]] std::size_t access_reviews() const {
    return server_.count("create", kAccessReviews);
  }

  MetricsAuthorizer& authorizer(MetricsAuthorizerOptions options = {}) {
    options.on_review = [this](std::string_view review, std::string_view result) {
      reviews_.push_back(std::string(review) + " " + std::string(result));
    };
    options.on_shed = [this](std::string_view reason) { shed_.emplace_back(reason); };
    authorizer_.emplace(server_, clock_, std::move(options));
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
  kube::testing::FakeApiServer server_{io_.get_executor()};
  std::map<std::string, std::string> users_{{"scraper-token", "prometheus"},
                                            {"stranger-token", "stranger"}};
  std::set<std::string> allowed_{"prometheus"};
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
  EXPECT_EQ(token_reviews(), 1U);
  EXPECT_EQ(access_reviews(), 1U);

  clock_.advance(seconds(2));  // the token's review is stale, the access decision is not
  ASSERT_OK_AND_ASSIGN(const AccessDecision again, ask("scraper-token"));
  EXPECT_EQ(again.verdict, Verdict::kAllowed);
  EXPECT_EQ(token_reviews(), 2U);
  EXPECT_EQ(access_reviews(), 1U);

  clock_.advance(seconds(240));  // 301 s after the first access review
  ASSERT_OK_AND_ASSIGN(const AccessDecision later, ask("scraper-token"));
  EXPECT_EQ(later.verdict, Verdict::kAllowed);
  EXPECT_EQ(token_reviews(), 3U);
  EXPECT_EQ(access_reviews(), 2U);
}

TEST_F(MetricsAuthorizerTest, TrustsADenialForThirtySeconds) {
  authorizer();
  ASSERT_OK_AND_ASSIGN(const AccessDecision denied, ask("stranger-token"));
  EXPECT_EQ(denied.verdict, Verdict::kForbidden);
  EXPECT_EQ(denied.reason, "user \"stranger\" may not get /metrics (no rule)");
  clock_.advance(seconds(29));
  EXPECT_EQ(ask("stranger-token")->verdict, Verdict::kForbidden);
  EXPECT_EQ(access_reviews(), 1U);
  // A binding made meanwhile counts once the denial is stale.
  allowed_.insert("stranger");
  clock_.advance(seconds(2));
  EXPECT_EQ(ask("stranger-token")->verdict, Verdict::kAllowed);
  EXPECT_EQ(access_reviews(), 2U);
  EXPECT_EQ(token_reviews(), 1U);
}

TEST_F(MetricsAuthorizerTest, RefusedTokensAreTrustedForAMinute) {
  authorizer();
  ASSERT_OK_AND_ASSIGN(const AccessDecision refused, ask("made-up"));
  EXPECT_EQ(refused.verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(refused.reason, "invalid token");
  clock_.advance(seconds(59));
  EXPECT_EQ(ask("made-up")->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(token_reviews(), 1U);
  clock_.advance(seconds(2));
  EXPECT_EQ(ask("made-up")->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(token_reviews(), 2U);
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
  EXPECT_EQ(token_reviews(), 101U);
  // The scraper's token is still known ...
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
  EXPECT_EQ(token_reviews(), 101U);
  // ... the last refused ones are remembered, the earlier ones forgotten (bounded).
  EXPECT_EQ(ask("random-99")->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(token_reviews(), 101U);
  EXPECT_EQ(ask("random-0")->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(token_reviews(), 102U);
}

TEST_F(MetricsAuthorizerTest, CallersWithOneTokenShareOneReview) {
  authorizer();
  server_.hold("create", "");
  std::vector<std::shared_ptr<std::optional<Result<AccessDecision>>>> answers;
  for (int i = 0; i < 50; ++i) answers.push_back(start("scraper-token"));
  run_ready();
  EXPECT_EQ(server_.waiting(), 1U);
  EXPECT_EQ(token_reviews(), 1U);
  server_.release();
  run_ready();
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer->has_value());
    ASSERT_TRUE(answer->value().has_value()) << answer->value().error().describe();
    EXPECT_EQ(answer->value()->verdict, Verdict::kAllowed);
  }
  EXPECT_EQ(token_reviews(), 1U);
  EXPECT_EQ(access_reviews(), 1U);
  EXPECT_TRUE(shed_.empty());
}

TEST_F(MetricsAuthorizerTest, ReviewsInFlightAreBoundedAndTheRestTurnedAwayAtOnce) {
  MetricsAuthorizerOptions options;
  options.max_in_flight = 3;
  authorizer(options);
  server_.hold("create", "");
  std::vector<std::shared_ptr<std::optional<Result<AccessDecision>>>> answers;
  for (int i = 0; i < 5; ++i) answers.push_back(start("random-" + std::to_string(i)));
  run_ready();
  EXPECT_EQ(server_.waiting(), 3U);
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
  server_.release();
  run_ready();
  EXPECT_EQ(token_reviews(), 3U);
  // Once they are answered, new callers are served again.
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
}

TEST_F(MetricsAuthorizerTest, ASaturatedClientTurnsCallersAwayAndNothingIsCached) {
  authorizer();
  // The client's own rate limit refuses the review at once: kTooManyRequests, no HTTP status.
  Error throttled(ErrorCode::kTooManyRequests, "client-side rate limit exceeded");
  throttled.retry_after = seconds(1);
  server_.fail_next("create", "", throttled, kube::testing::FakeApiServer::kEveryCall);
  ASSERT_OK_AND_ASSIGN(const AccessDecision busy, ask("scraper-token"));
  EXPECT_EQ(busy.verdict, Verdict::kBusy);
  EXPECT_EQ(shed_, (std::vector<std::string>{"rate_limit"}));
  EXPECT_TRUE(reviews_.empty()) << "a throttled review was never sent";
  EXPECT_EQ(token_reviews(), 1U);  // the one refused attempt
  server_.clear_faults();
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
  EXPECT_EQ(token_reviews(), 2U);  // the refusal was not cached
}

TEST_F(MetricsAuthorizerTest, AnUnreachableApiServerIsAnErrorAndNothingIsCached) {
  authorizer();
  server_.fail_next("create", "", Error(ErrorCode::kUnavailable, "connection refused"),
                    kube::testing::FakeApiServer::kEveryCall);
  const Result<AccessDecision> failed = ask("scraper-token");
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(reviews_, (std::vector<std::string>{"TokenReview error"}));
  server_.clear_faults();
  EXPECT_EQ(ask("scraper-token")->verdict, Verdict::kAllowed);
  EXPECT_EQ(token_reviews(), 2U);
}

TEST_F(MetricsAuthorizerTest, NoBearerTokenIsRefusedWithoutAReview) {
  authorizer();
  const Result<AccessDecision> none =
      http::test::run(io_, authorizer_->authorize("Basic abc", "/metrics", "get"));
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(none->reason, "no bearer token");
  EXPECT_EQ(token_reviews(), 0U);
}

}  // namespace
}  // namespace nmo::runtime
