#include "http/internal/connection_pool.h"

#include <utility>

namespace nmo::http::internal {

std::unique_ptr<Connection> ConnectionPool::take(Clock::time_point now) {
  while (!idle_.empty()) {
    std::unique_ptr<Connection> connection = std::move(idle_.back());
    idle_.pop_back();
    if (now - connection->idle_since() >= idle_timeout_) {
      // The newest is too old, so every older one is too.
      clear();
      return nullptr;
    }
    if (connection->idle_and_usable()) {
      return connection;
    }
  }
  return nullptr;
}

void ConnectionPool::put(std::unique_ptr<Connection> connection, Clock::time_point now) {
  if (max_idle_ == 0) {
    return;
  }
  connection->mark_idle(now);
  idle_.push_back(std::move(connection));
  if (idle_.size() > max_idle_) {
    idle_.pop_front();
  }
}

void ConnectionPool::clear() noexcept { idle_.clear(); }

}  // namespace nmo::http::internal
