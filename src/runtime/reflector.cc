#include "runtime/reflector.h"

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/system/error_code.hpp>

#include "base/backoff.h"
#include "base/check.h"
#include "base/error.h"

namespace nmo::runtime::internal {
namespace {

using namespace std::chrono_literals;

// kube-rs's default watcher backoff: 0.8 s doubling to 30 s, full jitter, forgotten after 2 min
// of healthy watching.
constexpr BackoffOptions kBackoff{
    .initial = 800ms, .max = 30s, .factor = 2.0, .full_jitter = true, .reset_after = 120s};

// The server ends each watch after this long (kube-rs: 290 s, under the API server's 5-10 min
// range), and the client gives up on a silent stream 5 s later (kube-rs's idle margin).
constexpr std::chrono::seconds kWatchTimeout{290};
constexpr std::chrono::seconds kIdleMargin{5};

// Page size of the list (kube-rs and client-go pagers).
constexpr std::int64_t kPageSize = 500;

std::int64_t to_millis(std::chrono::nanoseconds delay) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(delay).count();
}

}  // namespace

ReflectorLoop::ReflectorLoop(const asio::any_io_executor& executor, kube::Client& client,
                             std::string kind, std::string ns, std::string collection_path,
                             kube::ListOptions selectors, const Clock& clock)
    : strand_(asio::make_strand(executor)),
      client_(client),
      ns_(std::move(ns)),
      collection_path_(std::move(collection_path)),
      selectors_(std::move(selectors)),
      clock_(clock),
      logger_(log::root().with({{"reflector", kind},
                                {"namespace", ns_},
                                {"label_selector", selectors_.label_selector},
                                {"field_selector", selectors_.field_selector}})),
      backoff_timer_(strand_),
      done_timer_(strand_, asio::steady_timer::time_point::max()) {}

ReflectorLoop::~ReflectorLoop() {
  NMO_CHECK(!running_.load(), "Reflector destroyed while its loop runs: call stop() first");
}

void ReflectorLoop::start() {
  asio::post(strand_, [this] {
    if (started_ || stopping_) return;
    started_ = true;
    running_.store(true);
    asio::co_spawn(strand_, run(), [](const std::exception_ptr& error) {
      // Only a change handler can throw here: a bug, so let it end the program.
      if (error) std::rethrow_exception(error);
    });
  });
}

asio::awaitable<void> ReflectorLoop::stop() {
  co_await asio::co_spawn(strand_, stop_on_strand(), asio::use_awaitable);
}

asio::awaitable<void> ReflectorLoop::stop_on_strand() {
  stopping_ = true;
  if (watch_ != nullptr) watch_->cancel();
  backoff_timer_.cancel();
  for (asio::steady_timer* waiter : sync_waiters_) waiter->cancel();
  while (running_.load()) {
    boost::system::error_code ignored;
    co_await done_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

asio::awaitable<bool> ReflectorLoop::wait_synced(std::chrono::milliseconds timeout) {
  co_return co_await asio::co_spawn(strand_, wait_synced_on_strand(timeout), asio::use_awaitable);
}

asio::awaitable<bool> ReflectorLoop::wait_synced_on_strand(std::chrono::milliseconds timeout) {
  if (synced() || stopping_) co_return synced();
  asio::steady_timer timer(strand_, timeout);
  sync_waiters_.push_back(&timer);
  boost::system::error_code ignored;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  std::erase(sync_waiters_, &timer);
  co_return synced();
}

void ReflectorLoop::mark_synced() {
  if (synced_.exchange(true)) return;
  for (asio::steady_timer* waiter : sync_waiters_) waiter->cancel();
}

void ReflectorLoop::finished() {
  running_.store(false);
  done_timer_.cancel();
  logger_.debug(1, "reflector stopped");
}

asio::awaitable<void> ReflectorLoop::pause(std::chrono::nanoseconds delay) {
  backoff_timer_.expires_after(delay);
  boost::system::error_code ignored;  // cancelled by stop()
  co_await backoff_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

asio::awaitable<void> ReflectorLoop::run() {
  ExponentialBackoff backoff(kBackoff);
  std::string version;  // empty: the store must be (re)filled by a list
  bool listed_before = false;
  while (!stopping_) {
    if (version.empty()) {
      kube::ListOptions options;
      options.label_selector = selectors_.label_selector;
      options.field_selector = selectors_.field_selector;
      options.limit = kPageSize;
      Result<std::string> listed = co_await list_into_store(std::move(options));
      if (stopping_) break;
      if (!listed) {
        const std::chrono::nanoseconds delay = backoff.next();
        logger_.info("list failed; retrying",
                     {{"reason", listed.error().describe()}, {"delay_ms", to_millis(delay)}});
        co_await pause(delay);
        continue;
      }
      if (listed_before) relists_.fetch_add(1, std::memory_order_relaxed);
      listed_before = true;
      version = std::move(*listed);
      backoff.reset();
      mark_synced();
      logger_.debug(1, "listed", {{"resource_version", version}});
    }

    const Clock::time_point watch_started = clock_.now();
    WatchEnd end = co_await watch_once(version);
    version = std::move(end.version);
    const Result<void>& ended = end.outcome;
    if (stopping_) break;
    watch_restarts_.fetch_add(1, std::memory_order_relaxed);
    if (ended) {
      logger_.info("restarting the watch",
                   {{"reason", "closed by the server"}, {"resource_version", version}});
      continue;
    }
    const Error& error = ended.error();
    if (error.code == ErrorCode::kExpired || error.code == ErrorCode::kGone) {
      logger_.info("relisting", {{"reason", error.describe()}, {"resource_version", version}});
      version.clear();
      continue;
    }
    backoff.reset_after_healthy(clock_.now() - watch_started);
    const std::chrono::nanoseconds delay = backoff.next();
    logger_.info("restarting the watch", {{"reason", error.describe()},
                                          {"resource_version", version},
                                          {"delay_ms", to_millis(delay)}});
    co_await pause(delay);
  }
  finished();
}

asio::awaitable<ReflectorLoop::WatchEnd> ReflectorLoop::watch_once(std::string version) {
  kube::WatchOptions options;
  options.label_selector = selectors_.label_selector;
  options.field_selector = selectors_.field_selector;
  options.resource_version = version;
  options.allow_bookmarks = true;
  options.timeout = kWatchTimeout;
  options.idle_timeout = kWatchTimeout + kIdleMargin;
  std::string path = collection_path_;
  auto opened = co_await client_.watch(std::move(path), std::move(options));
  if (!opened) co_return WatchEnd{opened.error(), std::move(version)};
  std::unique_ptr<kube::WatchStream> stream = std::move(*opened);
  watch_ = stream.get();
  if (stopping_) stream->cancel();  // stop() came while the watch was being opened

  Result<void> outcome;
  for (;;) {
    Result<std::optional<kube::WatchEvent>> next = co_await stream->next();
    if (!next) {
      outcome = next.error();
      break;
    }
    if (!next->has_value()) break;  // the server ended the watch (its timeout)
    const kube::WatchEvent& event = **next;
    if (event.type == kube::WatchEventType::kError) {
      outcome = kube::error_from_watch_error(event);
      break;
    }
    if (event.type != kube::WatchEventType::kBookmark) apply_event(event);
    std::string seen = kube::resource_version_of(event.object);
    if (!seen.empty()) version = std::move(seen);
  }
  watch_ = nullptr;
  co_return WatchEnd{std::move(outcome), std::move(version)};
}

}  // namespace nmo::runtime::internal
