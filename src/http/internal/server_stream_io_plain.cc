// The server_stream_io.h operations for plain TCP streams (see server_stream_io.h for why this
// is its own file).
#include <array>

#include <boost/asio/as_tuple.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "http/internal/server_stream_io.h"

namespace nmo::http::internal {
namespace {

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

// How much read_some() asks for at once; a request header usually fits.
constexpr std::size_t kReadSomeBytes = 4096;

}  // namespace

asio::awaitable<boost::system::error_code> read_request_header(PlainStream& stream,
                                                               beast::flat_buffer& buffer,
                                                               RequestParser& parser) {
  auto [error, bytes] = co_await beast::http::async_read_header(stream, buffer, parser, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> read_some(PlainStream& stream,
                                                     beast::flat_buffer& buffer) {
  auto [error, bytes] = co_await stream.async_read_some(buffer.prepare(kReadSomeBytes), kAsTuple);
  buffer.commit(bytes);
  co_return error;
}

asio::awaitable<boost::system::error_code> read_request_body(PlainStream& stream,
                                                             beast::flat_buffer& buffer,
                                                             RequestParser& parser) {
  auto [error, bytes] = co_await beast::http::async_read(stream, buffer, parser, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> write_response(PlainStream& stream,
                                                          BeastResponse& response) {
  auto [error, bytes] = co_await beast::http::async_write(stream, response, kAsTuple);
  co_return error;
}

asio::awaitable<void> discard_input(beast::tcp_stream& tcp, std::size_t limit) {
  std::array<char, 16384> scratch{};
  std::size_t discarded = 0;
  while (discarded < limit) {
    auto [error, bytes] = co_await tcp.async_read_some(asio::buffer(scratch), kAsTuple);
    if (error) {
      co_return;
    }
    discarded += bytes;
  }
}

}  // namespace nmo::http::internal
