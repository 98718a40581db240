// ConnectionPool: the idle keep-alive connections of one client, most recently used last.
// Bounded in size and in idle age; a connection the server closed while idle is noticed and
// dropped when it would be handed out.
//
// Threading: strand-confined, like the connections it holds.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>

#include "http/internal/connection.h"

namespace nmo::http::internal {

// Idle keep-alive connections waiting for the next request of the same client.
class ConnectionPool {
 public:
  // Keeps at most `max_idle` connections, each for at most `idle_timeout`.
  ConnectionPool(std::size_t max_idle, std::chrono::milliseconds idle_timeout)
      : max_idle_(max_idle), idle_timeout_(idle_timeout) {}

  // The most recently used connection that is still usable at `now`, or nullptr. Connections
  // idle for idle_timeout or longer, or closed by the server, are closed and dropped on the way.
  [[nodiscard]] std::unique_ptr<Connection> take(Clock::time_point now);

  // Keeps `connection` (which just finished a response cleanly) for reuse; when the pool is full
  // the oldest idle connection is closed to make room.
  void put(std::unique_ptr<Connection> connection, Clock::time_point now);

  // Closes and drops every idle connection.
  void clear() noexcept;

  // How many connections are idle.
  [[nodiscard]] std::size_t size() const noexcept { return idle_.size(); }

 private:
  std::size_t max_idle_;
  std::chrono::milliseconds idle_timeout_;
  std::deque<std::unique_ptr<Connection>> idle_;  // oldest first
};

}  // namespace nmo::http::internal
