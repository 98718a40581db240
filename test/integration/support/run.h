// Runs a coroutine to completion on a private io_context, for tests that drive the asynchronous
// client from ordinary (synchronous) GoogleTest code.
//
// Threading: each call uses its own io_context on the calling thread.
#pragma once

#include <exception>
#include <optional>
#include <utility>

#include "http/asio.h"

namespace nmo::testing {

/// Runs `make(executor)` (a callable returning asio::awaitable<T>) on `io` until it finishes and
/// returns its value; rethrows what the coroutine threw.
template <typename Make>
auto run(asio::io_context& io, Make&& make) {  // NOLINT(cppcoreguidelines-missing-std-forward)
  using Awaitable = decltype(make(io.get_executor()));
  using T = typename Awaitable::value_type;
  std::optional<T> out;
  std::exception_ptr error;
  auto body = [&]() -> asio::awaitable<void> { out.emplace(co_await make(io.get_executor())); };
  asio::co_spawn(io, body, [&](std::exception_ptr e) { error = e; });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

}  // namespace nmo::testing
