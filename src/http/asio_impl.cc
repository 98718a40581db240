// The one translation unit that compiles Boost.Asio's implementation (separate compilation
// keeps every other file that uses Asio light; docs/adr/0002-http-boost-asio-beast.md).
#include <boost/asio/impl/src.hpp>
