// MetricsAuthorizer: who may read /metrics, decided by the API server as controller-runtime's
// secure metrics (and kube-rbac-proxy) do: the caller's bearer token goes to a TokenReview
// (authentication.k8s.io/v1), and the user it names to a SubjectAccessReview
// (authorization.k8s.io/v1) for the non-resource URL and verb. So a Prometheus whose
// ServiceAccount is bound to a ClusterRole with `nonResourceURLs: ["/metrics"], verbs: ["get"]`
// may scrape, and nobody else.
//
// Anyone who can reach the port can make it ask the API server, so the cost of strangers is
// bounded (docs/reliability.md, "Hostile clients"):
//   - answers are cached as controller-runtime's delegating authenticator and authorizer cache
//     them: a token's review for 1 min, an access review for 5 min when allowed and 30 s when
//     denied; tokens are kept only as SHA-256 digests;
//   - the tokens the API server did not accept are kept apart from those it did, in a smaller
//     cache of their own, so a flood of random tokens never pushes out a scraper's;
//   - callers presenting a token already under review wait for that review's answer instead of
//     sending another;
//   - at most `max_in_flight` reviews run at once, and the client the authorizer is given has
//     its own bounded rate limit; beyond either the caller is told to come back (kBusy: 503
//     with Retry-After) at once, without queueing.
//
// Threading: authorize() runs on one executor (the metrics server's, the manager's one
// io_context thread); calls may interleave at their co_await points, never run in parallel.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "base/clock.h"
#include "base/lru_cache.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/client/client.h"

namespace nmo::runtime {

/// The verdict on one request.
struct AccessDecision {
  enum class Verdict {
    kAllowed,
    kUnauthenticated,  // no bearer token, or the API server does not know it: HTTP 401
    kForbidden,        // a known user without the permission: HTTP 403
    kBusy,             // not checked now (too many reviews in flight, or the authorization
                       // client's rate limit is saturated): HTTP 503 with Retry-After
  };
  Verdict verdict = Verdict::kUnauthenticated;
  /// The authenticated user ("" when unauthenticated).
  std::string user;
  /// Why, for the response body and the log ("no bearer token", the review's reason).
  std::string reason;
  /// kBusy: when to try again.
  std::chrono::seconds retry_after{0};
};

/// Result labels of metrics_authorization_reviews_total (on_review) and reasons of
/// metrics_authorization_shed_total (on_shed).
inline constexpr std::string_view kTokenReview = "TokenReview";
inline constexpr std::string_view kSubjectAccessReview = "SubjectAccessReview";
inline constexpr std::string_view kShedInFlight = "in_flight";
inline constexpr std::string_view kShedRateLimit = "rate_limit";

struct MetricsAuthorizerOptions {
  /// How long a TokenReview's answer is trusted, for tokens the API server accepted and for
  /// those it did not (controller-runtime's delegating authenticator: 1 min).
  std::chrono::seconds token_ttl{60};
  /// How long a SubjectAccessReview's answer is trusted (controller-runtime's delegating
  /// authorizer: 5 min when allowed, 30 s when denied).
  std::chrono::seconds allowed_ttl{300};
  std::chrono::seconds denied_ttl{30};
  /// Entries kept, least recently used forgotten first: accepted tokens, refused tokens (the
  /// only ones a stranger can make up), and access decisions (per user, path and verb).
  std::size_t max_accepted_tokens = 1024;
  std::size_t max_refused_tokens = 256;
  std::size_t max_decisions = 1024;
  /// Reviews in flight at once (callers waiting for a review of the same token not counted);
  /// beyond it a caller is answered kBusy.
  std::size_t max_in_flight = 16;
  /// Called for every review sent: `review` is kTokenReview or kSubjectAccessReview, `result`
  /// "authenticated", "unauthenticated", "allowed", "denied" or "error" (no answer).
  std::function<void(std::string_view review, std::string_view result)> on_review;
  /// Called for every caller answered kBusy: kShedInFlight or kShedRateLimit.
  std::function<void(std::string_view reason)> on_shed;
};

class MetricsAuthorizer {
 public:
  /// `client` (with the operator's identity, which needs tokenreviews and subjectaccessreviews
  /// create; a client of its own, so strangers never use the rate limit of the operator's work)
  /// and `clock` must outlive the authorizer.
  explicit MetricsAuthorizer(kube::Client& client, const Clock& clock = system_clock(),
                             MetricsAuthorizerOptions options = {});

  /// Decides for a request carrying `authorization` (the header's value, "" when absent) that
  /// wants `verb` on the non-resource URL `path`. An Error means the API server could not be
  /// asked (the caller should answer 500 and try again later); nothing is cached then.
  asio::awaitable<Result<AccessDecision>> authorize(std::string authorization, std::string path,
                                                    std::string verb);

 private:
  // A TokenReview's answer: the user (username, uid, groups, extra as the review gave them),
  // or why the token was refused.
  struct Identity {
    bool authenticated = false;
    boost::json::object user;
    std::string reason;
    Clock::time_point expires;
  };
  // A SubjectAccessReview's answer.
  struct Access {
    bool allowed = false;
    std::string reason;
    Clock::time_point expires;
  };
  // One review of a (token, path, verb) in progress; later callers with the same key wait on
  // `done` (cancelled when the answer is in) and read `answer`.
  struct Flight {
    explicit Flight(const asio::any_io_executor& executor)
        : done(executor, asio::steady_timer::time_point::max()) {}
    asio::steady_timer done;
    std::optional<Result<AccessDecision>> answer;
  };

  // The decision from the two reviews (or the caches), for `token_key` (the token's digest).
  asio::awaitable<Result<AccessDecision>> decide(std::string token, std::string token_key,
                                                 std::string path, std::string verb);
  asio::awaitable<Result<Identity>> review_token(std::string token);
  // Creates `review` (of `kind`, for on_review) at `path`; counts an answerless one as "error".
  asio::awaitable<Result<boost::json::value>> send_review(std::string path,
                                                          boost::json::value review,
                                                          std::string kind);
  asio::awaitable<Result<Access>> review_access(boost::json::object user, std::string path,
                                                std::string verb);
  // The decision the caches alone can give, if any.
  std::optional<AccessDecision> cached_decision(const std::string& token_key,
                                                const std::string& path, const std::string& verb);
  // The fresh cached identity of `token_key` and access decision of `key`, if any (a stale
  // entry is dropped).
  std::optional<Identity> cached_identity(const std::string& token_key);
  std::optional<Access> cached_access(const std::string& key);
  AccessDecision busy(std::string_view reason, std::string why) const;
  void reviewed(std::string_view review, std::string_view result) const;

  kube::Client& client_;
  const Clock& clock_;
  const MetricsAuthorizerOptions options_;
  LruCache<std::string, Identity> accepted_;  // by token digest
  LruCache<std::string, Identity> refused_;   // by token digest
  LruCache<std::string, Access> decisions_;   // by digest of user, path and verb
  // By token digest, path and verb.
  std::map<std::string, std::shared_ptr<Flight>> in_flight_;
};

}  // namespace nmo::runtime
