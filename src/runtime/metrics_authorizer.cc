#include "runtime/metrics_authorizer.h"

#include <utility>

#include <boost/json.hpp>

namespace nmo::runtime {
namespace {

constexpr std::string_view kBearer = "Bearer ";

std::string string_at(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
}

const boost::json::object* object_at(const boost::json::value& value, std::string_view key) {
  if (!value.is_object()) return nullptr;
  const auto* field = value.as_object().if_contains(key);
  return field != nullptr && field->is_object() ? &field->as_object() : nullptr;
}

bool bool_at(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_bool() && value->as_bool();
}

}  // namespace

MetricsAuthorizer::MetricsAuthorizer(kube::Client& client, const Clock& clock,
                                     std::chrono::seconds cache_ttl)
    : client_(client), clock_(clock), ttl_(cache_ttl) {}

asio::awaitable<Result<AccessDecision>> MetricsAuthorizer::authorize(std::string authorization,
                                                                     std::string path,
                                                                     std::string verb) {
  if (authorization.size() <= kBearer.size() ||
      authorization.compare(0, kBearer.size(), kBearer) != 0) {
    co_return AccessDecision{.verdict = AccessDecision::Verdict::kUnauthenticated,
                             .reason = "no bearer token"};
  }
  std::string token = authorization.substr(kBearer.size());
  const std::string key = token + '\n' + path + '\n' + verb;
  if (auto hit = cache_.find(key); hit != cache_.end()) {
    if (clock_.now() < hit->second.expires) co_return hit->second.decision;
    cache_.erase(hit);
  }

  boost::json::value review = {
      {"apiVersion", "authentication.k8s.io/v1"},
      {"kind", "TokenReview"},
      {"spec", {{"token", token}}},
  };
  // Named, not temporaries in the co_await expression (GCC 12 destroys those twice).
  std::string review_path = "/apis/authentication.k8s.io/v1/tokenreviews";
  const kube::WriteOptions write_options;
  auto reviewed = co_await client_.create(std::move(review_path), std::move(review), write_options);
  if (!reviewed) co_return reviewed.error();
  AccessDecision decision;
  const boost::json::object* status = object_at(*reviewed, "status");
  const boost::json::object* user = nullptr;
  if (status != nullptr) {
    const auto* user_value = status->if_contains("user");
    if (user_value != nullptr && user_value->is_object()) user = &user_value->as_object();
  }
  if (status == nullptr || !bool_at(*status, "authenticated") || user == nullptr) {
    decision.verdict = AccessDecision::Verdict::kUnauthenticated;
    decision.reason = status != nullptr && !string_at(*status, "error").empty()
                          ? string_at(*status, "error")
                          : "the API server does not accept the token";
  } else {
    decision.user = string_at(*user, "username");
    boost::json::object spec{
        {"user", decision.user},
        {"nonResourceAttributes", {{"path", path}, {"verb", verb}}},
    };
    if (const auto* uid = user->if_contains("uid"); uid != nullptr) spec["uid"] = *uid;
    if (const auto* groups = user->if_contains("groups"); groups != nullptr) {
      spec["groups"] = *groups;
    }
    if (const auto* extra = user->if_contains("extra"); extra != nullptr) spec["extra"] = *extra;
    boost::json::value access = {
        {"apiVersion", "authorization.k8s.io/v1"},
        {"kind", "SubjectAccessReview"},
        {"spec", std::move(spec)},
    };
    std::string access_path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    auto answered =
        co_await client_.create(std::move(access_path), std::move(access), write_options);
    if (!answered) co_return answered.error();
    const boost::json::object* verdict = object_at(*answered, "status");
    if (verdict != nullptr && bool_at(*verdict, "allowed") && !bool_at(*verdict, "denied")) {
      decision.verdict = AccessDecision::Verdict::kAllowed;
    } else {
      decision.verdict = AccessDecision::Verdict::kForbidden;
      decision.reason = "user \"" + decision.user + "\" may not " + verb + " " + path;
      if (verdict != nullptr && !string_at(*verdict, "reason").empty()) {
        decision.reason += " (" + string_at(*verdict, "reason") + ")";
      }
    }
  }
  if (cache_.size() >= kMaxCached) cache_.clear();
  cache_[key] = Cached{.decision = decision, .expires = clock_.now() + ttl_};
  co_return decision;
}

}  // namespace nmo::runtime
