// Connection: one TCP connection to the server, with TLS on top when the client uses it, plus the
// Beast read buffer that belongs to it. It opens itself (resolve, connect, handshake) before a
// deadline, writes a request, reads response headers and body pieces, and tells whether an idle
// keep-alive connection is still usable. It knows nothing about pooling or retries.
//
// Threading: strand-confined. Construct it with the client's strand and call every member
// function, the destructor included, on that strand.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>

#include "base/result.h"
#include "http/asio.h"
#include "http/internal/stream_io.h"

namespace nmo::http::internal {

using Strand = asio::strand<asio::any_io_executor>;
using Clock = std::chrono::steady_clock;

// Where a client connects, derived once from ClientOptions.
struct ServerAddress {
  std::string host;        // DNS name or IP literal, IPv6 without brackets
  std::uint16_t port = 0;  // parsed ClientOptions::port
  std::string authority;   // "host:port" or "[v6]:port": the Host header and error messages
  std::string tls_name;    // SNI and verification name: TlsOptions::server_name, else host
  bool verify = true;      // false with TlsOptions::insecure_skip_verify
};

// "timed out after 200ms": how every deadline error of the client ends.
[[nodiscard]] std::string timed_out_after(std::chrono::milliseconds timeout);

// One connection to the server (see the file comment).
class Connection {
 public:
  // A closed connection using `strand` for its I/O; `tls` is null for plain HTTP and otherwise
  // must outlive the connection.
  Connection(Strand strand, asio::ssl::context* tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Resolves the host (unless it is an IP literal), connects and, with TLS, handshakes, giving up
  // at `deadline`; `budget` is only quoted in the timeout message. Errors: kUnavailable
  // ("connect to 127.0.0.1:6443: Connection refused", "TLS handshake with 127.0.0.1:6443:
  // certificate verify failed (IP address mismatch)", "resolve kube.example: Host not found
  // (authoritative)"), kTimeout ("connect to ...: timed out after 100ms"), kCancelled when
  // close() interrupted it.
  asio::awaitable<Result<void>> open(const ServerAddress& server, Clock::time_point deadline,
                                     std::chrono::milliseconds budget);

  // Every later read and write fails with beast::error::timeout once `deadline` passes (the
  // socket is then closed). expires_never() lifts the deadline.
  void expires_at(Clock::time_point deadline);
  void expires_never();

  // Writes the whole request.
  asio::awaitable<boost::system::error_code> write(const BeastRequest& request);
  // Reads until `parser` has the complete response header.
  asio::awaitable<boost::system::error_code> read_header(ResponseParser& parser);
  // Reads the next piece of the body into `into` and returns how many bytes it placed there
  // (possibly 0, e.g. after a chunk header). A TLS stream truncated right where an
  // end-of-connection-delimited body ends is treated as that clean end.
  asio::awaitable<std::pair<boost::system::error_code, std::size_t>> read_body(
      ResponseParser& parser, std::span<char> into);

  // Closes the socket now (no TLS close_notify): pending operations complete with an error and
  // was_closed() turns true. Idempotent; also cancels a pending DNS lookup.
  void close() noexcept;
  // Whether close() was called: a failure after it is a cancellation, not a network error.
  [[nodiscard]] bool was_closed() const noexcept { return closed_; }

  // For an idle connection: true while the peer has neither closed it nor sent anything (an
  // idle HTTP/1.1 connection receives nothing until the next request).
  [[nodiscard]] bool idle_and_usable();
  // Whether bytes beyond the response just parsed are buffered (then it cannot be reused).
  [[nodiscard]] bool has_unread_input() const noexcept { return buffer_.size() != 0; }

  // Marks the connection idle in the pool since `now`; once taken again it counts as reused.
  void mark_idle(Clock::time_point now);
  [[nodiscard]] Clock::time_point idle_since() const noexcept { return idle_since_; }
  // Whether the connection served an earlier request (so the server may have closed it).
  [[nodiscard]] bool reused() const noexcept { return reused_; }

  // An I/O failure of this connection as text: "connection closed by the server" for every
  // flavour of early end of stream, TLS details (describe_tls_error) for TLS failures,
  // otherwise the system message ("Connection reset by peer").
  [[nodiscard]] std::string describe(const boost::system::error_code& error) const;

 private:
  beast::tcp_stream& tcp() noexcept;

  Strand strand_;
  std::variant<PlainStream, TlsStream> stream_;
  SSL* ssl_ = nullptr;  // owned by stream_ when it is a TlsStream
  beast::flat_buffer buffer_;
  std::optional<asio::ip::tcp::resolver> resolver_;
  Clock::time_point idle_since_{};
  bool reused_ = false;
  bool closed_ = false;
};

}  // namespace nmo::http::internal
