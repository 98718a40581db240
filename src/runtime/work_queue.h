// WorkQueue: the queue of object keys ("namespace/name" or "name") between event handlers and
// reconcile workers, with client-go's workqueue semantics:
//
//   - A key waits at most once: adding a key that is already waiting does nothing, so a burst of
//     events for one object becomes one reconcile (level-triggered).
//   - A key is processed by one worker at a time: get() marks it processing until done(key). An
//     add() meanwhile marks it dirty, and done() queues it again, so it is processed exactly once
//     more, after the current worker finishes.
//   - add_after() delays a key; while a delayed add is pending, a later add_after() with an
//     earlier deadline moves it earlier and one with a later deadline is ignored. add() does not
//     cancel a pending delayed add.
//   - add_rate_limited() = add_after(key, limiter.when(key)); forget() clears the key's history
//     in the limiter after a success.
//   - Ready keys are handed out in FIFO order, to waiting get() calls in the order they began.
//
// A worker loop:
//
//   while (std::optional<std::string> key = co_await queue.get()) {
//     Result<Action> result = co_await reconcile(*key);
//     if (!result) queue.add_rate_limited(*key);
//     else { queue.forget(*key); if (result->requeue_after) queue.add_after(*key, ...); }
//     queue.done(*key);
//   }
//
// Time: delays are measured with the Clock given to the constructor. A timer on the queue's
// executor moves a delayed key to the ready FIFO when the clock says its time has come; get()
// also does that before it looks for a ready key, so a test can advance a FakeClock and call get()
// without waiting for the timer.
//
// Threading: every method may be called from any thread and from coroutines on any executor. The
// state lives in one internal object guarded by one std::mutex, which is never held across a
// suspension point, while waking a coroutine, or while calling the rate limiter (the
// WorkQueueMetrics hooks do run under it). Waiting get() calls resume on their own coroutine's
// executor. Destroying the queue shuts it down first: waiting getters resume with std::nullopt.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "http/asio.h"
#include "runtime/rate_limiter.h"
#include "runtime/work_queue_metrics.h"

namespace nmo::runtime {

namespace internal {
class WorkQueueCore;
}  // namespace internal

// A deduplicating, rate-limited queue of keys for reconcile workers. See the file comment.
class WorkQueue {
 public:
  // Delay timers run on `executor`. `limiter` decides add_rate_limited() delays (must not be
  // null) and `clock` measures delays and metrics; it must outlive the queue.
  explicit WorkQueue(const asio::any_io_executor& executor,
                     std::unique_ptr<RateLimiter> limiter = default_controller_rate_limiter(),
                     const Clock& clock = system_clock());
  // Shuts the queue down (see shut_down()).
  ~WorkQueue();

  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `key` unless it is already waiting; if it is being processed, marks it to be queued
  // again by done(key). Ignored once the queue is shutting down.
  void add(const std::string& key);

  // Queues `key` (as add()) once `delay` has passed; at once if `delay` is not positive. While a
  // delayed add of `key` is pending, only an earlier deadline replaces it. Ignored once the
  // queue is shutting down.
  void add_after(const std::string& key, std::chrono::nanoseconds delay);

  // add_after(key, delay) with the delay the rate limiter chooses; counts one requeue of `key`.
  void add_rate_limited(const std::string& key);

  // Clears the rate limiter's history of `key` (call after a successful reconcile). Does not
  // remove the key from the queue.
  void forget(const std::string& key);

  // How many add_rate_limited(key) calls the limiter has counted since forget(key).
  [[nodiscard]] int num_requeues(const std::string& key) const;

  // Waits until a key is ready, marks it processing and returns it; the caller must call
  // done(key) when finished. Never blocks a thread: the coroutine suspends and resumes on its
  // own executor. Returns std::nullopt
  //   - once shut_down() was called (keys still waiting are abandoned);
  //   - after shut_down_with_drain(), once no key is waiting and none will be queued again by a
  //     done() call;
  //   - when the awaiting operation is cancelled (Asio per-operation cancellation, any type);
  //     a cancelled get() takes no key. Emit the cancellation from the awaiting coroutine's own
  //     executor or strand, as for any Asio operation.
  // Several coroutines may wait at once; they are served in the order they started waiting.
  [[nodiscard]] asio::awaitable<std::optional<std::string>> get();

  // Marks `key` as no longer processing; if it was added meanwhile, queues it again. Does
  // nothing for a key that is not being processed.
  void done(const std::string& key);

  // Stops the queue now: later adds are ignored, pending delayed adds are dropped, and every
  // waiting and future get() returns std::nullopt. Keys being processed may still be done().
  void shut_down();

  // Stops accepting adds and drops pending delayed adds, but get() keeps handing out the keys
  // that are waiting (and those that done() queues again) until there are none; then it returns
  // std::nullopt. A later shut_down() stops at once.
  void shut_down_with_drain();

  // True once shut_down() or shut_down_with_drain() was called.
  [[nodiscard]] bool shutting_down() const;

  // How many keys are ready and waiting for a worker (not counting delayed or processing keys);
  // the `workqueue_depth` metric.
  [[nodiscard]] std::size_t depth() const;

  // Replaces the metrics hooks (null restores the no-op default). Meant to be called before the
  // queue is used; safe at any time.
  void set_metrics(std::unique_ptr<WorkQueueMetrics> metrics);

 private:
  // Shared with delay-timer handlers, waiting getters and cancellation handlers, which hold it
  // weakly or briefly, so none of them can outlive the state it touches.
  std::shared_ptr<internal::WorkQueueCore> core_;
};

}  // namespace nmo::runtime
