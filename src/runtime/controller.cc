#include "runtime/controller.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/redirect_error.hpp>
#include <boost/system/error_code.hpp>

#include "base/check.h"
#include "base/error.h"
#include "base/log.h"

namespace nmo::runtime {
namespace internal {

// One worker coroutine: its strand and the signal that cancels it after stop()'s grace period.
struct ControllerWorker {
  explicit ControllerWorker(const asio::any_io_executor& executor)
      : strand(asio::make_strand(executor)) {}

  asio::strand<asio::any_io_executor> strand;
  asio::cancellation_signal cancel;  // bound at co_spawn; emitted on `strand` only

  // Guarded by ControllerState::mutex.
  bool spawned = false;                         // co_spawn has returned
  bool exited = false;                          // the coroutine's completion handler ran
  std::optional<Clock::time_point> busy_since;  // inside reconcile since then
};

// Everything the workers touch, shared with them so that none outlives what it uses.
struct ControllerState {
  ControllerState(const asio::any_io_executor& executor, std::string controller_name,
                  ReconcileFunction reconcile_function, ControllerOptions options,
                  const Clock& controller_clock)
      : name(std::move(controller_name)),
        reconcile(std::move(reconcile_function)),
        clock(controller_clock),
        logger(log::root().with({{"controller", name}})),
        metrics(options.metrics ? std::move(options.metrics)
                                : std::make_unique<ControllerMetrics>()),
        queue(executor,
              options.rate_limiter ? std::move(options.rate_limiter)
                                   : default_controller_rate_limiter(),
              controller_clock) {
    NMO_CHECK(reconcile != nullptr, "Controller needs a reconcile function");
    NMO_CHECK(options.workers >= 1, "Controller needs at least one worker");
    for (int i = 0; i < options.workers; ++i) {
      workers.push_back(std::make_unique<ControllerWorker>(executor));
    }
  }

  // Marks the worker busy unless stop() has begun; false means: do not reconcile.
  bool begin_reconcile(ControllerWorker& worker) {
    const std::lock_guard lock(mutex);
    if (stopping) return false;
    worker.busy_since = clock.now();
    return true;
  }

  void end_reconcile(ControllerWorker& worker) {
    const std::lock_guard lock(mutex);
    worker.busy_since.reset();
  }

  // Refuses new reconciles and shuts the queue down; true the first time.
  bool begin_stop() {
    {
      const std::lock_guard lock(mutex);
      if (stopping) return false;
      stopping = true;
    }
    queue.shut_down();
    return true;
  }

  // Emits terminal cancellation into every worker still running, on its own strand.
  void cancel_workers(const std::shared_ptr<ControllerState>& self) {
    const std::lock_guard lock(mutex);
    for (const std::unique_ptr<ControllerWorker>& worker : workers) {
      if (!worker->spawned || worker->exited) continue;
      ControllerWorker* target = worker.get();
      asio::post(target->strand, [self, target] {
        {
          // The completion handler runs on this strand too, so `exited` cannot change between
          // this check and the emit.
          const std::lock_guard relock(self->mutex);
          if (target->exited) return;
        }
        target->cancel.emit(asio::cancellation_type::terminal);
      });
    }
  }

  // The completion handler of a worker coroutine (on its strand): wakes stop() after the last.
  void worker_exited(ControllerWorker& worker, const std::exception_ptr& error) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {  // cancelled by stop() after its grace period
        logger.debug(1, "worker ended", {{"reason", e.what()}});
      } catch (...) {
        logger.debug(1, "worker ended by an exception of unknown type");
      }
    }
    std::vector<std::shared_ptr<asio::steady_timer>> waiters;
    {
      const std::lock_guard lock(mutex);
      worker.exited = true;
      worker.busy_since.reset();
      --running;
      if (running == 0) waiters = std::exchange(exit_waiters, {});
    }
    for (const std::shared_ptr<asio::steady_timer>& timer : waiters) {
      asio::post(timer->get_executor(), [timer] { timer->cancel(); });
    }
  }

  [[nodiscard]] int active_workers() const {
    const std::lock_guard lock(mutex);
    return static_cast<int>(std::count_if(workers.begin(), workers.end(),
                                          [](const std::unique_ptr<ControllerWorker>& worker) {
                                            return worker->busy_since.has_value();
                                          }));
  }

  const std::string name;
  const ReconcileFunction reconcile;
  const Clock& clock;
  const log::Logger logger;
  const std::unique_ptr<ControllerMetrics> metrics;
  WorkQueue queue;
  std::vector<std::unique_ptr<ControllerWorker>> workers;  // fixed after construction

  mutable std::mutex mutex;
  // Guarded by mutex.
  bool started = false;
  bool stopping = false;
  std::size_t running = 0;  // worker coroutines whose completion handler has not run
  // stop() callers, each waiting on its own timer (on its own executor) until running == 0.
  std::vector<std::shared_ptr<asio::steady_timer>> exit_waiters;
};

namespace {

// The error an exception escaping reconcile stands for.
Error error_from_exception(const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return {ErrorCode::kInternal, std::string("reconcile threw: ") + e.what()};
  } catch (...) {
    return {ErrorCode::kInternal, "reconcile threw an exception of unknown type"};
  }
}

// Applies controller-runtime's requeue policy to `key` after a reconcile; returns the result
// label of controller_runtime_reconcile_total.
std::string_view apply_requeue_policy(ControllerState& state, const std::string& key,
                                      const Result<ReconcileAction>& result) {
  if (!result) {
    state.queue.add_rate_limited(key);
    state.logger.error("reconcile failed; requeued with backoff",
                       {{"key", key},
                        {"error", result.error().describe()},
                        {"requeues", state.queue.num_requeues(key)}});
    return "error";
  }
  if (result->requeue_after) {
    state.queue.forget(key);
    state.queue.add_after(key, *result->requeue_after);
    return "requeue_after";
  }
  if (result->requeue) {
    state.queue.add_rate_limited(key);
    return "requeue";
  }
  state.queue.forget(key);
  return "success";
}

// One worker: takes keys until the queue is shut down (or the worker is cancelled, which makes
// a co_await throw; the completion handler takes care of that).
asio::awaitable<void> run_worker(std::shared_ptr<ControllerState> state, std::size_t index) {
  ControllerWorker& worker = *state->workers[index];
  for (;;) {
    std::optional<std::string> key = co_await state->queue.get();
    if (!key) co_return;
    if (!state->begin_reconcile(worker)) {  // stop() came after get() handed out the key
      state->queue.done(*key);
      co_return;
    }
    const Clock::time_point started = state->clock.now();
    Result<ReconcileAction> result;
    try {
      // The call and the co_await are separate statements, and the argument is a named copy:
      // GCC 12 mishandles temporaries inside a co_await expression (docs/development.md).
      std::string argument = *key;
      asio::awaitable<Result<ReconcileAction>> reconciling = state->reconcile(std::move(argument));
      result = co_await std::move(reconciling);
    } catch (...) {
      result = error_from_exception(std::current_exception());
    }
    const std::chrono::nanoseconds took = state->clock.now() - started;
    state->end_reconcile(worker);
    const std::string_view label = apply_requeue_policy(*state, *key, result);
    state->metrics->on_reconcile(label, took);
    state->logger.debug(2, "reconciled", {{"key", *key}, {"result", label}});
    state->queue.done(*key);
  }
}

// A waiting deadline `after` from now, saturating instead of overflowing.
asio::steady_timer::time_point deadline_after(std::chrono::nanoseconds after) {
  const asio::steady_timer::time_point now = asio::steady_timer::clock_type::now();
  if (after >= asio::steady_timer::time_point::max() - now) {
    return asio::steady_timer::time_point::max();
  }
  return now + std::chrono::duration_cast<asio::steady_timer::duration>(after);
}

// Waits until every worker has ended or `deadline` passed; true when they have ended.
asio::awaitable<bool> wait_for_workers(std::shared_ptr<ControllerState> state,
                                       asio::steady_timer::time_point deadline) {
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(executor, deadline);
  bool ended = false;
  {
    const std::lock_guard lock(state->mutex);
    ended = state->running == 0;
    if (!ended) state->exit_waiters.push_back(timer);
  }
  if (ended) co_return true;
  boost::system::error_code ignored;  // cancelled when the last worker ends
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  {
    const std::lock_guard lock(state->mutex);
    std::erase(state->exit_waiters, timer);
    ended = state->running == 0;
  }
  co_return ended;
}

// The waiting half of stop(): the grace period, then cancellation.
asio::awaitable<void> finish_stop(std::shared_ptr<ControllerState> state,
                                  std::chrono::nanoseconds grace) {
  // Named awaitables: no temporaries inside the co_await expressions (docs/development.md).
  asio::awaitable<bool> within_grace = wait_for_workers(state, deadline_after(grace));
  if (co_await std::move(within_grace)) co_return;
  state->logger.warn("reconciles still running after the stop grace period; cancelling them",
                     {{"active_workers", state->active_workers()}});
  state->cancel_workers(state);
  asio::awaitable<bool> cancelled = wait_for_workers(state, asio::steady_timer::time_point::max());
  (void)co_await std::move(cancelled);
}

}  // namespace
}  // namespace internal

Controller::Controller(const asio::any_io_executor& executor, std::string name,
                       ReconcileFunction reconcile, ControllerOptions options, const Clock& clock)
    : state_(std::make_shared<internal::ControllerState>(
          executor, std::move(name), std::move(reconcile), std::move(options), clock)) {}

// Locking and posting throw only on resource exhaustion, where terminating is the right outcome.
Controller::~Controller() {  // NOLINT(bugprone-exception-escape)
  state_->begin_stop();
  state_->cancel_workers(state_);
}

void Controller::enqueue(const std::string& key) { state_->queue.add(key); }

void Controller::enqueue_after(const std::string& key, std::chrono::nanoseconds delay) {
  state_->queue.add_after(key, delay);
}

void Controller::start() {
  {
    const std::lock_guard lock(state_->mutex);
    NMO_CHECK(!state_->started, "Controller::start() called twice");
    state_->started = true;
    if (state_->stopping) return;
    state_->running = state_->workers.size();
  }
  state_->logger.info("starting workers", {{"workers", state_->workers.size()}});
  for (std::size_t i = 0; i < state_->workers.size(); ++i) {
    internal::ControllerWorker& worker = *state_->workers[i];
    asio::co_spawn(
        worker.strand, internal::run_worker(state_, i),
        asio::bind_cancellation_slot(worker.cancel.slot(),
                                     [state = state_, &worker](const std::exception_ptr& error) {
                                       state->worker_exited(worker, error);
                                     }));
    const std::lock_guard lock(state_->mutex);
    worker.spawned = true;
  }
}

asio::awaitable<void> Controller::stop(std::chrono::nanoseconds grace) {
  // Not a coroutine itself: the controller stops refusing reconciles when stop() is called,
  // not when the returned awaitable first runs.
  if (state_->begin_stop()) state_->logger.info("stopping");
  return internal::finish_stop(state_, grace);
}

bool Controller::healthy(std::chrono::nanoseconds max_stall) const {
  const Clock::time_point now = state_->clock.now();
  const std::lock_guard lock(state_->mutex);
  return std::none_of(state_->workers.begin(), state_->workers.end(),
                      [&](const std::unique_ptr<internal::ControllerWorker>& worker) {
                        return worker->busy_since && now - *worker->busy_since > max_stall;
                      });
}

int Controller::active_workers() const { return state_->active_workers(); }

WorkQueue& Controller::queue() { return state_->queue; }

const std::string& Controller::name() const { return state_->name; }

}  // namespace nmo::runtime
