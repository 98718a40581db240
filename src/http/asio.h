// The Boost.Asio pieces every layer may use: executors, coroutines (awaitable, co_spawn),
// timers and cancellation. Include this instead of <boost/asio.hpp>: Asio is compiled once, in
// asio_impl.cc (BOOST_ASIO_SEPARATE_COMPILATION), and only src/http includes Beast and
// OpenSSL.
//
// Threading: see Asio's own rules; in this project one io_context runs on a few threads and
// shared state is guarded by a mutex or owned by one strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace nmo {
namespace asio = boost::asio;
}  // namespace nmo
