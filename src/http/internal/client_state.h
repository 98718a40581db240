// ClientState: what one client's requests and streams share (options, server address, TLS
// context, connection pool, the connections in use) and the leases that hand connections out and
// take them back. Kept alive by shared_ptr from the Client, every request in flight and every
// open stream, so shutdown and late completions never touch freed memory.
//
// Threading: the const members and `shut_down` may be read from any thread. Everything else
// (pool, in_use, every LeasedConnection operation) is confined to `strand`.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_set>

#include <boost/asio/ssl/context.hpp>

#include "base/result.h"
#include "http/asio.h"
#include "http/client_options.h"
#include "http/internal/connection.h"
#include "http/internal/connection_pool.h"

namespace nmo::http::internal {

class LeasedConnection;

// The shared core of one client: configuration, the pool, and the connections in use.
struct ClientState : std::enable_shared_from_this<ClientState> {
  ClientState(Strand client_strand, ClientOptions client_options, ServerAddress address,
              std::shared_ptr<asio::ssl::context> tls_context)
      : strand(std::move(client_strand)),
        options(std::move(client_options)),
        server(std::move(address)),
        tls(std::move(tls_context)),
        pool(options.max_idle_connections, options.idle_connection_timeout) {}

  // Strand: an idle pooled connection that still looks usable, or an empty lease.
  [[nodiscard]] LeasedConnection take_idle();
  // Strand: a new connection, opened before `deadline` (and within connect_timeout).
  asio::awaitable<Result<LeasedConnection>> open_new(Clock::time_point deadline);
  // Strand: closes every pooled and leased connection (Client::shutdown()).
  void close_all() noexcept;

  const Strand strand;
  const ClientOptions options;
  const ServerAddress server;
  const std::shared_ptr<asio::ssl::context> tls;  // null for plain HTTP
  // Set once by shutdown(); checked before any new connection is used.
  std::atomic<bool> shut_down{false};

  ConnectionPool pool;
  // Connections currently leased to a request or a stream.
  std::unordered_set<Connection*> in_use;
};

// A connection lent to one request or stream: registered in ClientState::in_use (so shutdown can
// close it) until give_back() returns it to the pool or the lease ends, which closes it.
//
// Threading: strand-confined, destructor included.
class LeasedConnection {
 public:
  LeasedConnection() = default;
  LeasedConnection(std::shared_ptr<ClientState> state, std::unique_ptr<Connection> connection);
  ~LeasedConnection();
  LeasedConnection(LeasedConnection&& other) noexcept;
  LeasedConnection& operator=(LeasedConnection&& other) noexcept;

  explicit operator bool() const noexcept { return connection_ != nullptr; }
  Connection& operator*() const noexcept { return *connection_; }
  Connection* operator->() const noexcept { return connection_.get(); }

  // Ends the lease: the connection goes back to the pool when `reusable` and the client is not
  // shut down, and is closed otherwise.
  void give_back(bool reusable);

 private:
  std::shared_ptr<ClientState> state_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace nmo::http::internal
