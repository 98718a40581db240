// TestServer: a small in-process HTTP/1.1 server (plain or TLS) on 127.0.0.1 and an ephemeral
// port, driven by a scripted handler per connection, for tests of HTTP clients (and later of
// anything that talks to a server). It counts accepted and closed connections, records every
// request and what each TLS handshake presented (SNI, client certificate), and can stream bytes
// that the test pushes on demand.
//
// Threading: the server runs its own io_context on its own thread; handlers and ServerConnection
// run there. Every TestServer member function may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "http/asio.h"
#include "http/message.h"

namespace nmo::http::test {

// A request as the server parsed it.
struct ReceivedRequest {
  std::string method;  // "GET"
  std::string target;  // "/api/v1/pods?limit=1"
  Headers headers;
  std::string body;
  bool keep_alive = true;  // false when the client sent "Connection: close"

  // The first value of header `name` (case-insensitive), or std::nullopt.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const {
    return find_header(headers, name);
  }
};

// What happens to the connection after a response.
enum class AfterResponse {
  kKeepAlive,      // keep serving requests on it
  kClose,          // send "Connection: close", then close
  kCloseSilently,  // promise keep-alive, then close anyway (a server dropping idle connections)
};

// A response with Content-Length framing.
struct ServerResponse {
  unsigned status = 200;
  Headers headers;
  std::string body;
  AfterResponse after = AfterResponse::kKeepAlive;
};

// What a TLS handshake presented to the server.
struct HandshakeInfo {
  std::optional<std::string> sni;         // server name the client sent, if any
  std::optional<std::string> client_cn;   // client certificate subject CN, if a cert was sent
  std::optional<std::string> client_org;  // client certificate subject O
};

// One accepted connection, as a handler sees it (on the server thread). Calls must not overlap.
// Keep co_await out of conditions and pass named values, not temporaries: write
// `bool sent = co_await c.write_response(std::move(ok)); if (!sent) ...`, not
// `if (!co_await c.write_response({}))`. GCC 12 mis-handles non-trivial temporaries around
// co_await in conditions and crashes.
class ServerConnection {
 public:
  virtual ~ServerConnection();

  // The next request, or std::nullopt when the client closed the connection or sent garbage.
  virtual asio::awaitable<std::optional<ReceivedRequest>> read_request() = 0;
  // Writes `response` (and closes afterwards as response.after says); false on a write error.
  virtual asio::awaitable<bool> write_response(ServerResponse response) = 0;
  // Writes exactly `bytes` (a hand-made status line, a partial body, chunk framing, ...).
  virtual asio::awaitable<bool> write_raw(std::string bytes) = 0;
  // The next item pushed with TestServer::push(): bytes to send, or std::nullopt once the test
  // called push_end() (or the server stops).
  virtual asio::awaitable<std::optional<std::string>> next_pushed() = 0;
  // Suspends until the server stops: a server that never answers.
  virtual asio::awaitable<void> wait_until_stopped() = 0;
  // Closes the TCP connection at once: no TLS close_notify (a truncation, as the client sees it).
  virtual void close() = 0;

 protected:
  ServerConnection() = default;
};

// Handles one connection; the server closes it when the handler returns.
using Handler = std::function<asio::awaitable<void>(ServerConnection&)>;

// The server's configuration.
struct TestServerOptions {
  Handler handler;
  // PEM certificate chain and key: TLS. Both empty: plain HTTP.
  std::string cert_pem;
  std::string key_pem;
  // Non-empty: a client certificate signed by this CA is required (mutual TLS).
  std::string client_ca_pem;
};

// A running test server (see the file comment); stopped by destruction.
class TestServer {
 public:
  // Listens on 127.0.0.1 at a free port and starts serving. kInvalid on unusable PEM data,
  // kUnavailable when it cannot listen.
  [[nodiscard]] static Result<std::unique_ptr<TestServer>> start(TestServerOptions options);

  // Stops accepting, closes every connection, wakes every handler waiting in
  // wait_until_stopped() or next_pushed(), and joins the server thread.
  virtual ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // The port the server listens on, as text for ClientOptions::port.
  [[nodiscard]] virtual std::string port() const = 0;

  // Connections accepted so far.
  [[nodiscard]] virtual int accepted_connections() const = 0;
  // Connections whose handler finished and which the server closed.
  [[nodiscard]] virtual int closed_connections() const = 0;
  // Every request read so far, in order.
  [[nodiscard]] virtual std::vector<ReceivedRequest> requests() const = 0;
  // What each completed TLS handshake presented, in order.
  [[nodiscard]] virtual std::vector<HandshakeInfo> handshakes() const = 0;

  // Block until `count` requests were read / `count` connections closed, or `limit` passes;
  // false on timeout.
  [[nodiscard]] virtual bool wait_for_requests(
      std::size_t count, std::chrono::milliseconds limit = std::chrono::seconds(10)) const = 0;
  [[nodiscard]] virtual bool wait_for_closed_connections(
      int count, std::chrono::milliseconds limit = std::chrono::seconds(10)) const = 0;

  // Queues `bytes` for a handler awaiting ServerConnection::next_pushed().
  virtual void push(std::string bytes) = 0;
  // After the queued bytes, next_pushed() returns std::nullopt.
  virtual void push_end() = 0;

 protected:
  TestServer() = default;
};

// Ready-made handlers.

// Answers every request on the connection with respond(request), keeping it alive as the
// response says.
[[nodiscard]] Handler answer(std::function<ServerResponse(const ReceivedRequest&)> respond);
// Answers every request with the same response.
[[nodiscard]] Handler answer_with(ServerResponse response);
// Accepts the connection and never reads or writes: a hung server (or, for a TLS client, a
// handshake that never completes).
[[nodiscard]] Handler never_answer();
// Answers each request with `status` and a chunked body whose chunks are the pushed items (one
// chunk per push), ended by the terminating chunk at push_end().
[[nodiscard]] Handler stream_pushed(unsigned status = 200);

// `data` framed as one HTTP/1.1 chunk: "<hex size>\r\n<data>\r\n". Empty `data` gives the
// terminating chunk, so push non-empty pieces only.
[[nodiscard]] std::string chunk(std::string_view data);

}  // namespace nmo::http::test
