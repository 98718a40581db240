#include "runtime/metrics_authorizer.h"

#include <optional>
#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/json.hpp>

#include "http/digest.h"

namespace nmo::runtime {
namespace {

constexpr std::string_view kBearer = "Bearer ";
// A caller turned away is told to come back after this long: reviews take milliseconds, and
// a second is what the authorization client's rate limit needs to earn tokens again.
constexpr std::chrono::seconds kBusyRetryAfter{1};

std::string string_at(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
}

const boost::json::object* object_at(const boost::json::object& object, std::string_view key) {
  const auto* field = object.if_contains(key);
  return field != nullptr && field->is_object() ? &field->as_object() : nullptr;
}

const boost::json::object* object_at(const boost::json::value& value, std::string_view key) {
  return value.is_object() ? object_at(value.as_object(), key) : nullptr;
}

bool bool_at(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_bool() && value->as_bool();
}

// The key of an access decision: who asks for what.
std::string access_key(const boost::json::object& user, const std::string& path,
                       const std::string& verb) {
  return http::sha256(boost::json::serialize(user) + '\n' + path + '\n' + verb);
}

AccessDecision decision_of(const boost::json::object& user, bool allowed, const std::string& reason,
                           const std::string& path, const std::string& verb) {
  AccessDecision decision;
  decision.user = string_at(user, "username");
  if (allowed) {
    decision.verdict = AccessDecision::Verdict::kAllowed;
    return decision;
  }
  decision.verdict = AccessDecision::Verdict::kForbidden;
  decision.reason = "user \"" + decision.user + "\" may not " + verb + " " + path;
  if (!reason.empty()) decision.reason += " (" + reason + ")";
  return decision;
}

}  // namespace

MetricsAuthorizer::MetricsAuthorizer(kube::Client& client, const Clock& clock,
                                     MetricsAuthorizerOptions options)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      accepted_(options_.max_accepted_tokens),
      refused_(options_.max_refused_tokens),
      decisions_(options_.max_decisions) {}

asio::awaitable<Result<AccessDecision>> MetricsAuthorizer::authorize(std::string authorization,
                                                                     std::string path,
                                                                     std::string verb) {
  if (authorization.size() <= kBearer.size() ||
      authorization.compare(0, kBearer.size(), kBearer) != 0) {
    co_return AccessDecision{.verdict = AccessDecision::Verdict::kUnauthenticated,
                             .reason = "no bearer token"};
  }
  std::string token = authorization.substr(kBearer.size());
  std::string token_key = http::sha256(token);
  if (std::optional<AccessDecision> known = cached_decision(token_key, path, verb)) {
    co_return *std::move(known);
  }
  const std::string flight_key = token_key + '\n' + path + '\n' + verb;
  if (const auto found = in_flight_.find(flight_key); found != in_flight_.end()) {
    // The same question is being asked already: wait for its answer.
    const std::shared_ptr<Flight> flight = found->second;
    boost::system::error_code ignored;
    co_await flight->done.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (flight->answer) co_return *flight->answer;
    co_return Error(ErrorCode::kCancelled, "the review this request waited for was abandoned");
  }
  if (in_flight_.size() >= options_.max_in_flight) {
    co_return busy(kShedInFlight, std::to_string(in_flight_.size()) + " reviews in flight");
  }
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  auto flight = std::make_shared<Flight>(executor);
  in_flight_.emplace(flight_key, flight);
  // However this coroutine ends (also destroyed mid-review at shutdown), the waiters wake.
  struct Landing {
    MetricsAuthorizer& self;
    const std::string& key;
    Flight& flight;
    ~Landing() {
      self.in_flight_.erase(key);
      flight.done.cancel();
    }
  } landing{*this, flight_key, *flight};
  Result<AccessDecision> answer =
      co_await decide(std::move(token), std::move(token_key), std::move(path), std::move(verb));
  if (!answer && kube::is_client_throttled(answer.error())) {
    AccessDecision turned_away = busy(kShedRateLimit, answer.error().message);
    answer = Result<AccessDecision>(std::move(turned_away));
  }
  flight->answer = answer;
  co_return answer;
}

std::optional<AccessDecision> MetricsAuthorizer::cached_decision(const std::string& token_key,
                                                                 const std::string& path,
                                                                 const std::string& verb) {
  std::optional<Identity> identity = cached_identity(token_key);
  if (!identity) return std::nullopt;
  if (!identity->authenticated) {
    return AccessDecision{.verdict = AccessDecision::Verdict::kUnauthenticated,
                          .reason = identity->reason};
  }
  std::optional<Access> access = cached_access(access_key(identity->user, path, verb));
  if (!access) return std::nullopt;
  return decision_of(identity->user, access->allowed, access->reason, path, verb);
}

asio::awaitable<Result<AccessDecision>> MetricsAuthorizer::decide(std::string token,
                                                                  std::string token_key,
                                                                  std::string path,
                                                                  std::string verb) {
  std::optional<Identity> identity = cached_identity(token_key);
  if (!identity) {
    Result<Identity> reviewed = co_await review_token(std::move(token));
    if (!reviewed) co_return reviewed.error();
    identity = *std::move(reviewed);
    (identity->authenticated ? accepted_ : refused_).put(token_key, *identity);
  }
  if (!identity->authenticated) {
    co_return AccessDecision{.verdict = AccessDecision::Verdict::kUnauthenticated,
                             .reason = identity->reason};
  }
  const std::string key = access_key(identity->user, path, verb);
  std::optional<Access> access = cached_access(key);
  if (!access) {
    Result<Access> reviewed = co_await review_access(identity->user, path, verb);
    if (!reviewed) co_return reviewed.error();
    access = *std::move(reviewed);
    decisions_.put(key, *access);
  }
  co_return decision_of(identity->user, access->allowed, access->reason, path, verb);
}

asio::awaitable<Result<MetricsAuthorizer::Identity>> MetricsAuthorizer::review_token(
    std::string token) {
  boost::json::value review = {
      {"apiVersion", "authentication.k8s.io/v1"},
      {"kind", "TokenReview"},
      {"spec", {{"token", std::move(token)}}},
  };
  // Named, not temporaries in the co_await expression (GCC 12 destroys those twice).
  std::string review_path = "/apis/authentication.k8s.io/v1/tokenreviews";
  std::string kind(kTokenReview);
  auto answered = co_await send_review(std::move(review_path), std::move(review), kind);
  if (!answered) co_return answered.error();
  Identity identity;
  identity.expires = clock_.now() + options_.token_ttl;
  const boost::json::object* status = object_at(*answered, "status");
  const boost::json::object* user = status != nullptr ? object_at(*status, "user") : nullptr;
  if (status == nullptr || !bool_at(*status, "authenticated") || user == nullptr) {
    identity.reason = status != nullptr && !string_at(*status, "error").empty()
                          ? string_at(*status, "error")
                          : "the API server does not accept the token";
    reviewed(kTokenReview, "unauthenticated");
    co_return identity;
  }
  identity.authenticated = true;
  identity.user["username"] = string_at(*user, "username");
  for (const std::string_view field : {"uid", "groups", "extra"}) {
    if (const auto* value = user->if_contains(field); value != nullptr) {
      identity.user[field] = *value;
    }
  }
  reviewed(kTokenReview, "authenticated");
  co_return identity;
}

asio::awaitable<Result<MetricsAuthorizer::Access>> MetricsAuthorizer::review_access(
    boost::json::object user, std::string path, std::string verb) {
  boost::json::object spec{
      {"user", string_at(user, "username")},
      {"nonResourceAttributes", {{"path", path}, {"verb", verb}}},
  };
  for (const std::string_view field : {"uid", "groups", "extra"}) {
    if (const auto* value = user.if_contains(field); value != nullptr) spec[field] = *value;
  }
  boost::json::value access = {
      {"apiVersion", "authorization.k8s.io/v1"},
      {"kind", "SubjectAccessReview"},
      {"spec", std::move(spec)},
  };
  std::string access_path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
  std::string kind(kSubjectAccessReview);
  auto answered = co_await send_review(std::move(access_path), std::move(access), kind);
  if (!answered) co_return answered.error();
  const boost::json::object* verdict = object_at(*answered, "status");
  Access result;
  result.allowed =
      verdict != nullptr && bool_at(*verdict, "allowed") && !bool_at(*verdict, "denied");
  if (!result.allowed && verdict != nullptr) result.reason = string_at(*verdict, "reason");
  result.expires = clock_.now() + (result.allowed ? options_.allowed_ttl : options_.denied_ttl);
  reviewed(kSubjectAccessReview, result.allowed ? "allowed" : "denied");
  co_return result;
}

asio::awaitable<Result<boost::json::value>> MetricsAuthorizer::send_review(
    std::string path, boost::json::value review, std::string kind) {
  const kube::WriteOptions write_options;
  auto answered = co_await client_.create(std::move(path), std::move(review), write_options);
  // A client-side throttle sent nothing, so it is no review.
  if (!answered && !kube::is_client_throttled(answered.error())) reviewed(kind, "error");
  co_return answered;
}

std::optional<MetricsAuthorizer::Identity> MetricsAuthorizer::cached_identity(
    const std::string& token_key) {
  for (LruCache<std::string, Identity>* cache : {&accepted_, &refused_}) {
    const Identity* found = cache->find(token_key);
    if (found == nullptr) continue;
    if (clock_.now() < found->expires) return *found;
    cache->erase(token_key);
  }
  return std::nullopt;
}

std::optional<MetricsAuthorizer::Access> MetricsAuthorizer::cached_access(const std::string& key) {
  const Access* found = decisions_.find(key);
  if (found == nullptr) return std::nullopt;
  if (clock_.now() < found->expires) return *found;
  decisions_.erase(key);
  return std::nullopt;
}

AccessDecision MetricsAuthorizer::busy(std::string_view reason, std::string why) const {
  if (options_.on_shed) options_.on_shed(reason);
  return AccessDecision{.verdict = AccessDecision::Verdict::kBusy,
                        .reason = "too many /metrics callers to check now (" + std::move(why) + ")",
                        .retry_after = kBusyRetryAfter};
}

void MetricsAuthorizer::reviewed(std::string_view review, std::string_view result) const {
  if (options_.on_review) options_.on_review(review, result);
}

}  // namespace nmo::runtime
