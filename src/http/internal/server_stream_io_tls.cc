// The server_stream_io.h operations for TLS streams (see server_stream_io.h for why this is its
// own file).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "http/internal/server_stream_io.h"

namespace nmo::http::internal {
namespace {

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

// How much read_some() asks for at once; a request header usually fits.
constexpr std::size_t kReadSomeBytes = 4096;

}  // namespace

asio::awaitable<boost::system::error_code> read_request_header(TlsStream& stream,
                                                               beast::flat_buffer& buffer,
                                                               RequestParser& parser) {
  auto [error, bytes] = co_await beast::http::async_read_header(stream, buffer, parser, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> read_some(TlsStream& stream,
                                                     beast::flat_buffer& buffer) {
  auto [error, bytes] = co_await stream.async_read_some(buffer.prepare(kReadSomeBytes), kAsTuple);
  buffer.commit(bytes);
  co_return error;
}

asio::awaitable<boost::system::error_code> read_request_body(TlsStream& stream,
                                                             beast::flat_buffer& buffer,
                                                             RequestParser& parser) {
  auto [error, bytes] = co_await beast::http::async_read(stream, buffer, parser, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> write_response(TlsStream& stream,
                                                          BeastResponse& response) {
  auto [error, bytes] = co_await beast::http::async_write(stream, response, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> accept_handshake(TlsStream& stream) {
  auto [error] = co_await stream.async_handshake(asio::ssl::stream_base::server, kAsTuple);
  co_return error;
}

}  // namespace nmo::http::internal
