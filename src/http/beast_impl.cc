// The one translation unit that compiles Boost.Beast's and Asio's SSL implementation
// (BOOST_BEAST_SEPARATE_COMPILATION and BOOST_ASIO_SEPARATE_COMPILATION), so every other file of
// src/http instantiates only the templates it uses (reference/cpp.md 1.1).
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
