#include "runtime/watch_set.h"

namespace nmo::runtime {

void WatchSet::start() {
  started_ = true;
  for (Entry& entry : entries_) entry.start();
}

asio::awaitable<Result<void>> WatchSet::wait_synced(std::chrono::milliseconds timeout) {
  // By index: a reflector added while waiting (see add()) is waited for too.
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (!co_await entries_[i].wait_synced(timeout)) {
      co_return Error(ErrorCode::kTimeout, entries_[i].what + " did not sync");
    }
  }
  co_return Result<void>();
}

asio::awaitable<void> WatchSet::stop() {
  for (std::size_t i = 0; i < entries_.size(); ++i) co_await entries_[i].stop();
}

}  // namespace nmo::runtime
