#include "http/internal/connection.h"

#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

#include "http/internal/tls_context.h"

namespace nmo::http::internal {
namespace {

namespace http = beast::http;
using boost::system::error_code;
using Tcp = asio::ip::tcp;

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

std::variant<PlainStream, TlsStream> make_stream(const Strand& strand, asio::ssl::context* tls) {
  if (tls == nullptr) {
    return PlainStream(strand);
  }
  return TlsStream(strand, *tls);
}

}  // namespace

std::string timed_out_after(std::chrono::milliseconds timeout) {
  return "timed out after " + std::to_string(timeout.count()) + "ms";
}

Connection::Connection(Strand strand, asio::ssl::context* tls)
    : strand_(std::move(strand)), stream_(make_stream(strand_, tls)) {
  if (TlsStream* tls_stream = std::get_if<TlsStream>(&stream_)) {
    ssl_ = tls_stream->native_handle();
  }
}

Connection::~Connection() { close(); }

beast::tcp_stream& Connection::tcp() noexcept {
  return std::visit(
      [](auto& stream) -> beast::tcp_stream& { return beast::get_lowest_layer(stream); }, stream_);
}

asio::awaitable<Result<void>> Connection::open(const ServerAddress& server,
                                               Clock::time_point deadline,
                                               std::chrono::milliseconds budget) {
  std::vector<Tcp::endpoint> endpoints;
  error_code not_an_address;
  const asio::ip::address address = asio::ip::make_address(server.host, not_an_address);
  if (!not_an_address) {
    endpoints.emplace_back(address, server.port);
  } else {
    // Not bounded by `deadline`: getaddrinfo cannot be interrupted (see ClientOptions).
    resolver_.emplace(strand_);
    const std::string service = std::to_string(server.port);
    auto [error, results] = co_await resolver_->async_resolve(server.host, service, kAsTuple);
    resolver_.reset();
    if (closed_ || error == asio::error::operation_aborted) {
      co_return Error(ErrorCode::kCancelled, "resolve " + server.host + ": cancelled");
    }
    if (error) {
      co_return Error(ErrorCode::kUnavailable, "resolve " + server.host + ": " + error.message());
    }
    for (const auto& entry : results) {
      endpoints.push_back(entry.endpoint());
    }
  }

  const std::string connect_to = "connect to " + server.authority;
  tcp().expires_at(deadline);
  auto [connect_error, endpoint] = co_await tcp().async_connect(endpoints, kAsTuple);
  if (closed_ || connect_error == asio::error::operation_aborted) {
    co_return Error(ErrorCode::kCancelled, connect_to + ": cancelled");
  }
  if (connect_error == beast::error::timeout) {
    co_return Error(ErrorCode::kTimeout, connect_to + ": " + timed_out_after(budget));
  }
  if (connect_error) {
    co_return Error(ErrorCode::kUnavailable, connect_to + ": " + connect_error.message());
  }
  error_code ignored;
  tcp().socket().set_option(Tcp::no_delay(true), ignored);

  TlsStream* tls = std::get_if<TlsStream>(&stream_);
  if (tls == nullptr) {
    co_return Result<void>();
  }
  const std::string handshake_with = "TLS handshake with " + server.authority;
  if (Result<void> prepared =
          set_expected_peer(tls->native_handle(), server.tls_name, server.verify);
      !prepared) {
    co_return Error(ErrorCode::kInvalid, handshake_with + ": " + prepared.error().message);
  }
  auto [handshake_error] = co_await tls->async_handshake(asio::ssl::stream_base::client, kAsTuple);
  if (closed_ || handshake_error == asio::error::operation_aborted) {
    co_return Error(ErrorCode::kCancelled, handshake_with + ": cancelled");
  }
  if (handshake_error == beast::error::timeout) {
    co_return Error(ErrorCode::kTimeout, handshake_with + ": " + timed_out_after(budget));
  }
  if (handshake_error) {
    co_return Error(ErrorCode::kUnavailable, handshake_with + ": " + describe(handshake_error));
  }
  co_return Result<void>();
}

void Connection::expires_at(Clock::time_point deadline) { tcp().expires_at(deadline); }

void Connection::expires_never() { tcp().expires_never(); }

asio::awaitable<error_code> Connection::write(const BeastRequest& request) {
  co_return co_await std::visit([&](auto& stream) { return write_request(stream, request); },
                                stream_);
}

asio::awaitable<error_code> Connection::read_header(ResponseParser& parser) {
  co_return co_await std::visit(
      [&](auto& stream) { return read_response_header(stream, buffer_, parser); }, stream_);
}

asio::awaitable<std::pair<error_code, std::size_t>> Connection::read_body(ResponseParser& parser,
                                                                          std::span<char> into) {
  parser.get().body().data = into.data();
  parser.get().body().size = into.size();
  error_code error = co_await std::visit(
      [&](auto& stream) { return read_response_some(stream, buffer_, parser); }, stream_);
  if (error == http::error::need_buffer) {
    error = {};  // `into` is full: the normal outcome of a large read
  }
  if (error == asio::ssl::error::stream_truncated && parser.need_eof() && !parser.is_done()) {
    // The server closed TCP without close_notify where the body ends anyway (no Content-Length,
    // not chunked). Many servers do this; the body is complete.
    parser.put_eof(error);
  }
  co_return std::pair(error, into.size() - parser.get().body().size);
}

void Connection::close() noexcept {
  closed_ = true;
  if (resolver_) {
    resolver_->cancel();
  }
  tcp().close();
}

bool Connection::idle_and_usable() {
  if (closed_ || has_unread_input()) {
    return false;
  }
  Tcp::socket& socket = tcp().socket();
  if (!socket.is_open()) {
    return false;
  }
  error_code error;
  char byte = 0;
  socket.non_blocking(true, error);
  if (error) {
    return false;
  }
  (void)socket.receive(asio::buffer(&byte, 1), Tcp::socket::message_peek, error);
  error_code ignored;
  socket.non_blocking(false, ignored);
  // would_block: nothing to read, the peer is silent as an idle server should be. Anything else
  // is a close (eof), a reset, or bytes nobody asked for.
  return error == asio::error::would_block;
}

void Connection::mark_idle(Clock::time_point now) {
  idle_since_ = now;
  reused_ = true;
  expires_never();
}

std::string Connection::describe(const error_code& error) const {
  if (error == asio::error::eof || error == http::error::end_of_stream ||
      error == http::error::partial_message || error == asio::ssl::error::stream_truncated) {
    return "connection closed by the server";
  }
  return describe_tls_error(error, ssl_);
}

}  // namespace nmo::http::internal
