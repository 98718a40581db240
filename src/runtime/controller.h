// Controller: the reconcile loop between a WorkQueue of object keys and a reconcile function, as
// controller-runtime's Controller (reconcileHandler) and kube-rs's Controller run it.
//
//   Controller controller(executor, "nodemaintenance",
//                         [&](std::string key) { return reconciler.reconcile(std::move(key)); },
//                         {.workers = 2});
//   reflector.on_change([&](const T* before, const T* after) { controller.enqueue(key_of(...)); });
//   controller.start();
//   ...
//   co_await controller.stop(std::chrono::seconds(30));
//
// Each of the N workers takes a key from the queue (the queue never hands one key to two workers
// at once), awaits reconcile(key) and then, as controller-runtime does:
//   - error (or an exception escaping reconcile, which is caught and logged): logs it with the
//     key and requeues it with the rate limiter's per-key backoff (add_rate_limited);
//   - requeue_after set: forgets the key's backoff and queues it again after that delay;
//   - requeue set: requeues it with backoff, without an error (controller-runtime's Requeue);
//   - otherwise: forgets the key's backoff;
//   and always marks the key done. Each outcome is reported to ControllerMetrics::on_reconcile
//   with controller-runtime's `result` label and the time reconcile took.
//
// Shutdown (stop()): no reconcile starts once stop() was called (the call itself, before its
// awaitable runs), not even of a key the queue was handing out at that moment. The queue is
// shut down with WorkQueue::shut_down(), not shut_down_with_drain(): keys still waiting are
// abandoned, as in controller-runtime (the next start, or the next leader, lists every object
// and queues them again). Reconciles in flight may run to completion within a grace period;
// after it they are cancelled (Asio terminal cancellation of the worker coroutines, so their
// next co_await of an Asio operation fails with operation_aborted) and stop() waits until they
// have ended.
//
// Health: healthy(max_stall) is false while one reconcile has been running for longer than
// max_stall, which a /healthz check can use to restart a wedged process.
//
// Threading: enqueue(), enqueue_after(), start(), stop(), healthy(), active_workers() and queue()
// may be called from any thread and any coroutine. Each worker runs on its own strand of the
// executor given to the constructor, so with an io_context run by several threads, reconciles of
// different keys run in parallel: the reconcile function and the ControllerMetrics hooks must
// then be thread-safe. The reconcile function and whatever it uses must stay alive until stop()
// has returned. Destroying a controller whose workers still run shuts the queue down and cancels
// them without waiting (the workers' shared state outlives the controller); await stop() first
// for an orderly end.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"
#include "http/asio.h"
#include "runtime/rate_limiter.h"
#include "runtime/work_queue.h"

namespace nmo::runtime {

// What a successful reconcile asks for next (controller-runtime's reconcile.Result).
struct ReconcileAction {
  // Reconcile the key again after this delay (at once when not positive), with its error
  // backoff forgotten: for polling something that has no watch event (a drain in progress).
  std::optional<std::chrono::nanoseconds> requeue_after;
  // Reconcile the key again after the rate limiter's per-key backoff, as after an error but
  // without logging one. Ignored when requeue_after is set.
  bool requeue = false;

  // Nothing more to do until the next event for the key.
  [[nodiscard]] static ReconcileAction done() { return {}; }
  // Reconcile again after `delay`.
  [[nodiscard]] static ReconcileAction after(std::chrono::nanoseconds delay) {
    return {.requeue_after = delay, .requeue = false};
  }
};

// Reconciles the object named by `key` ("namespace/name" or "name"): reads the desired and the
// observed state and moves the world one step towards the desired one. Must be idempotent:
// a key may be reconciled again at any time. Expected failures are returned as errors.
using ReconcileFunction = std::function<asio::awaitable<Result<ReconcileAction>>(std::string key)>;

// Receives one call per finished reconcile, so a metrics backend can export controller-runtime's
// controller_runtime_reconcile_total{result}, _errors_total and _time_seconds. Does nothing by
// default. Called from the worker's strand without a lock held: must be thread-safe when the
// executor runs on several threads, and cheap.
class ControllerMetrics {
 public:
  ControllerMetrics() = default;
  ControllerMetrics(const ControllerMetrics&) = delete;
  ControllerMetrics& operator=(const ControllerMetrics&) = delete;
  virtual ~ControllerMetrics() = default;

  // `result` is "success", "error", "requeue" or "requeue_after" (controller-runtime's labels);
  // `duration` is how long reconcile took, measured with the controller's Clock.
  virtual void on_reconcile(std::string_view /*result*/, std::chrono::nanoseconds /*duration*/) {}
};

// Tunables; the defaults are controller-runtime's.
struct ControllerOptions {
  // Workers reconciling in parallel (controller-runtime's MaxConcurrentReconciles: 1).
  int workers = 1;
  // Per-key retry delays; null means default_controller_rate_limiter().
  std::unique_ptr<RateLimiter> rate_limiter;
  // Null means no metrics.
  std::unique_ptr<ControllerMetrics> metrics;
};

namespace internal {
struct ControllerState;
}  // namespace internal

// Runs reconcile workers over a WorkQueue. See the file comment.
class Controller {
 public:
  // `name` goes into every log line (`controller` field). Workers and the queue's timers run on
  // `executor`; `clock` measures queue delays, reconcile durations and stalls and must outlive
  // the controller. `reconcile` must not be empty and `options.workers` must be at least 1
  // (checked: aborts otherwise). Nothing is reconciled before start().
  Controller(const asio::any_io_executor& executor, std::string name, ReconcileFunction reconcile,
             ControllerOptions options = {}, const Clock& clock = system_clock());
  // Shuts the queue down and cancels running workers without waiting; see the file comment.
  // Throws only on resource exhaustion (a mutex or a post), where terminating is right.
  ~Controller();  // NOLINT(bugprone-exception-escape)

  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Queues `key` for a reconcile (WorkQueue::add: coalesced with a waiting one). Also before
  // start(); ignored once stop() was called.
  void enqueue(const std::string& key);

  // Queues `key` after `delay` (WorkQueue::add_after). Ignored once stop() was called.
  void enqueue_after(const std::string& key, std::chrono::nanoseconds delay);

  // Spawns the workers. Call once (a second call aborts); ignored after stop().
  void start();

  // Stops the controller: no reconcile starts from now on, the queue is shut down (waiting keys
  // are abandoned), and reconciles in flight may finish within `grace`; after that they are
  // cancelled. Returns once every worker has ended. Idempotent; returns at once when start()
  // was never called.
  asio::awaitable<void> stop(std::chrono::nanoseconds grace);

  // False while a reconcile has been running for longer than `max_stall` (a wedged worker);
  // true otherwise, also before start() and after stop().
  [[nodiscard]] bool healthy(std::chrono::nanoseconds max_stall) const;

  // Workers inside a reconcile right now (controller-runtime's active_workers gauge).
  [[nodiscard]] int active_workers() const;

  // The queue the workers take keys from, for event handlers that need more than enqueue()
  // (add_rate_limited, depth, set_metrics) and for tests.
  [[nodiscard]] WorkQueue& queue();

  [[nodiscard]] const std::string& name() const;

 private:
  std::shared_ptr<internal::ControllerState> state_;
};

}  // namespace nmo::runtime
