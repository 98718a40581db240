// Server: an HTTPS (or plain HTTP) HTTP/1.1 server with keep-alive, for the admission webhook
// (and later /metrics and the health probes). Each request is read completely (within a body
// size limit) and handed to one Handler coroutine, whose Response is written back. Built on
// Boost.Beast and OpenSSL, which stay behind this interface (server.cc, internal/).
//
// TLS: TLS 1.2 or newer, the certificate chain and key read from `cert_dir` (tls.crt, tls.key:
// the layout of a kubernetes.io/tls Secret and of controller-runtime's webhook server). The files
// are polled (modification time, size, inode) every `cert_reload_interval`; when they change,
// the pair is loaded into a new TLS context that every later handshake uses, while connections
// already established keep theirs, so a rotation drops no request. A pair that does not load
// (half written, key not matching) is logged and the previous one stays in use.
//
// What the server answers by itself, never calling the handler: a malformed request, and a
// body over max_body_bytes (the webhook contract asks for 400 there, not 413), get 400, a method
// other than GET/POST/PUT/PATCH/DELETE 405 (each with a one-line text/plain body saying so, then
// the connection is closed); a handler that throws gets 500 (and the exception is logged).
//
// Errors are values: start() fails with kInvalid for unusable options or certificates (the
// message names the file), kUnavailable when it cannot listen.
//
// Not supported: HTTP/2 (no ALPN is negotiated; Go clients such as the API server then speak
// HTTP/1.1), `Expect: 100-continue` (the body is read without an interim response), client
// certificates.
//
// Threading: the server's I/O and every handler call run on a strand of the executor given to
// start(); handlers of different connections interleave at co_await. port() and
// certificate_generation() may be called from any thread; stop() may be awaited from any
// coroutine. Destroy the Server after stop() has completed, before the io_context.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "http/asio.h"
#include "http/message.h"

namespace nmo::http {

// Turns one request into its response. Request::timeout is unused on the server side.
using Handler = std::function<asio::awaitable<Response>(Request)>;

// Where and how to serve.
struct ServerOptions {
  // What the server is for, as it appears in its log lines ("webhook").
  std::string name = "http";
  // IP address to listen on ("0.0.0.0", "127.0.0.1", "::"). Host names are not resolved.
  std::string bind_address = "127.0.0.1";
  // TCP port; 0 picks a free one (see Server::port()).
  std::uint16_t port = 0;
  // Directory holding tls.crt (PEM chain, leaf first) and tls.key (unencrypted PEM key). Empty:
  // the in-memory pair below, or plain HTTP.
  std::string cert_dir;
  std::string cert_file = "tls.crt";
  std::string key_file = "tls.key";
  // Without cert_dir: a PEM chain and key held in memory (e.g. make_self_signed_certificate()),
  // never reloaded. Both empty with an empty cert_dir: plain HTTP.
  std::string certificate_pem;
  std::string key_pem;
  // How often the certificate files are checked for changes.
  std::chrono::milliseconds cert_reload_interval{1000};
  // The largest request body accepted; larger ones get 400 before the body is read.
  std::size_t max_body_bytes = std::size_t{1} << 20U;
  // The largest request line plus header fields accepted; larger ones get 400.
  std::size_t max_header_bytes = std::size_t{16} << 10U;
  // TLS handshake of a new connection.
  std::chrono::milliseconds handshake_timeout{10'000};
  // Reading one request once it has begun (the first request of a connection counts from the
  // handshake, or from the accept for plain HTTP).
  std::chrono::milliseconds read_timeout{10'000};
  // How long a kept-alive connection may wait for its next request. Longer than the 90 s Go
  // clients (the API server's webhook client) keep idle connections, so the client, not the
  // server, closes them: a POST racing with a server-side close would fail, not be retried.
  std::chrono::milliseconds idle_timeout{120'000};
  // Writing one response.
  std::chrono::milliseconds write_timeout{10'000};
  // Connections served at once; further ones are closed as soon as they are accepted.
  std::size_t max_connections = 1024;
};

// A running server (see the file comment).
class Server {
 public:
  // Loads the certificates (when cert_dir is set), listens on bind_address:port and starts
  // accepting on `executor`. Fails with kInvalid when the options or the certificate pair are
  // unusable ("/certs/tls.crt: cannot read: No such file or directory"), kUnavailable when the
  // address cannot be bound ("listen on 0.0.0.0:9443: Address already in use").
  [[nodiscard]] static Result<std::unique_ptr<Server>> start(asio::any_io_executor executor,
                                                             ServerOptions options,
                                                             Handler handler);

  // Without a completed stop(): stops accepting and closes idle connections, without waiting;
  // requests in flight still complete on the executor. Prefer co_await stop() first.
  virtual ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port the server listens on (the chosen one when ServerOptions::port was 0).
  [[nodiscard]] virtual std::uint16_t port() const = 0;

  // Starts at 1 with the certificates loaded by start() and grows by one at each successful
  // reload; 0 for plain HTTP. Lets tests and logs tell which pair new handshakes get.
  [[nodiscard]] virtual std::uint64_t certificate_generation() const = 0;

  // Graceful stop: stops accepting and the certificate polling, closes idle connections, lets
  // requests in flight finish (their responses say "Connection: close") for up to `grace`, then
  // closes whatever is left. Completes when every connection is closed. Idempotent.
  virtual asio::awaitable<void> stop(std::chrono::milliseconds grace) = 0;

 protected:
  Server() = default;
};

}  // namespace nmo::http
