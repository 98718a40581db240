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
// Client certificates (mTLS): with client_ca_file (or client_ca_pem) set, the handshake asks for
// a client certificate and completes only with one that chains to that CA; a client without one
// is refused at TLS, before any byte of HTTP is read.
//
// Hostile clients (docs/reliability.md, "Hostile clients"): a connection has
// handshake_timeout for its TLS handshake and header_timeout for each request's line and header
// fields, apart from idle_timeout (waiting for the next request), so a client that sends its
// header a byte at a time (slowloris) or never finishes its handshake is closed after seconds.
// When all max_connections slots are taken, a new connection is still served: the server first
// closes the oldest connection that has not yet completed its handshake or request header, else
// the one idle for longest (a client that completed a request, such as the API server, keeps its
// connection while a flood of silent ones displace each other); only when every slot holds a
// request being served is the new one closed. Running out of file descriptors (accept fails with
// EMFILE) sheds in the same order. A peer address with max_connections_per_peer connections gives
// up its own oldest incomplete or idle one in the same way, so one flooding address displaces only
// itself. The probe server's kubelet, the API server and Prometheus each finish a request within
// milliseconds of connecting, long before a flood's newer connections displace theirs.
// connection_stats() counts what was accepted and what was closed early, and why.
//
// Not supported: HTTP/2 (no ALPN is negotiated; Go clients such as the API server then speak
// HTTP/1.1), `Expect: 100-continue` (the body is read without an interim response).
//
// Threading: the server's I/O and every handler call run on a strand of the executor given to
// start(); handlers of different connections interleave at co_await. port(),
// certificate_generation() and connection_stats() may be called from any thread; stop() may be
// awaited from any coroutine. Destroy the Server after stop() has completed, before the io_context.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "http/asio.h"
#include "http/message.h"

namespace nmo::http {

// Turns one request into its response. Request::timeout is unused on the server side.
using Handler = std::function<asio::awaitable<Response>(Request)>;

// Why the server closed a connection before serving it, or in the middle of waiting for it.
enum class ShedReason : std::size_t {
  kIdle,              // idle kept-alive connection closed to make room for a new one
  kIncomplete,        // handshake or request header not complete, closed to make room
  kPeerLimit,         // its peer address had max_connections_per_peer (an old one or the new one)
  kFull,              // new connection closed: every slot held a request being served
  kHandshakeTimeout,  // TLS handshake not complete within handshake_timeout
  kHeaderTimeout,     // request line and header fields not complete within header_timeout
};
inline constexpr std::size_t kShedReasonCount = 6;
static_assert(static_cast<std::size_t>(ShedReason::kHeaderTimeout) + 1 == kShedReasonCount);

// The label of each reason in metrics and logs: "idle", "incomplete", "peer_limit", "full",
// "handshake_timeout", "header_timeout".
[[nodiscard]] std::string_view to_string(ShedReason reason) noexcept;

// Counters of one server's connections, since its start. Written by the server's strand, read
// from any thread.
class ConnectionStats {
 public:
  [[nodiscard]] std::uint64_t accepted() const noexcept { return accepted_.load(); }
  [[nodiscard]] std::uint64_t shed(ShedReason reason) const noexcept {
    return shed_[static_cast<std::size_t>(reason)].load();
  }

  void count_accepted() noexcept { accepted_.fetch_add(1); }
  void count_shed(ShedReason reason) noexcept {
    shed_[static_cast<std::size_t>(reason)].fetch_add(1);
  }

 private:
  std::atomic<std::uint64_t> accepted_{0};
  std::array<std::atomic<std::uint64_t>, kShedReasonCount> shed_{};
};

// Where and how to serve.
struct ServerOptions {
  // What the server is for, as it appears in its log lines ("webhook").
  std::string name = "http";
  // IP address to listen on ("0.0.0.0", "127.0.0.1", "::1"). Host names are not resolved. "::"
  // is dual stack: every IPv6 and IPv4 address, or every IPv4 one on a host without IPv6.
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
  // TLS only: require a client certificate signed by this CA (a PEM file, or PEM in memory when
  // client_ca_pem is set). Read once at start. Empty: no client certificate is asked for.
  std::string client_ca_file;
  std::string client_ca_pem;
  // How often the certificate files are checked for changes.
  std::chrono::milliseconds cert_reload_interval{1000};
  // The largest request body accepted; larger ones get 400 before the body is read.
  std::size_t max_body_bytes = std::size_t{1} << 20U;
  // The largest request line plus header fields accepted; larger ones get 400.
  std::size_t max_header_bytes = std::size_t{16} << 10U;
  // TLS handshake of a new connection. A real client's takes milliseconds; the API server's
  // webhook client gives a whole review 10 s by default.
  std::chrono::milliseconds handshake_timeout{5'000};
  // Reading one request's line and header fields, from its first byte (the first request of a
  // connection: from the handshake, or from the accept for plain HTTP). Real clients send their
  // header in one write; a client that trickles it (slowloris) is closed after this.
  std::chrono::milliseconds header_timeout{5'000};
  // Reading one request's body once its header is in.
  std::chrono::milliseconds read_timeout{10'000};
  // How long a kept-alive connection may wait for its next request. Longer than the 90 s Go
  // clients (the API server's webhook client) keep idle connections, so the client, not the
  // server, closes them: a POST racing with a server-side close would fail, not be retried.
  std::chrono::milliseconds idle_timeout{120'000};
  // Writing one response.
  std::chrono::milliseconds write_timeout{10'000};
  // Connections held at once. Past it, a new connection displaces the incomplete or idle one
  // that has waited longest (see the file comment), and is closed only when none is.
  std::size_t max_connections = 1024;
  // Connections held at once from one peer IP address; past it the peer's own oldest incomplete
  // or idle connection makes room, and a new one is closed when all of the peer's are serving
  // a request. The API server's webhook client (Go, HTTP/1.1, no per-host cap) opens one
  // connection per concurrent review; those are bounded by its in-flight limits (by default
  // --max-mutating-requests-inflight 200 for creates and updates), so 256 never holds it back,
  // while a single flooding address can take at most a quarter of the default slots. Behind a
  // NAT or on loopback every peer shares one address; 0 turns the limit off.
  std::size_t max_connections_per_peer = 256;
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

  // This server's connection counters; they stay readable after the server is gone.
  [[nodiscard]] virtual std::shared_ptr<const ConnectionStats> connection_stats() const = 0;

  // Graceful stop: stops accepting and the certificate polling, closes idle connections, lets
  // requests in flight finish (their responses say "Connection: close") for up to `grace`, then
  // closes whatever is left. Completes when every connection is closed. Idempotent.
  virtual asio::awaitable<void> stop(std::chrono::milliseconds grace) = 0;

 protected:
  Server() = default;
};

}  // namespace nmo::http
