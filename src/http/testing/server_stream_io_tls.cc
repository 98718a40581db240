// The server_stream_io.h operations for TLS streams (see server_stream_io.h for why this is its
// own file).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "http/testing/server_stream_io.h"

namespace nmo::http::test {
namespace {

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

asio::awaitable<boost::system::error_code> read_request(TlsServerStream& stream,
                                                        beast::flat_buffer& buffer,
                                                        RequestParser& parser) {
  auto [error, bytes] = co_await beast::http::async_read(stream, buffer, parser, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> write_response(TlsServerStream& stream,
                                                          const ServerMessage& response) {
  auto [error, bytes] = co_await beast::http::async_write(stream, response, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> write_bytes(TlsServerStream& stream,
                                                       const std::string& bytes) {
  auto [error, written] = co_await asio::async_write(stream, asio::buffer(bytes), kAsTuple);
  co_return error;
}

}  // namespace nmo::http::test
