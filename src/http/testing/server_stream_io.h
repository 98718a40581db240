// The Beast HTTP/1.1 operations TestServer performs on a connection, declared once per stream
// type so that each type's template instantiations compile in their own translation unit
// (server_stream_io_plain.cc, server_stream_io_tls.cc); in one file with the server they took
// about a minute and 1.4 GB with GCC 12. Test-only, like the server.
//
// Threading: like the stream passed in (the server thread).
#pragma once

#include <string>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/system/error_code.hpp>

#include "http/asio.h"

namespace nmo::http::test {

namespace beast = boost::beast;

using PlainServerStream = beast::tcp_stream;
using TlsServerStream = beast::ssl_stream<beast::tcp_stream>;
using RequestParser = beast::http::request_parser<beast::http::string_body>;
using ServerMessage = beast::http::response<beast::http::string_body>;

// Reads one complete request into `parser`.
asio::awaitable<boost::system::error_code> read_request(PlainServerStream& stream,
                                                        beast::flat_buffer& buffer,
                                                        RequestParser& parser);
asio::awaitable<boost::system::error_code> read_request(TlsServerStream& stream,
                                                        beast::flat_buffer& buffer,
                                                        RequestParser& parser);

// Writes a whole response.
asio::awaitable<boost::system::error_code> write_response(PlainServerStream& stream,
                                                          const ServerMessage& response);
asio::awaitable<boost::system::error_code> write_response(TlsServerStream& stream,
                                                          const ServerMessage& response);

// Writes exactly `bytes`.
asio::awaitable<boost::system::error_code> write_bytes(PlainServerStream& stream,
                                                       const std::string& bytes);
asio::awaitable<boost::system::error_code> write_bytes(TlsServerStream& stream,
                                                       const std::string& bytes);

}  // namespace nmo::http::test
