#include "runtime/event_recorder.h"

#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/system/system_error.hpp>
#include <fmt/format.h>

#include "base/check.h"
#include "base/log.h"
#include "kube/api/event.h"
#include "kube/api/time.h"
#include "runtime/internal/event_recorder_correlator.h"
#include "runtime/internal/event_recorder_json.h"

namespace nmo::runtime {
namespace internal {

// One recorded event waiting for the writer.
struct PendingEvent {
  ObjectRef regarding;
  EventOptions options;
  kube::Time time;
};

// Everything the writer coroutine touches, shared with it so it never outlives what it uses.
struct EventRecorderState {
  EventRecorderState(const asio::any_io_executor& executor, kube::Client& api_client,
                     EventSource event_source, const Clock& clock, EventRecorderOptions opts)
      : strand(asio::make_strand(executor)),
        client(api_client),
        source(std::move(event_source)),
        options(opts),
        logger(log::root().with({{"component", "event-recorder"}})),
        wake(strand),
        cache(opts.cache_size),
        spam(opts.spam_burst, opts.spam_refill, opts.cache_size, clock),
        random(std::random_device{}()) {}

  asio::strand<asio::any_io_executor> strand;
  kube::Client& client;
  const EventSource source;
  const EventRecorderOptions options;
  const log::Logger logger;

  std::mutex mu;
  std::deque<PendingEvent> queue;  // guarded by mu
  bool started = false;            // guarded by mu
  bool stopping = false;           // guarded by mu: record() refuses new events
  bool abandon = false;            // guarded by mu: the writer ends without draining
  bool waiting = false;            // guarded by mu: the writer waits on `wake`
  bool busy = false;               // guarded by mu: the writer holds a popped event
  bool finished = false;           // guarded by mu: the writer has ended

  // Only touched on `strand`.
  asio::steady_timer wake;                        // cancelled to wake the writer
  std::vector<asio::steady_timer*> idle_waiters;  // flush() callers
  std::vector<asio::steady_timer*> exit_waiters;  // stop() callers
  asio::cancellation_signal cancel;               // cancels the writer after stop()'s deadline
  LruCache<CachedEvent> cache;
  SpamFilter spam;
  std::mt19937_64 random;
  std::set<std::string> forbidden_namespaces;  // where a write met 403, said once each

  // Wakes the timers in `waiters` (on the strand).
  static void notify(std::vector<asio::steady_timer*>& waiters) {
    for (asio::steady_timer* timer : waiters) timer->cancel();
    waiters.clear();
  }
};

namespace {

using State = EventRecorderState;

// Waits on `timer` until it expires or is cancelled.
asio::awaitable<void> wait(asio::steady_timer& timer) {
  try {
    co_await timer.async_wait(asio::use_awaitable);
  } catch (const boost::system::system_error&) {  // cancelled: that is the wake-up
  }
}

// "<object name>.<16 hex digits>", unique enough for Events (client-go uses the time in ns).
std::string event_name(State& state, const std::string& object_name) {
  return fmt::format("{}.{:016x}", object_name, state.random());
}

// A failed write: logged and dropped (Events are best effort). One refused by RBAC (an install
// whose Roles grant no Events there, such as upstream NMO's, which grant them only in the
// operator's namespace) is said once per namespace, with what to grant, and at debug level after.
void write_failed(State& state, const std::string& ns, const PendingEvent& event,
                  const Error& error, std::string_view what) {
  if (error.code != ErrorCode::kForbidden) {
    state.logger.warn(what, {{"object", event.regarding.name},
                             {"reason", event.options.reason},
                             {"error", error.describe()}});
    return;
  }
  if (state.forbidden_namespaces.insert(ns).second) {
    state.logger.warn(
        "writing Events is forbidden; they are dropped until it is allowed (grant events "
        "create and patch in that namespace: docs/rbac.md)",
        {{"namespace", ns}, {"reason", event.options.reason}, {"error", error.describe()}});
    return;
  }
  state.logger.debug(
      1, "event dropped: writing Events is forbidden",
      {{"namespace", ns}, {"object", event.regarding.name}, {"reason", event.options.reason}});
}

// Creates a new Event for `event` and remembers it under `key`.
asio::awaitable<void> create_event(State& state, const PendingEvent& event, std::string key) {
  std::string ns = event_namespace(event.regarding);
  std::string name = event_name(state, event.regarding.name);
  std::string path = kube::collection_path<kube::Event>(ns);
  boost::json::value body =
      build_event(name, state.source, event.regarding, event.options, event.time);
  // Named, not defaulted: GCC 12 double-frees temporaries in a co_await-ed call's arguments.
  kube::WriteOptions write_options;
  auto created = co_await state.client.create(std::move(path), std::move(body), write_options);
  if (!created) {
    write_failed(state, ns, event, created.error(), "could not create event");
    co_return;
  }
  state.cache.put(key, CachedEvent{std::move(ns), std::move(name), 1});
}

// Writes one event: a patch of the Event it aggregates into, or a new Event.
asio::awaitable<void> write(State& state, const PendingEvent& event) {
  if (!state.spam.allow(spam_key(state.source, event.regarding, event.options))) {
    state.logger.debug(2, "event dropped by the spam filter",
                       {{"object", event.regarding.name}, {"reason", event.options.reason}});
    co_return;
  }
  std::string key = aggregation_key(state.source, event.regarding, event.options);
  const CachedEvent* cached = state.cache.get(key);
  if (cached == nullptr) {
    co_await create_event(state, event, std::move(key));
    co_return;
  }
  CachedEvent next = *cached;
  ++next.count;
  std::string path = kube::object_path<kube::Event>(next.namespace_, next.name);
  std::string patch = build_count_patch(next.count, event.options.message, event.time);
  kube::WriteOptions write_options;  // named: see create_event()
  auto patched = co_await state.client.patch(std::move(path), kube::PatchType::kMergePatch,
                                             std::move(patch), write_options);
  if (patched) {
    state.cache.put(key, std::move(next));
    co_return;
  }
  if (is_not_found(patched.error())) {  // expired or deleted: start again
    state.cache.erase(key);
    co_await create_event(state, event, std::move(key));
    co_return;
  }
  write_failed(state, next.namespace_, event, patched.error(), "could not update event");
}

// The writer: takes events off the queue one at a time until stopped.
asio::awaitable<void> run_writer(std::shared_ptr<State> state) {
  try {
    for (;;) {
      std::optional<PendingEvent> next;
      {
        const std::lock_guard lock(state->mu);
        if (state->abandon || (state->stopping && state->queue.empty())) break;
        if (state->queue.empty()) {
          state->busy = false;
          state->waiting = true;
        } else {
          next = std::move(state->queue.front());
          state->queue.pop_front();
          state->busy = true;
        }
      }
      if (next) {
        co_await write(*state, *next);
        continue;
      }
      State::notify(state->idle_waiters);
      state->wake.expires_at(asio::steady_timer::time_point::max());
      co_await wait(state->wake);
    }
  } catch (const std::exception& e) {  // cancelled after stop()'s deadline
    state->logger.warn("event writer ended", {{"error", e.what()}});
  }
  {
    const std::lock_guard lock(state->mu);
    state->finished = true;
    state->busy = false;
  }
  State::notify(state->idle_waiters);
  State::notify(state->exit_waiters);
}

// flush() on the strand.
asio::awaitable<void> flush_on_strand(std::shared_ptr<State> state) {
  {
    const std::lock_guard lock(state->mu);
    if (!state->started || state->finished || (state->queue.empty() && !state->busy)) co_return;
  }
  asio::steady_timer timer(state->strand, asio::steady_timer::time_point::max());
  state->idle_waiters.push_back(&timer);
  co_await wait(timer);
}

// stop() on the strand.
asio::awaitable<void> stop_on_strand(std::shared_ptr<State> state,
                                     std::chrono::milliseconds deadline) {
  {
    const std::lock_guard lock(state->mu);
    state->stopping = true;
    if (!state->started || state->finished) {
      state->queue.clear();
      co_return;
    }
  }
  state->wake.cancel();
  asio::steady_timer timer(state->strand, deadline);
  state->exit_waiters.push_back(&timer);
  co_await wait(timer);
  std::size_t dropped = 0;
  {
    const std::lock_guard lock(state->mu);
    if (state->finished) co_return;
    state->abandon = true;
    dropped = state->queue.size();
    state->queue.clear();
  }
  state->logger.warn("event writer missed its stop deadline; dropping events",
                     {{"dropped", dropped}});
  std::erase(state->exit_waiters, &timer);
  state->cancel.emit(asio::cancellation_type::terminal);
  state->wake.cancel();
  timer.expires_at(asio::steady_timer::time_point::max());
  state->exit_waiters.push_back(&timer);
  co_await wait(timer);
}

}  // namespace
}  // namespace internal

EventRecorder::EventRecorder(asio::any_io_executor executor, kube::Client& client,
                             std::string component, std::string host, const Clock& clock,
                             EventRecorderOptions options)
    : state_(std::make_shared<internal::EventRecorderState>(
          executor, client, internal::EventSource{std::move(component), std::move(host)}, clock,
          options)) {}

// Locking and posting throw only on resource exhaustion, where terminating is the right outcome.
EventRecorder::~EventRecorder() {  // NOLINT(bugprone-exception-escape)
  {
    const std::lock_guard lock(state_->mu);
    if (!state_->started || state_->finished) return;
    state_->stopping = true;
    state_->abandon = true;
    state_->queue.clear();
  }
  asio::post(state_->strand, [state = state_] {
    state->cancel.emit(asio::cancellation_type::terminal);
    state->wake.cancel();
  });
}

void EventRecorder::record(const ObjectRef& regarding, EventOptions options) {
  const std::string reason = options.reason;
  internal::PendingEvent event{regarding, std::move(options), kube::wall_now()};
  bool wake = false;
  bool stopping = false;
  bool full = false;
  {
    const std::lock_guard lock(state_->mu);
    stopping = state_->stopping;
    full = state_->queue.size() >= state_->options.queue_capacity;
    if (!stopping && !full) {
      state_->queue.push_back(std::move(event));
      wake = std::exchange(state_->waiting, false);
    }
  }
  if (stopping) {
    state_->logger.warn("event recorded after stop dropped",
                        {{"object", regarding.name}, {"reason", reason}});
  } else if (full) {
    state_->logger.warn("event queue full; event dropped",
                        {{"object", regarding.name}, {"reason", reason}});
  } else if (wake) {
    asio::post(state_->strand, [state = state_] { state->wake.cancel(); });
  }
}

void EventRecorder::start() {
  {
    const std::lock_guard lock(state_->mu);
    NMO_CHECK(!state_->started, "EventRecorder::start() called twice");
    state_->started = true;
  }
  asio::co_spawn(state_->strand, internal::run_writer(state_),
                 asio::bind_cancellation_slot(state_->cancel.slot(), asio::detached));
}

asio::awaitable<void> EventRecorder::flush() {
  co_await asio::co_spawn(state_->strand, internal::flush_on_strand(state_), asio::use_awaitable);
}

asio::awaitable<void> EventRecorder::stop(std::chrono::milliseconds deadline) {
  co_await asio::co_spawn(state_->strand, internal::stop_on_strand(state_, deadline),
                          asio::use_awaitable);
}

}  // namespace nmo::runtime
