// Test helpers that drive Asio: run() completes one coroutine on an io_context on the calling
// thread; IoThread runs an io_context on a background thread for tests that act from outside
// it (cancel(), shutdown() from another thread).
//
// Threading: run() must be the only thing running `context` while it runs. IoThread's members
// may be called from any thread.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <thread>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_future.hpp>

#include "base/check.h"
#include "http/asio.h"

namespace nmo::http::test {

// Runs `context` on this thread until `task` completes and returns its result (rethrowing its
// exception, if any). A task that cannot finish aborts the test binary after `limit` (or at once
// when nothing is left to run), so a hang fails loudly instead of stalling the test run.
template <typename T>
T run(asio::io_context& context, asio::awaitable<T> task,
      std::chrono::seconds limit = std::chrono::seconds(60)) {
  std::optional<T> result;
  std::exception_ptr failure;
  bool done = false;
  asio::co_spawn(
      context, [&]() -> asio::awaitable<void> { result.emplace(co_await std::move(task)); },
      [&](std::exception_ptr error) {
        failure = error;
        done = true;
      });
  context.restart();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done) {
    context.run_one_until(deadline);
    NMO_CHECK(done || !context.stopped(), "test coroutine is stuck: nothing left to run");
    NMO_CHECK(done || std::chrono::steady_clock::now() < deadline,
              "test coroutine did not finish in time");
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  return std::move(*result);
}

// Runs `context` on this thread until `condition` holds (checked between handlers); false when
// `limit` passed first.
inline bool run_until(asio::io_context& context, const std::function<bool()>& condition,
                      std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (context.stopped()) context.restart();
    context.run_one_for(std::chrono::milliseconds(20));
  }
  return true;
}

// An io_context running on its own thread until destruction.
class IoThread {
 public:
  IoThread() : work_(asio::make_work_guard(context_)), thread_([this] { context_.run(); }) {}
  ~IoThread() {
    work_.reset();
    context_.stop();
    thread_.join();
  }
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  // The executor to create clients on.
  [[nodiscard]] asio::any_io_executor executor() { return context_.get_executor(); }

  // Starts `task` on the background thread; the future delivers its result.
  template <typename T>
  [[nodiscard]] std::future<T> spawn(asio::awaitable<T> task) {
    return asio::co_spawn(context_, std::move(task), asio::use_future);
  }

 private:
  asio::io_context context_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace nmo::http::test
