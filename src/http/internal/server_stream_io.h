// The Beast HTTP/1.1 operations the Server (server.cc) performs on a connection, declared once
// per stream type so each type's template instantiations compile in their own translation unit
// (server_stream_io_plain.cc, server_stream_io_tls.cc), as stream_io.h does for the client.
// The stream types are the client's (stream_io.h): beast::tcp_stream and its ssl_stream.
//
// Threading: like the stream passed in (the server's strand).
#pragma once

#include <cstddef>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include "http/asio.h"
#include "http/internal/stream_io.h"

namespace nmo::http::internal {

using RequestParser = beast::http::request_parser<beast::http::string_body>;
using BeastResponse = beast::http::response<beast::http::string_body>;

// Reads until `parser` holds the request line and the header fields.
asio::awaitable<boost::system::error_code> read_request_header(PlainStream& stream,
                                                               beast::flat_buffer& buffer,
                                                               RequestParser& parser);
asio::awaitable<boost::system::error_code> read_request_header(TlsStream& stream,
                                                               beast::flat_buffer& buffer,
                                                               RequestParser& parser);

// Waits for the next bytes from the peer and appends them to `buffer` (the start of a kept-alive
// connection's next request, which read_request_header() then parses from the buffer).
asio::awaitable<boost::system::error_code> read_some(PlainStream& stream,
                                                     beast::flat_buffer& buffer);
asio::awaitable<boost::system::error_code> read_some(TlsStream& stream, beast::flat_buffer& buffer);

// Reads the rest of the request (its body) into `parser`.
asio::awaitable<boost::system::error_code> read_request_body(PlainStream& stream,
                                                             beast::flat_buffer& buffer,
                                                             RequestParser& parser);
asio::awaitable<boost::system::error_code> read_request_body(TlsStream& stream,
                                                             beast::flat_buffer& buffer,
                                                             RequestParser& parser);

// Writes the whole response.
asio::awaitable<boost::system::error_code> write_response(PlainStream& stream,
                                                          BeastResponse& response);
asio::awaitable<boost::system::error_code> write_response(TlsStream& stream,
                                                          BeastResponse& response);

// Reads and throws away whatever the peer still sends (the rest of a request the server refused),
// up to `limit` bytes or until the peer closes or the stream's timeout fires, so that a client
// still writing its body gets to read the refusal instead of a reset. Bypasses TLS: the bytes
// are not looked at, and nothing is written afterwards.
asio::awaitable<void> discard_input(beast::tcp_stream& tcp, std::size_t limit);

// The server side of the TLS handshake.
asio::awaitable<boost::system::error_code> accept_handshake(TlsStream& stream);

}  // namespace nmo::http::internal
