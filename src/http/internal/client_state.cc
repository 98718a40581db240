#include "http/internal/client_state.h"

#include <algorithm>
#include <utility>

namespace nmo::http::internal {

LeasedConnection ClientState::take_idle() {
  if (shut_down) {
    return {};
  }
  std::unique_ptr<Connection> connection = pool.take(Clock::now());
  if (!connection) {
    return {};
  }
  return {shared_from_this(), std::move(connection)};
}

asio::awaitable<Result<LeasedConnection>> ClientState::open_new(Clock::time_point deadline) {
  const std::string connect_to = "connect to " + server.authority;
  if (shut_down) {
    co_return Error(ErrorCode::kCancelled, connect_to + ": cancelled");
  }
  const Clock::time_point now = Clock::now();
  const auto budget = std::min(
      options.connect_timeout,
      std::chrono::ceil<std::chrono::milliseconds>(std::max(deadline - now, Clock::duration{})));
  LeasedConnection lease(shared_from_this(), std::make_unique<Connection>(strand, tls.get()));
  Result<void> opened = co_await lease->open(server, std::min(deadline, now + budget), budget);
  if (!opened) {
    if (shut_down) {
      co_return Error(ErrorCode::kCancelled, connect_to + ": cancelled");
    }
    co_return std::move(opened).error();
  }
  co_return lease;
}

void ClientState::close_all() noexcept {
  pool.clear();
  for (Connection* connection : in_use) {
    connection->close();
  }
}

LeasedConnection::LeasedConnection(std::shared_ptr<ClientState> state,
                                   std::unique_ptr<Connection> connection)
    : state_(std::move(state)), connection_(std::move(connection)) {
  state_->in_use.insert(connection_.get());
  if (state_->shut_down) {
    // shutdown() ran close_all() before this lease existed: close it like the others.
    connection_->close();
  }
}

LeasedConnection::~LeasedConnection() { give_back(false); }

LeasedConnection::LeasedConnection(LeasedConnection&& other) noexcept
    : state_(std::move(other.state_)), connection_(std::move(other.connection_)) {}

LeasedConnection& LeasedConnection::operator=(LeasedConnection&& other) noexcept {
  if (this != &other) {
    give_back(false);
    state_ = std::move(other.state_);
    connection_ = std::move(other.connection_);
  }
  return *this;
}

void LeasedConnection::give_back(bool reusable) {
  if (!connection_) {
    return;
  }
  state_->in_use.erase(connection_.get());
  if (reusable && !state_->shut_down && !connection_->was_closed()) {
    state_->pool.put(std::move(connection_), Clock::now());
  }
  connection_.reset();
  state_.reset();
}

}  // namespace nmo::http::internal
