// Client: an HTTPS (or plain HTTP) HTTP/1.1 client for one server, with a keep-alive connection
// pool, connect/request/idle timeouts, TLS verification (hostname and IP SANs), client
// certificates, and streaming bodies for Kubernetes watches. Built on Boost.Beast and OpenSSL,
// which stay behind this interface (client_impl in internal/); a test can implement Client to
// fake the transport.
//
// Errors are values: connection failures (refused, DNS, TLS handshake, reset) are kUnavailable,
// deadlines kTimeout, cancellation kCancelled, unusable options or request fields kInvalid. HTTP
// statuses are not errors here: a 404 is a Response with status 404.
//
// Threading: send() and stream() may be awaited concurrently from any coroutines on any
// executors; the client serialises its own state on a strand of the executor given to create().
// shutdown() may be called from any thread. Destroy the Client (and its LineStreams) before the
// io_context it runs on; a destroyed Client shuts down first.
#pragma once

#include <memory>

#include "base/result.h"
#include "http/asio.h"
#include "http/client_options.h"
#include "http/line_stream.h"
#include "http/message.h"

namespace nmo::http {

// An HTTP/1.1 client for one server (see the file comment for errors and threading).
class Client {
 public:
  // A client for options.host:options.port whose I/O runs on `executor`. Nothing is connected
  // yet. Fails with kInvalid when the host or port is empty, or when the PEM data in
  // options.tls_options is unusable (the message names the field: "ca_pem: ...").
  [[nodiscard]] static Result<std::unique_ptr<Client>> create(asio::any_io_executor executor,
                                                              ClientOptions options);

  virtual ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` and reads the complete response, on a pooled keep-alive connection when one
  // is idle. A pooled connection the server closed meanwhile is retried once on a fresh
  // connection, but only if the failure came before any byte of the response (so the server
  // cannot have answered). Bounded by request.timeout or ClientOptions::request_timeout.
  virtual asio::awaitable<Result<Response>> send(Request request) = 0;

  // Sends `request` and returns once the response headers have arrived, leaving the body to be
  // read line by line. The connection belongs to the stream while it is open. The timeout covers
  // connecting, sending and receiving the headers; reading the body has its own idle timeout.
  virtual asio::awaitable<Result<std::unique_ptr<LineStream>>> stream(Request request) = 0;

  // Cancels everything in flight (requests and open streams fail with kCancelled), closes idle
  // connections, and makes every later send() or stream() fail with kCancelled. Idempotent.
  virtual void shutdown() = 0;

 protected:
  Client() = default;
};

}  // namespace nmo::http
