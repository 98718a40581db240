#include "runtime/cache.h"

#include <algorithm>
#include <chrono>

#include <boost/asio/redirect_error.hpp>
#include <boost/system/error_code.hpp>

namespace nmo::runtime {

Cache::Cache(asio::any_io_executor executor, kube::Client& client, CacheOptions options,
             const Clock& clock)
    : executor_(std::move(executor)), client_(client), options_(options), clock_(clock) {}

Cache::~Cache() = default;

asio::awaitable<Result<void>> Cache::start() {
  if (started_ || stopped_) co_return Result<void>();
  started_ = true;
  for (const std::string& key : declared_order_) declared_.at(key).reflector->start();
  co_return Result<void>();
}

asio::awaitable<Result<void>> Cache::wait_synced(
    std::vector<const internal::ReflectorLoop*> informers, std::chrono::milliseconds timeout) {
  // One deadline for all of them.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const internal::ReflectorLoop* informer : informers) {
    auto entry = std::find_if(declared_.begin(), declared_.end(), [&](const auto& declared) {
      return declared.second.reflector.get() == informer;
    });
    NMO_CHECK(entry != declared_.end(), "Cache::wait_synced for an informer it did not declare");
    const auto left = std::max(std::chrono::milliseconds(0),
                               std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()));
    if (!co_await entry->second.reflector->wait_synced(left)) {
      co_return Error(ErrorCode::kTimeout, entry->second.what + " did not sync");
    }
  }
  co_return Result<void>();
}

asio::awaitable<void> Cache::stop() {
  if (stopped_) co_return;
  stopped_ = true;
  for (const std::string& key : declared_order_) co_await declared_.at(key).reflector->stop();
  // By key, not by iterator: a linger coroutine may erase its entry while this one waits.
  std::vector<std::string> keys;
  for (const auto& [key, entry] : scoped_) keys.push_back(key);
  for (const std::string& key : keys) {
    auto found = scoped_.find(key);
    if (found == scoped_.end()) continue;
    if (found->second.linger != nullptr) found->second.linger->cancel();
    co_await found->second.reflector->stop();
  }
}

void Cache::release(const std::string& key) {
  auto found = scoped_.find(key);
  NMO_CHECK(found != scoped_.end(), "Cache::release of an unknown informer: " + key);
  Scoped& entry = found->second;
  NMO_CHECK(entry.holders > 0, "Cache::release without a holder: " + key);
  if (--entry.holders > 0 || stopped_) return;
  if (entry.linger == nullptr) {
    entry.linger = std::make_unique<asio::steady_timer>(executor_);
    entry.linger->expires_after(options_.linger);
    asio::co_spawn(executor_, stop_after_linger(key), asio::detached);
  } else {
    // A linger coroutine is still waiting (cancelled by an acquire, not yet resumed): it looks
    // at the holders again when it wakes, so give it the new deadline.
    entry.linger->expires_after(options_.linger);
  }
}

asio::awaitable<void> Cache::stop_after_linger(std::string key) {
  for (;;) {
    auto found = scoped_.find(key);
    if (found == scoped_.end()) co_return;
    asio::steady_timer& timer = *found->second.linger;
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    found = scoped_.find(key);
    if (found == scoped_.end()) co_return;
    Scoped& entry = found->second;
    if (stopped_) co_return;  // stop() stops it
    if (entry.holders > 0) {
      entry.linger.reset();  // held again; the next last release starts a new linger
      co_return;
    }
    if (ec == asio::error::operation_aborted) continue;  // re-armed by a release meanwhile
    // Nobody took it again within the linger: it goes. The reflector lives on in this
    // coroutine until it stopped.
    std::unique_ptr<internal::ReflectorLoop> reflector = std::move(entry.reflector);
    scoped_.erase(found);
    co_await reflector->stop();
    co_return;
  }
}

}  // namespace nmo::runtime
