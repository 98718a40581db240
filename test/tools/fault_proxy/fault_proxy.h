// FaultProxy: a small HTTP/1.1 proxy for fault experiments (docs/reliability.md, "Network faults").
// It listens on 127.0.0.1 at a free port for plain HTTP and forwards each request to one upstream
// HTTPS server (the local kube-apiserver), relaying responses as they arrive, so long watch
// streams flow through it event by event. A client points its kubeconfig at url() (http://, the
// bearer token passes through as a header) and the test breaks the path on purpose:
//
//   FaultProxy proxy({.host = "127.0.0.1", .port = "6443", .ca_pem = ca});
//   proxy.drop_all();                         // every open connection closed, watches included
//   proxy.stall(10s);                         // open connections stop moving bytes for 10 s
//   proxy.refuse(3s);                         // the port refuses connections (ECONNREFUSED)
//   proxy.fail_next(5, 429, 1s);              // the next 5 requests: 429 from "the API server"
//
// Injected answers look like the API server's: a Status body; a 429 carries Retry-After and
// the API Priority & Fairness headers, as kube-apiserver's throttling does. The proxy also
// records every eviction (POST .../pods/<name>/eviction) with its status and whether the answer
// reached the client, so a test can tell when an eviction happened and how often.
//
// Each downstream connection gets its own upstream TLS connection (verified against ca_pem),
// opened at its first forwarded request; when either side closes, so does the other.
//
// Threading: the proxy runs its own io_context on its own thread. Every public member may be
// called from any thread except that one; the fault calls return once the fault is in effect.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace nmo::fault_proxy {

/// The server requests are forwarded to, over TLS.
struct Upstream {
  std::string host;    ///< an address ("127.0.0.1") or a name
  std::string port;    ///< as text ("6443")
  std::string ca_pem;  ///< the CA that signed its certificate (PEM)
};

/// One eviction request as the proxy saw it.
struct Eviction {
  std::string namespace_;
  std::string pod;
  unsigned status = 0;     ///< the answer's status (0: no answer, the connection broke first)
  bool injected = false;   ///< answered by fail_next(), never forwarded
  bool delivered = false;  ///< the whole answer was written to the client
  std::chrono::steady_clock::time_point answered_at;
};

/// What the proxy has done so far.
struct Counters {
  std::int64_t connections_accepted = 0;
  std::int64_t connections_dropped = 0;  ///< closed by drop_all()
  std::int64_t requests_forwarded = 0;
  std::int64_t responses_injected = 0;  ///< by fail_next()
  std::int64_t open_connections = 0;
};

class FaultProxy {
 public:
  /// Listens on 127.0.0.1 at a free port. kInvalid when ca_pem does not load, kUnavailable when
  /// it cannot listen.
  [[nodiscard]] static Result<std::unique_ptr<FaultProxy>> start(Upstream upstream);

  /// Closes the listener and every connection and joins the proxy's thread.
  virtual ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  [[nodiscard]] virtual std::uint16_t port() const = 0;
  /// "http://127.0.0.1:<port>", for a kubeconfig's server.
  [[nodiscard]] virtual std::string url() const = 0;

  /// Closes every open connection, both sides, at once (no response, no TLS close_notify).
  /// Returns how many were closed.
  virtual std::int64_t drop_all() = 0;

  /// Connections open now stop forwarding bytes, in both directions, for `span`; then they
  /// carry on with what was held back. Connections opened meanwhile are not affected.
  virtual void stall(std::chrono::milliseconds span) = 0;

  /// Closes the listener, so new connections are refused, and listens on the same port again
  /// after `span`. Open connections are left alone (drop_all() them too for an outage).
  virtual void refuse(std::chrono::milliseconds span) = 0;

  /// The next `count` requests are answered by the proxy with `status` (e.g. 503, 429) and a
  /// Status body, never forwarded; `retry_after` becomes the Retry-After header.
  virtual void fail_next(int count, unsigned status,
                         std::optional<std::chrono::seconds> retry_after) = 0;

  /// When the last injected answer was written (nullopt before the first).
  [[nodiscard]] virtual std::optional<std::chrono::steady_clock::time_point> last_injected_at()
      const = 0;

  [[nodiscard]] virtual Counters counters() const = 0;
  /// Every eviction seen so far, in the order they were answered.
  [[nodiscard]] virtual std::vector<Eviction> evictions() const = 0;

 protected:
  FaultProxy() = default;
};

}  // namespace nmo::fault_proxy
