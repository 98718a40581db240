// Client: the Kubernetes API client ("client-go") on top of the HTTP layer: authentication
// (client certificate, a bearer token re-read as it rotates, or an exec credential plugin's token
// or certificate, fetched again when it expires and once after a 401), impersonation headers
// (RestConfig::impersonate_*), client-side rate limiting (when asked for),
// retries where they are safe, Status errors decoded into nmo::Error, API warnings logged, and
// typed calls over the projections of kube/api.
//
// Retries: reads (GET, list) are retried on connection failures and 502/503/504, and every
// request is retried when API Priority & Fairness throttles it (429) — except evictions, whose
// 429 is a business answer (eviction.h) returned to the caller untouched. Writes are never
// retried on connection failures: the server may have applied them.
//
// Throttling: a 429 of Priority & Fairness (evictions' included) slows down the whole class of
// the request, reads or writes (server_throttle.h): later requests of the class, retries
// included, wait for Retry-After or a backoff growing with consecutive 429s, whichever is
// longer, with jitter; the other class goes on. See ClientOptions::throttle_backoff.
//
// Writes take and return raw JSON (boost::json::value), so fields we never decode are never
// dropped; patches are the preferred way to change objects (a merge patch of the fields we own,
// or a JSON patch with a `test` operation when a concurrent change must not be lost).
//
// Coroutine parameters are taken by value: an awaitable may outlive the caller's temporaries.
//
// Threading: every call may be awaited concurrently from coroutines on any executor.
// shutdown() may be called from any thread. Destroy the Client before its io_context.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "base/backoff.h"
#include "base/result.h"
#include "http/asio.h"
#include "http/message.h"
#include "kube/api/list.h"
#include "kube/api/resource.h"
#include "kube/api/watch.h"
#include "kube/client/eviction.h"
#include "kube/client/request_options.h"
#include "kube/config/rest_config.h"

namespace nmo::kube {

struct ClientOptions {
  /// Client-side rate limit: `qps` requests a second after a burst of `burst`. Zero or
  /// negative: none, the API server's Priority and Fairness is the brake (its 429s are retried
  /// after Retry-After), as controller-runtime's default since v0.15.
  double qps = 20.0;
  int burst = 30;
  /// Bounds of the wait for a rate-limit token (docs/reliability.md, "Hostile clients"): a
  /// request whose token would not be due within `max_rate_limit_wait`, or that would queue
  /// behind `max_rate_limit_waiters` others, fails at once with a client-side throttle
  /// (is_client_throttled()) instead of borrowing from the future without end. The defaults
  /// hold 30 s of requests at the default rate: a request that cannot even start within the
  /// time it would be given to finish (request_timeout) is better failed and retried by its
  /// caller's backoff.
  std::chrono::milliseconds max_rate_limit_wait{std::chrono::seconds(30)};
  int max_rate_limit_waiters = 600;
  std::string user_agent = "node-maintenance-operator";
  /// Per request (not for watch bodies, which have WatchOptions::idle_timeout).
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
  /// How many times a request may be retried (see the header comment for which ones).
  int max_retries = 4;
  /// First pause between retries of a failed read; doubles up to 8 s.
  std::chrono::milliseconds retry_backoff{std::chrono::milliseconds(250)};
  /// After the API server's Priority and Fairness throttled a request (429), every request of
  /// its class (reads: GET, list, watch; writes: the rest, evictions included) waits until
  /// now + d..1.5 d at random, d being the larger of Retry-After (1 s when absent, at most 30 s)
  /// and a backoff starting at `throttle_backoff` and doubling per consecutive 429 wave of the
  /// class up to `max_throttle_backoff`. An answer that is not a throttle resets the backoff. A
  /// request whose wait would end past its deadline (request_timeout after the call began) fails
  /// at once instead (is_client_throttled()), and its caller retries with its own backoff. Both
  /// must be positive, the second at least the first.
  std::chrono::milliseconds throttle_backoff{std::chrono::seconds(1)};
  std::chrono::milliseconds max_throttle_backoff{std::chrono::seconds(30)};
  /// Numbers in [0, 1) for that jitter. Empty: a random engine of the client's own. Tests
  /// inject fixed ones.
  UniformRandom random;
  /// Called once per HTTP attempt (retries included, watches when they open) with the method
  /// ("GET") and the status code as text ("200"), or "<error>" when no response came: the
  /// labels of client-go's rest_client_requests_total. Runs on the client's executor; keep it
  /// cheap. Empty: nothing is observed.
  std::function<void(std::string_view method, std::string_view code)> on_attempt;
};

/// Whether `error` is the client's own refusal to queue a request behind its rate limit
/// (ClientOptions::max_rate_limit_wait / max_rate_limit_waiters) or behind the API server's
/// throttling of its class past its deadline (ClientOptions::throttle_backoff): kTooManyRequests
/// with no HTTP status, the API server never asked. Its retry_after says when trying again makes
/// sense.
[[nodiscard]] bool is_client_throttled(const Error& error);

/// A watch in progress. Obtained from Client::watch().
///
/// Threading: next() is awaited by one coroutine at a time; cancel() from any thread.
class WatchStream {
 public:
  virtual ~WatchStream() = default;

  /// The next event. std::nullopt when the server ended the watch normally (its timeout): watch
  /// again from the last resourceVersion. Errors: an ERROR event becomes its Status as an Error
  /// (ErrorCode::kExpired when the version is too old: relist); kTimeout when the stream stayed
  /// silent past WatchOptions::idle_timeout; kInvalid for a line that is not a watch event;
  /// kUnavailable when the connection broke; kCancelled after cancel().
  virtual asio::awaitable<Result<std::optional<WatchEvent>>> next() = 0;

  /// Ends the watch; a pending or later next() fails with kCancelled.
  virtual void cancel() = 0;
};

class Client {
 public:
  /// A client for the API server of `config`; nothing is connected yet. Fails when the TLS
  /// material in `config` is unusable.
  [[nodiscard]] static Result<std::unique_ptr<Client>> create(asio::any_io_executor executor,
                                                              RestConfig config,
                                                              ClientOptions options = {});
  virtual ~Client() = default;

  [[nodiscard]] virtual const RestConfig& config() const = 0;

  // ---- raw JSON calls; `path` is the URL path with its query, without the server's prefix ----

  /// GET `path`; the decoded JSON body.
  virtual asio::awaitable<Result<boost::json::value>> get_json(std::string path) = 0;
  /// POST `object` to the collection at `path`.
  virtual asio::awaitable<Result<boost::json::value>> create(std::string path,
                                                             boost::json::value object,
                                                             WriteOptions options = {}) = 0;
  /// PUT `object` (carrying metadata.resourceVersion for optimistic concurrency: a stale
  /// version fails with kConflict).
  virtual asio::awaitable<Result<boost::json::value>> update(std::string path,
                                                             boost::json::value object,
                                                             WriteOptions options = {}) = 0;
  /// PATCH with `body` in the format of `type` (a failed JSON-patch `test` is kInvalid).
  virtual asio::awaitable<Result<boost::json::value>> patch(std::string path, PatchType type,
                                                            std::string body,
                                                            WriteOptions options = {}) = 0;
  /// DELETE; a missing object is kNotFound, a failed precondition kConflict.
  virtual asio::awaitable<Result<void>> remove(std::string path, DeleteOptions options = {}) = 0;

  /// POST pods/<name>/eviction. Refusals are an EvictionResult, not an Error: an Error means
  /// the API server could not be asked (connection, timeout, cancellation).
  virtual asio::awaitable<Result<EvictionResult>> evict(std::string namespace_, std::string name,
                                                        EvictOptions options = {}) = 0;

  /// GET of a collection path with `options`: the raw body of one page.
  virtual asio::awaitable<Result<std::string>> list_raw(std::string path, ListOptions options) = 0;

  /// Opens a watch on the collection at `path`. A refused watch is an Error (a too-old
  /// resourceVersion is kExpired or kGone: relist).
  virtual asio::awaitable<Result<std::unique_ptr<WatchStream>>> watch(std::string path,
                                                                      WatchOptions options) = 0;

  /// Cancels everything in flight; later calls fail with kCancelled. Idempotent.
  virtual void shutdown() = 0;

  // ---- typed calls over the projections of kube/api ----

  /// One object, decoded into T.
  template <Resource T>
  asio::awaitable<Result<T>> get(std::string namespace_, std::string name) {
    auto json = co_await get_json(object_path<T>(namespace_, name));
    if (!json) co_return json.error();
    co_return ResourceInfo<T>::decode(*json);
  }

  /// One page of the collection of T in `namespace_` ("" = all namespaces, or cluster-scoped).
  template <Resource T>
  asio::awaitable<Result<ListPage<T>>> list(std::string namespace_, ListOptions options) {
    auto body = co_await list_raw(collection_path<T>(namespace_), options);
    if (!body) co_return body.error();
    co_return decode_list<T>(*body);
  }

  /// Every page of the collection (following `continue`), as one page whose resource_version
  /// is the last page's, ready for a watch.
  template <Resource T>
  asio::awaitable<Result<ListPage<T>>> list_all(std::string namespace_, ListOptions options) {
    ListPage<T> all;
    for (;;) {
      auto page = co_await list<T>(namespace_, options);
      if (!page) co_return page.error();
      for (auto& item : page->items) all.items.push_back(std::move(item));
      all.resource_version = page->resource_version;
      if (page->continue_token.empty()) break;
      options.continue_token = page->continue_token;
    }
    co_return all;
  }

  /// A watch on the collection of T in `namespace_`.
  template <Resource T>
  asio::awaitable<Result<std::unique_ptr<WatchStream>>> watch(std::string namespace_,
                                                              WatchOptions options) {
    co_return co_await watch(collection_path<T>(namespace_), options);
  }

 protected:
  Client() = default;
};

}  // namespace nmo::kube
