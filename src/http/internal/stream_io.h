// The Beast HTTP/1.1 operations a Connection performs on its stream, declared once per stream
// type. Their template instantiations are the bulk of the client's compile cost, so each stream
// type gets its own translation unit (stream_io_plain.cc, stream_io_tls.cc): with both in
// connection.cc, that one file took 42 s and 1.25 GB to compile with GCC 12.
//
// Threading: like the stream passed in (strand-confined in this client).
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/system/error_code.hpp>

#include "http/asio.h"

namespace nmo::http::internal {

namespace beast = boost::beast;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using BeastRequest = beast::http::request<beast::http::string_body>;
// Responses are parsed into caller-supplied buffers: send() reads into its body string, a
// LineStream into a fixed buffer, so one parser type (and one set of Beast templates) serves both.
using ResponseParser = beast::http::response_parser<beast::http::buffer_body>;

// Writes the whole request.
asio::awaitable<boost::system::error_code> write_request(PlainStream& stream,
                                                         const BeastRequest& request);
asio::awaitable<boost::system::error_code> write_request(TlsStream& stream,
                                                         const BeastRequest& request);

// Reads until `parser` holds the complete response header.
asio::awaitable<boost::system::error_code> read_response_header(PlainStream& stream,
                                                                beast::flat_buffer& buffer,
                                                                ResponseParser& parser);
asio::awaitable<boost::system::error_code> read_response_header(TlsStream& stream,
                                                                beast::flat_buffer& buffer,
                                                                ResponseParser& parser);

// Reads and parses the next piece of the body into parser.get().body() (beast::http::
// async_read_some); need_buffer means that buffer is full.
asio::awaitable<boost::system::error_code> read_response_some(PlainStream& stream,
                                                              beast::flat_buffer& buffer,
                                                              ResponseParser& parser);
asio::awaitable<boost::system::error_code> read_response_some(TlsStream& stream,
                                                              beast::flat_buffer& buffer,
                                                              ResponseParser& parser);

}  // namespace nmo::http::internal
