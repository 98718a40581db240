#include "runtime/watch_set.h"

#include <algorithm>
#include <chrono>

namespace nmo::runtime {

void WatchSet::start() {
  started_ = true;
  for (Entry& entry : entries_) entry.reflector->start();
}

asio::awaitable<Result<void>> WatchSet::wait_synced(std::chrono::milliseconds timeout) {
  // One deadline for all of them. By index: a reflector added while waiting (see add()) is
  // waited for too.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto left = std::max(std::chrono::milliseconds(0),
                               std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()));
    if (!co_await entries_[i].reflector->wait_synced(left)) {
      co_return Error(ErrorCode::kTimeout, entries_[i].what + " did not sync");
    }
  }
  co_return Result<void>();
}

asio::awaitable<void> WatchSet::stop() {
  for (std::size_t i = 0; i < entries_.size(); ++i) co_await entries_[i].reflector->stop();
}

}  // namespace nmo::runtime
