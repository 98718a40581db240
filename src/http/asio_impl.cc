// The one translation unit that compiles Boost.Asio's implementation (separate compilation
// keeps every other file that uses Asio light; reference/cpp.md 1.1).
#include <boost/asio/impl/src.hpp>
