// MetricsAuthorizer: who may read /metrics, decided by the API server as controller-runtime's
// secure metrics (and kube-rbac-proxy) do: the caller's bearer token goes to a TokenReview
// (authentication.k8s.io/v1), and the user it names to a SubjectAccessReview
// (authorization.k8s.io/v1) for the non-resource URL and verb. So a Prometheus whose
// ServiceAccount is bound to a ClusterRole with `nonResourceURLs: ["/metrics"], verbs: ["get"]`
// may scrape, and nobody else.
//
// Answers are cached per token for `cache_ttl` (default 30 s), so a scrape every few seconds
// costs two API calls per half minute, and a revoked binding stops working within that time.
//
// Threading: authorize() is awaited on the executor of the client; calls may interleave.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

#include "base/clock.h"
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
  };
  Verdict verdict = Verdict::kUnauthenticated;
  /// The authenticated user ("" when unauthenticated).
  std::string user;
  /// Why, for the response body and the log ("no bearer token", the review's reason).
  std::string reason;
};

class MetricsAuthorizer {
 public:
  /// `client` (with the operator's identity, which needs tokenreviews and subjectaccessreviews
  /// create) and `clock` must outlive the authorizer.
  explicit MetricsAuthorizer(kube::Client& client, const Clock& clock = system_clock(),
                             std::chrono::seconds cache_ttl = std::chrono::seconds(30));

  /// Decides for a request carrying `authorization` (the header's value, "" when absent) that
  /// wants `verb` on the non-resource URL `path`. An Error means the API server could not be
  /// asked (the caller should answer 500 and try again later); nothing is cached then.
  asio::awaitable<Result<AccessDecision>> authorize(std::string authorization, std::string path,
                                                    std::string verb);

 private:
  struct Cached {
    AccessDecision decision;
    Clock::time_point expires;
  };

  kube::Client& client_;
  const Clock& clock_;
  std::chrono::seconds ttl_;
  // By token, path and verb. Bounded: cleared when it reaches kMaxCached entries.
  std::map<std::string, Cached> cache_;
  static constexpr std::size_t kMaxCached = 1024;
};

}  // namespace nmo::runtime
