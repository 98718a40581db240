// The one translation unit that compiles Boost.Beast's and Asio's SSL implementation
// (BOOST_BEAST_SEPARATE_COMPILATION and BOOST_ASIO_SEPARATE_COMPILATION), so every other file of
// src/http instantiates only the templates it uses: a coroutine TLS client compiled with Beast
// header-only is slow and memory-hungry to build (docs/adr/0002-http-boost-asio-beast.md).
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
