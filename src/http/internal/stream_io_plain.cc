// The stream_io.h operations for plain TCP streams (see stream_io.h for why this is its own file).
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "http/internal/stream_io.h"

namespace nmo::http::internal {
namespace {

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

asio::awaitable<boost::system::error_code> write_request(PlainStream& stream,
                                                         const BeastRequest& request) {
  auto [error, bytes] = co_await beast::http::async_write(stream, request, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> read_response_header(PlainStream& stream,
                                                                beast::flat_buffer& buffer,
                                                                ResponseParser& parser) {
  auto [error, bytes] = co_await beast::http::async_read_header(stream, buffer, parser, kAsTuple);
  co_return error;
}

asio::awaitable<boost::system::error_code> read_response_some(PlainStream& stream,
                                                              beast::flat_buffer& buffer,
                                                              ResponseParser& parser) {
  auto [error, bytes] = co_await beast::http::async_read_some(stream, buffer, parser, kAsTuple);
  co_return error;
}

}  // namespace nmo::http::internal
