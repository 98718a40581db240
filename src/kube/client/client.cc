#include "kube/client/client.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/redirect_error.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "base/lru_cache.h"
#include "base/token_bucket.h"
#include "http/client.h"
#include "http/line_stream.h"
#include "kube/api/pod.h"
#include "kube/api/status.h"
#include "kube/client/server_throttle.h"

namespace nmo::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kMaxRetryBackoff{8000};
constexpr seconds kDefaultRetryAfter{1};
constexpr seconds kMaxRetryAfter{30};
// Distinct API warnings remembered so each is logged once; beyond it the oldest are forgotten
// (and logged again if they come back), so a server or admission webhook that words its
// warnings differently every time cannot grow the set without bound.
constexpr std::size_t kMaxWarningsSeen = 256;

// How a request may be retried.
enum class RetryPolicy {
  kRead,      // idempotent: connection failures, 502/503/504 and throttling
  kWrite,     // throttling only (a throttled request was never executed)
  kEviction,  // never: a 429 is the caller's business
};

bool is_2xx(unsigned status) { return status >= 200 && status < 300; }

// now + `timeout`, saturating: a timeout of years (kubectl-maintenance --request-timeout=0) must
// not overflow the clock.
Clock::time_point deadline_after(const Clock& clock, milliseconds timeout) {
  const Clock::time_point now = clock.now();
  const auto room = std::chrono::floor<milliseconds>(Clock::time_point::max() - now);
  return timeout >= room ? Clock::time_point::max() : now + timeout;
}

// GET is a read (list and watch included); everything else changes something.
RequestClass request_class_of(http::Method method) {
  return method == http::Method::kGet ? RequestClass::kRead : RequestClass::kWrite;
}

std::optional<seconds> parse_retry_after(const http::Headers& headers) {
  const auto value = http::find_header(headers, "Retry-After");
  if (!value) return std::nullopt;
  std::int64_t n = 0;
  const auto* end = value->data() + value->size();
  const auto [ptr, ec] = std::from_chars(value->data(), end, n);
  if (ec != std::errc() || ptr != end || n < 0) return std::nullopt;
  return seconds(n);
}

// The floor a 429 sets under the wait of its class: its Retry-After, 1 s when absent, at most 30 s.
seconds retry_after_floor(const http::Headers& headers) {
  return std::min(parse_retry_after(headers).value_or(kDefaultRetryAfter), kMaxRetryAfter);
}

Error error_from(const http::Response& response) {
  return error_from_response(static_cast<int>(response.status), response.body,
                             parse_retry_after(response.headers));
}

Result<boost::json::value> parse_body(const std::string& body) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec) {
    return Error(ErrorCode::kInvalid,
                 "the API server sent a body that is not JSON: " + ec.message());
  }
  return v;
}

class WatchStreamImpl final : public WatchStream {
 public:
  // `http` is the client the stream came from, kept alive while the stream is open (an exec
  // plugin's new client certificate replaces the client for later requests).
  WatchStreamImpl(std::shared_ptr<http::Client> http, std::unique_ptr<http::LineStream> stream,
                  milliseconds idle_timeout)
      : http_(std::move(http)), stream_(std::move(stream)), idle_timeout_(idle_timeout) {}

  asio::awaitable<Result<std::optional<WatchEvent>>> next() override {
    for (;;) {
      auto line = co_await stream_->next_line(idle_timeout_);
      if (!line) co_return line.error();
      if (!line->has_value()) co_return std::optional<WatchEvent>();
      if ((*line)->empty()) continue;
      auto event = decode_watch_event(**line);
      if (!event) co_return event.error();
      if (event->type == WatchEventType::kError) co_return error_from_watch_error(*event);
      co_return std::optional<WatchEvent>(std::move(*event));
    }
  }

  void cancel() override { stream_->cancel(); }

 private:
  std::shared_ptr<http::Client> http_;
  std::unique_ptr<http::LineStream> stream_;
  milliseconds idle_timeout_;
};

class ClientImpl final : public Client {
 public:
  ClientImpl(asio::any_io_executor executor, RestConfig config, ClientOptions options,
             http::ClientOptions http_options, std::unique_ptr<http::Client> http)
      : executor_(std::move(executor)),
        config_(std::move(config)),
        options_(std::move(options)),
        http_options_(std::move(http_options)),
        http_(std::move(http)),
        bucket_(options_.qps > 0 ? std::optional<TokenBucket>(std::in_place, options_.qps,
                                                              std::max(1, options_.burst))
                                 : std::nullopt),
        throttle_({.initial = options_.throttle_backoff, .max = options_.max_throttle_backoff},
                  options_.random),
        warnings_seen_(kMaxWarningsSeen) {}

  ~ClientImpl() override { shutdown(); }

  const RestConfig& config() const override { return config_; }

  asio::awaitable<Result<boost::json::value>> get_json(std::string path) override {
    co_return co_await json_call(http::Method::kGet, std::move(path), {}, {}, RetryPolicy::kRead);
  }

  asio::awaitable<Result<boost::json::value>> create(std::string path, boost::json::value object,
                                                     WriteOptions options) override {
    co_return co_await json_call(http::Method::kPost, path + options.query(),
                                 boost::json::serialize(object), "application/json",
                                 RetryPolicy::kWrite);
  }

  asio::awaitable<Result<boost::json::value>> update(std::string path, boost::json::value object,
                                                     WriteOptions options) override {
    co_return co_await json_call(http::Method::kPut, path + options.query(),
                                 boost::json::serialize(object), "application/json",
                                 RetryPolicy::kWrite);
  }

  asio::awaitable<Result<boost::json::value>> patch(std::string path, PatchType type,
                                                    std::string body,
                                                    WriteOptions options) override {
    if (type == PatchType::kApply && options.field_manager.empty()) {
      co_return Error(ErrorCode::kInvalid, "server-side apply needs a field manager");
    }
    co_return co_await json_call(http::Method::kPatch, path + options.query(), std::move(body),
                                 content_type(type), RetryPolicy::kWrite);
  }

  asio::awaitable<Result<void>> remove(std::string path, DeleteOptions options) override {
    auto response = co_await call(http::Method::kDelete, std::move(path), options.body(),
                                  "application/json", RetryPolicy::kWrite);
    if (!response) co_return response.error();
    if (!is_2xx(response->status)) co_return error_from(*response);
    co_return Result<void>();
  }

  asio::awaitable<Result<EvictionResult>> evict(std::string namespace_, std::string name,
                                                EvictOptions options) override {
    boost::json::object eviction{
        {"apiVersion", "policy/v1"},
        {"kind", "Eviction"},
        {"metadata", {{"name", name}, {"namespace", namespace_}}},
    };
    boost::json::object delete_options;
    if (options.grace_period_seconds) {
      delete_options["gracePeriodSeconds"] = *options.grace_period_seconds;
    }
    if (!options.precondition_uid.empty()) {
      delete_options["preconditions"] = {{"uid", options.precondition_uid}};
    }
    if (options.dry_run) delete_options["dryRun"] = boost::json::array{"All"};
    if (!delete_options.empty()) eviction["deleteOptions"] = std::move(delete_options);

    auto response =
        co_await call(http::Method::kPost, object_path<Pod>(namespace_, name) + "/eviction",
                      boost::json::serialize(eviction), "application/json", RetryPolicy::kEviction,
                      std::move(options.fence));
    if (!response) co_return response.error();
    EvictionResult result;
    if (is_2xx(response->status)) co_return result;
    result.status = error_from(*response);
    result.outcome = classify_eviction_error(result.status);
    co_return result;
  }

  asio::awaitable<Result<std::string>> list_raw(std::string path, ListOptions options) override {
    auto response =
        co_await call(http::Method::kGet, path + options.query(), {}, {}, RetryPolicy::kRead);
    if (!response) co_return response.error();
    if (!is_2xx(response->status)) co_return error_from(*response);
    co_return std::move(response->body);
  }

  asio::awaitable<Result<std::unique_ptr<WatchStream>>> watch(std::string path,
                                                              WatchOptions options) override {
    const Clock::time_point deadline = deadline_after(throttle_.clock(), options_.request_timeout);
    for (bool refreshed = false;; refreshed = true) {
      NMO_CO_TRY(co_await wait_for_server(RequestClass::kRead, deadline));
      NMO_CO_TRY(co_await rate_limit());
      http::Request request = make_request(http::Method::kGet, path + options.query(), {}, {});
      auto attempt = authorize(request);
      if (!attempt) co_return attempt.error();
      const ServerThrottle::Ticket ticket = throttle_.admit(RequestClass::kRead);
      auto stream = co_await attempt->http->stream(std::move(request));
      observe(http::Method::kGet, stream ? static_cast<int>((*stream)->status()) : 0);
      if (!stream) co_return stream.error();
      auto& s = **stream;
      if (s.status() == 401 && !refreshed && refresh_credential(*attempt)) continue;
      if (s.status() == 429) {
        note_throttled(ticket, http::Method::kGet, path, s.headers());
      } else {
        throttle_.answered(ticket);
      }
      if (!is_2xx(s.status())) {
        auto body = co_await s.read_rest(options_.request_timeout);
        co_return error_from_response(static_cast<int>(s.status()), body ? *body : std::string(),
                                      parse_retry_after(s.headers()));
      }
      log_warnings(s.headers());
      co_return std::unique_ptr<WatchStream>(std::make_unique<WatchStreamImpl>(
          std::move(attempt->http), std::move(*stream), options.idle_timeout));
    }
  }

  void shutdown() override {
    std::vector<std::shared_ptr<http::Client>> clients;
    {
      const std::lock_guard lock(http_mu_);
      shut_down_ = true;
      clients.push_back(http_);
      for (const auto& old : retired_) {
        if (auto alive = old.lock()) clients.push_back(std::move(alive));
      }
    }
    for (const auto& client : clients) client->shutdown();
  }

 private:
  http::Request make_request(http::Method method, std::string target, std::string body,
                             std::string_view content_type) const {
    http::Request request;
    request.method = method;
    request.target = config_.path_prefix + target;
    request.body = std::move(body);
    request.headers.emplace_back("Accept", "application/json");
    request.headers.emplace_back("User-Agent", options_.user_agent);
    if (!content_type.empty()) request.headers.emplace_back("Content-Type", content_type);
    request.timeout = options_.request_timeout;
    return request;
  }

  // Reports one attempt to ClientOptions::on_attempt; `status` 0 means no response.
  void observe(http::Method method, int status) const {
    if (!options_.on_attempt) return;
    options_.on_attempt(http::to_string(method), status == 0 ? "<error>" : std::to_string(status));
  }

  // The HTTP client one attempt goes through and the exec credential it carries, if any.
  struct Attempt {
    std::shared_ptr<http::Client> http;
    std::shared_ptr<const ExecCredential> credential;
  };

  // Adds the impersonation headers and the bearer token (asked for every request: projected
  // tokens rotate, exec credentials expire), and picks the HTTP client with the right client
  // certificate.
  Result<Attempt> authorize(http::Request& request) {
    if (!config_.impersonate_user.empty()) {
      request.headers.emplace_back("Impersonate-User", config_.impersonate_user);
    }
    for (const auto& group : config_.impersonate_groups) {
      request.headers.emplace_back("Impersonate-Group", group);
    }
    Attempt attempt;
    if (config_.exec) {
      NMO_TRY_ASSIGN(attempt.credential, config_.exec->credential());
      if (!attempt.credential->token.empty()) {
        request.headers.emplace_back("Authorization", "Bearer " + attempt.credential->token);
      }
      NMO_TRY_ASSIGN(attempt.http, http_for(*attempt.credential));
      return attempt;
    }
    if (config_.token) {
      auto token = config_.token->token();
      if (!token) return token.error();
      request.headers.emplace_back("Authorization", "Bearer " + *token);
    }
    const std::lock_guard lock(http_mu_);
    attempt.http = http_;
    return attempt;
  }

  // After a 401: true when the request should be sent again, because the credential came from
  // an exec plugin, which then runs again (client-go does the same).
  bool refresh_credential(const Attempt& attempt) {
    if (!attempt.credential) return false;
    log::root().debug(1, "the API server refused the exec plugin's credential; running it again",
                      {{"command", config_.exec->options().exec.command}});
    config_.exec->invalidate(attempt.credential);
    return true;
  }

  // The HTTP client presenting `credential`'s client certificate: the current one, or a new one
  // when the plugin handed out a different certificate. The old client stays alive for the
  // requests and watches still using it.
  Result<std::shared_ptr<http::Client>> http_for(const ExecCredential& credential) {
    const std::lock_guard lock(http_mu_);
    if (shut_down_ || credential.client_cert_pem == http_cert_pem_) return http_;
    http::ClientOptions options = http_options_;
    options.tls_options.client_cert_pem = credential.client_cert_pem;
    options.tls_options.client_key_pem = credential.client_key_pem;
    auto fresh = http::Client::create(executor_, std::move(options));
    if (!fresh) {
      return Error(ErrorCode::kUnauthorized,
                   config_.exec->options().where + ": exec plugin " + "\"" +
                       config_.exec->options().exec.command +
                       "\" returned an unusable client certificate: " + fresh.error().message);
    }
    retired_.push_back(http_);
    std::erase_if(retired_, [](const std::weak_ptr<http::Client>& old) { return old.expired(); });
    http_ = std::move(*fresh);
    http_cert_pem_ = credential.client_cert_pem;
    return http_;
  }

  asio::awaitable<void> pause(std::chrono::nanoseconds d) {
    if (d <= std::chrono::nanoseconds::zero()) co_return;
    asio::steady_timer timer(executor_, d);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  // Waits for a rate-limit token within the bounds of ClientOptions; the client-side throttle
  // (throttled()), having waited for nothing, when they would be exceeded.
  asio::awaitable<Result<void>> rate_limit() {
    if (!bucket_) co_return Result<void>();
    const std::optional<std::chrono::nanoseconds> turn =
        bucket_->try_reserve(options_.max_rate_limit_wait, options_.max_rate_limit_waiters);
    if (!turn) co_return throttled();
    co_await pause(*turn);
    co_return Result<void>();
  }

  // The client-side throttle of a request rate_limit() refused.
  Error throttled() const {
    Error error(ErrorCode::kTooManyRequests,
                "client-side rate limit of " + options_.user_agent +
                    " exceeded: the request would wait longer than " +
                    std::to_string(options_.max_rate_limit_wait.count()) + "ms or behind " +
                    std::to_string(options_.max_rate_limit_waiters) + " others");
    error.retry_after = seconds(1);
    return error;
  }

  // Waits until the API server's throttling of `request_class` lets a request of it go
  // (ServerThrottle); the client-side throttle, without waiting, when that would be after
  // `deadline`.
  asio::awaitable<Result<void>> wait_for_server(RequestClass request_class,
                                                Clock::time_point deadline) {
    // Another 429 may push the instant further while this request waits: look again after.
    for (;;) {
      const Clock::time_point now = throttle_.clock().now();
      const Clock::time_point start = throttle_.not_before(request_class);
      if (start <= now) co_return Result<void>();
      if (start > deadline) co_return server_throttled(request_class, start - now);
      co_await pause(start - now);
    }
  }

  // The refusal of wait_for_server() for a request of `request_class` that could go in `wait`.
  Error server_throttled(RequestClass request_class, std::chrono::nanoseconds wait) const {
    Error error(ErrorCode::kTooManyRequests,
                "the API server is throttling " + std::string(to_string(request_class)) +
                    " requests: waiting for the Retry-After and backoff of its 429s would pass "
                    "this request's deadline (" +
                    std::to_string(options_.request_timeout.count()) + "ms)");
    error.retry_after = std::chrono::ceil<seconds>(wait);
    return error;
  }

  // Slows down the class of a request that the API server's Priority and Fairness throttled,
  // and says so at most once per kThrottleLogInterval for the class, naming the flow schema and
  // priority level that APF reported.
  void note_throttled(const ServerThrottle::Ticket& ticket, http::Method method,
                      const std::string& target, const http::Headers& headers) {
    const seconds retry_after = retry_after_floor(headers);
    const ServerThrottle::Step step = throttle_.throttled(ticket, retry_after);
    if (step.to_log == 0) return;
    std::vector<log::Field> apf;
    for (const auto& [header, key] :
         {std::pair{"X-Kubernetes-PF-PriorityLevel-UID", "priority_level_uid"},
          std::pair{"X-Kubernetes-PF-FlowSchema-UID", "flow_schema_uid"}}) {
      if (const auto value = http::find_header(headers, header)) apf.emplace_back(key, *value);
    }
    log::root().with(apf).warn(
        "the API server is throttling requests (429); slowing down their class",
        {{"class", to_string(ticket.request_class)},
         {"method", http::to_string(method)},
         {"path", target},
         {"retry_after_seconds", static_cast<std::int64_t>(retry_after.count())},
         {"wait_ms",
          static_cast<std::int64_t>(std::chrono::duration_cast<milliseconds>(step.wait).count())},
         {"consecutive", step.consecutive},
         {"throttled_since_last_log", step.to_log}});
  }

  // Logs each distinct API warning once (deprecations repeat on every request).
  void log_warnings(const http::Headers& headers) {
    for (const auto value : http::find_header_values(headers, "Warning")) {
      std::string text(value);
      {
        const std::lock_guard lock(warnings_mu_);
        if (warnings_seen_.find(text) != nullptr) continue;
        warnings_seen_.put(text, true);
      }
      log::root().warn("API server warning", {{"warning", text}});
    }
  }

  // Sends a request with authentication, the API server's throttling of its class, rate limiting
  // and the retries `policy` allows. `fence`, when set, is asked before each attempt, after the
  // rate limit; its error stops the request.
  asio::awaitable<Result<http::Response>> call(http::Method method, std::string target,
                                               std::string body, std::string_view content_type,
                                               RetryPolicy policy,
                                               std::function<Result<void>()> fence = {}) {
    const RequestClass request_class = request_class_of(method);
    const Clock::time_point deadline = deadline_after(throttle_.clock(), options_.request_timeout);
    milliseconds backoff = options_.retry_backoff;
    bool refreshed = false;
    for (int attempt = 0;; ++attempt) {
      const bool may_retry = attempt < options_.max_retries;
      NMO_CO_TRY(co_await wait_for_server(request_class, deadline));
      NMO_CO_TRY(co_await rate_limit());
      if (fence) {
        if (auto allowed = fence(); !allowed) co_return allowed.error();
      }
      http::Request request = make_request(method, target, body, content_type);
      auto authorized = authorize(request);
      if (!authorized) co_return authorized.error();
      const ServerThrottle::Ticket ticket = throttle_.admit(request_class);
      auto response = co_await authorized->http->send(std::move(request));
      observe(method, response ? static_cast<int>(response->status) : 0);
      if (!response) {
        const ErrorCode code = response.error().code;
        if (policy == RetryPolicy::kRead && may_retry &&
            (code == ErrorCode::kUnavailable || code == ErrorCode::kTimeout)) {
          log::root().debug(1, "retrying a read after a connection failure",
                            {{"path", target}, {"error", response.error().describe()}});
          co_await pause(backoff);
          backoff = std::min(backoff * 2, kMaxRetryBackoff);
          continue;
        }
        co_return response.error();
      }
      log_warnings(response->headers);
      const unsigned status = response->status;
      // A refused credential never executed the request, so it is sent again whatever it is.
      if (status == 401 && !refreshed && refresh_credential(*authorized)) {
        refreshed = true;
        continue;
      }
      // An eviction's 429 may be a PodDisruptionBudget's or a webhook's "not now" instead.
      const bool throttled = status == 429 && (policy != RetryPolicy::kEviction ||
                                               classify_eviction_error(error_from(*response)) ==
                                                   EvictionOutcome::kThrottled);
      if (!throttled) {
        throttle_.answered(ticket);
      } else {
        note_throttled(ticket, method, target, response->headers);
        // The next attempt waits for the class in wait_for_server().
        if (policy != RetryPolicy::kEviction && may_retry) continue;
      }
      if (policy == RetryPolicy::kRead && may_retry &&
          (status == 502 || status == 503 || status == 504)) {
        co_await pause(backoff);
        backoff = std::min(backoff * 2, kMaxRetryBackoff);
        continue;
      }
      co_return response;
    }
  }

  asio::awaitable<Result<boost::json::value>> json_call(http::Method method, std::string target,
                                                        std::string body,
                                                        std::string_view content_type,
                                                        RetryPolicy policy) {
    auto response = co_await call(method, std::move(target), std::move(body), content_type, policy);
    if (!response) co_return response.error();
    if (!is_2xx(response->status)) co_return error_from(*response);
    co_return parse_body(response->body);
  }

  asio::any_io_executor executor_;
  RestConfig config_;
  ClientOptions options_;
  const http::ClientOptions http_options_;  // without an exec plugin's client certificate
  std::mutex http_mu_;
  std::shared_ptr<http::Client> http_;                // guarded by http_mu_
  std::string http_cert_pem_;                         // guarded by http_mu_; http_'s client cert
  std::vector<std::weak_ptr<http::Client>> retired_;  // guarded by http_mu_; still in use
  bool shut_down_ = false;                            // guarded by http_mu_
  std::optional<TokenBucket> bucket_;                 // none: no client-side rate limit
  ServerThrottle throttle_;                           // the API server's 429s, per class
  std::mutex warnings_mu_;
  LruCache<std::string, bool> warnings_seen_;  // guarded by warnings_mu_
};

}  // namespace

bool is_client_throttled(const Error& error) {
  return error.code == ErrorCode::kTooManyRequests && error.http_status == 0;
}

Result<std::unique_ptr<Client>> Client::create(asio::any_io_executor executor, RestConfig config,
                                               ClientOptions options) {
  if (config.scheme != "https" && config.scheme != "http") {
    return Error(ErrorCode::kInvalid,
                 config.origin + ": unsupported scheme \"" + config.scheme + "\" in server URL");
  }
  if (options.throttle_backoff.count() <= 0 ||
      options.max_throttle_backoff < options.throttle_backoff) {
    return Error(ErrorCode::kInvalid,
                 "the throttle backoff must be positive and at most its maximum, got " +
                     std::to_string(options.throttle_backoff.count()) + "ms and " +
                     std::to_string(options.max_throttle_backoff.count()) + "ms");
  }
  http::ClientOptions http_options;
  http_options.host = config.host;
  http_options.port = config.port;
  http_options.tls = config.scheme == "https";
  http_options.tls_options.ca_pem = config.ca_pem;
  http_options.tls_options.client_cert_pem = config.client_cert_pem;
  http_options.tls_options.client_key_pem = config.client_key_pem;
  http_options.tls_options.insecure_skip_verify = config.insecure_skip_tls_verify;
  http_options.tls_options.server_name = config.tls_server_name;
  http_options.request_timeout = options.request_timeout;
  if (config.exec) {
    // The plugin's credential replaces the user's certificate (and token).
    http_options.tls_options.client_cert_pem.clear();
    http_options.tls_options.client_key_pem.clear();
  }
  auto http = http::Client::create(executor, http_options);
  if (!http) {
    Error error = http.error();
    error.message = config.origin + ": " + error.message;
    return error;
  }
  return std::unique_ptr<Client>(
      std::make_unique<ClientImpl>(std::move(executor), std::move(config), std::move(options),
                                   std::move(http_options), std::move(*http)));
}

}  // namespace nmo::kube
