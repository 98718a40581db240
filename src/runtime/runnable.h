// Runnable: a piece of one operator process that a Manager (runtime/manager.h) starts and stops,
// such as a controller or a server. Its own header, so that what implements it (the operator's
// controller) needs nothing of the Manager (servers, leader election).
//
// Threading: start() and stop() are awaited on the Manager's executor, one after the other.
#pragma once

#include "base/result.h"
#include "http/asio.h"

namespace nmo::runtime {

/// A piece of the process the Manager starts and stops.
class Runnable {
 public:
  Runnable() = default;
  Runnable(const Runnable&) = delete;
  Runnable& operator=(const Runnable&) = delete;
  virtual ~Runnable() = default;

  /// Returns once it runs (serving, caches synced), or why it could not start.
  virtual asio::awaitable<Result<void>> start() = 0;
  /// Stops what start() started; returns when it has stopped. Called once, after start(), also
  /// after a start() that failed (to undo what it began).
  virtual asio::awaitable<void> stop() = 0;
};

/// A Runnable that something else owns (it must outlive the Manager), for pieces other parts of
/// the process also hold, such as the webhook's lookups that its rules ask.
class RunnableRef final : public Runnable {
 public:
  explicit RunnableRef(Runnable& target) : target_(target) {}
  asio::awaitable<Result<void>> start() override { return target_.start(); }
  asio::awaitable<void> stop() override { return target_.stop(); }

 private:
  Runnable& target_;
};

}  // namespace nmo::runtime
