#include "runtime/work_queue.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/check.h"

namespace nmo::runtime {
namespace internal {
namespace {

using TimePoint = Clock::time_point;

// A suspended get(): the type-erased completion handler of the awaiting coroutine.
class Waiter {
 public:
  Waiter() = default;
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;
  virtual ~Waiter() = default;

  // Resumes the coroutine with `key` by posting to its executor (never inline: the caller may
  // be inside the queue's initiation or a cancellation handler). Call once.
  virtual void complete(std::optional<std::string> key) = 0;
};

template <typename Handler>
class HandlerWaiter final : public Waiter {
 public:
  explicit HandlerWaiter(Handler handler)
      : work_(asio::prefer(asio::get_associated_executor(handler),
                           asio::execution::outstanding_work.tracked)),
        handler_(std::move(handler)) {}

  void complete(std::optional<std::string> key) override {
    asio::post(work_, [handler = std::move(handler_), key = std::move(key)]() mutable {
      std::move(handler)(std::move(key));
    });
  }

 private:
  // The handler's executor, counting as outstanding work while the coroutine waits, so that
  // io_context::run() does not return under a waiting worker.
  std::decay_t<decltype(asio::prefer(std::declval<asio::associated_executor_t<Handler>>(),
                                     asio::execution::outstanding_work.tracked))>
      work_;
  Handler handler_;
};

// A key and the waiter it is handed to, resumed once the mutex is released.
struct Handoff {
  std::unique_ptr<Waiter> waiter;
  std::optional<std::string> key;
};

void complete_all(std::vector<Handoff>& handoffs) {
  for (Handoff& handoff : handoffs) {
    handoff.waiter->complete(std::move(handoff.key));
  }
}

// One pending add_after(): current while `seq` matches delayed_[key].seq.
struct DelayedEntry {
  TimePoint ready_at;
  std::uint64_t seq;
  std::string key;
};

// Orders the delay heap as a min-heap on (ready_at, seq): earliest first, ties in add order.
struct LaterFirst {
  bool operator()(const DelayedEntry& a, const DelayedEntry& b) const {
    return std::tie(a.ready_at, a.seq) > std::tie(b.ready_at, b.seq);
  }
};

}  // namespace

class WorkQueueCore : public std::enable_shared_from_this<WorkQueueCore> {
 public:
  WorkQueueCore(const asio::any_io_executor& executor, std::unique_ptr<RateLimiter> limiter,
                const Clock& clock)
      : limiter_(std::move(limiter)),
        clock_(clock),
        timer_(executor),
        metrics_(std::make_unique<WorkQueueMetrics>()) {
    NMO_CHECK(limiter_ != nullptr, "WorkQueue needs a rate limiter");
  }

  void add(const std::string& key) {
    std::vector<Handoff> handoffs;
    {
      const std::lock_guard lock(mutex_);
      const TimePoint now = clock_.now();
      enqueue_locked(key, now);
      dispatch_locked(now, handoffs);
    }
    complete_all(handoffs);
  }

  void add_after(const std::string& key, std::chrono::nanoseconds delay) {
    std::vector<Handoff> handoffs;
    {
      const std::lock_guard lock(mutex_);
      if (shutting_down_) {
        return;
      }
      metrics_->on_retry(key);
      const TimePoint now = clock_.now();
      if (delay.count() <= 0) {
        enqueue_locked(key, now);
        dispatch_locked(now, handoffs);
      } else {
        schedule_locked(key, now + delay, now);
      }
    }
    complete_all(handoffs);
  }

  void add_rate_limited(const std::string& key) {
    if (shutting_down()) {
      return;
    }
    add_after(key, limiter_->when(key));
  }

  void forget(const std::string& key) { limiter_->forget(key); }

  [[nodiscard]] int num_requeues(const std::string& key) const {
    return limiter_->num_requeues(key);
  }

  // The initiation of get(): hands `waiter` a ready key, std::nullopt, or parks it.
  void start_get(std::unique_ptr<Waiter> waiter, asio::cancellation_slot slot) {
    std::vector<Handoff> handoffs;
    {
      const std::lock_guard lock(mutex_);
      const TimePoint now = clock_.now();
      promote_due_locked(now);
      dispatch_locked(now, handoffs);  // waiters that were here first get the promoted keys
      if (finished_locked()) {
        handoffs.push_back({std::move(waiter), std::nullopt});
      } else if (!queue_.empty()) {
        handoffs.push_back({std::move(waiter), take_front_locked(now)});
      } else {
        const std::uint64_t id = next_waiter_id_++;
        // Connected before the waiter becomes visible to other threads, so the slot is never
        // touched by two threads at once.
        if (slot.is_connected()) {
          slot.assign([weak = weak_from_this(), id](asio::cancellation_type type) {
            if (type == asio::cancellation_type::none) {
              return;
            }
            if (const std::shared_ptr<WorkQueueCore> core = weak.lock()) {
              core->cancel_get(id);
            }
          });
        }
        waiters_.emplace(id, std::move(waiter));
      }
    }
    complete_all(handoffs);
  }

  void done(const std::string& key) {
    std::vector<Handoff> handoffs;
    {
      const std::lock_guard lock(mutex_);
      const auto it = processing_.find(key);
      if (it == processing_.end()) {
        return;
      }
      const TimePoint now = clock_.now();
      metrics_->on_done(key, now - it->second);
      processing_.erase(it);
      if (dirty_.contains(key)) {
        queue_.push_back(key);
      }
      dispatch_locked(now, handoffs);
    }
    complete_all(handoffs);
  }

  void shut_down(bool drain) {
    std::vector<Handoff> handoffs;
    {
      const std::lock_guard lock(mutex_);
      if (!shutting_down_) {
        draining_ = drain;
      } else if (!drain) {
        draining_ = false;  // shut_down() after shut_down_with_drain() stops at once
      }
      shutting_down_ = true;
      delayed_.clear();
      heap_.clear();
      timer_target_.reset();
      ++timer_generation_;
      timer_.cancel();
      dispatch_locked(clock_.now(), handoffs);
    }
    complete_all(handoffs);
  }

  [[nodiscard]] bool shutting_down() const {
    const std::lock_guard lock(mutex_);
    return shutting_down_;
  }

  [[nodiscard]] std::size_t depth() const {
    const std::lock_guard lock(mutex_);
    return queue_.size();
  }

  void set_metrics(std::unique_ptr<WorkQueueMetrics> metrics) {
    const std::lock_guard lock(mutex_);
    metrics_ = metrics ? std::move(metrics) : std::make_unique<WorkQueueMetrics>();
  }

 private:
  // Makes `key` dirty and, unless it is being processed, queues it.
  void enqueue_locked(const std::string& key, TimePoint now) {
    if (shutting_down_ || dirty_.contains(key)) {
      return;
    }
    dirty_.emplace(key, now);
    metrics_->on_add(key);
    if (!processing_.contains(key)) {
      queue_.push_back(key);
    }
  }

  // Pops the front of the ready FIFO and marks it processing.
  std::string take_front_locked(TimePoint now) {
    std::string key = std::move(queue_.front());
    queue_.pop_front();
    const auto it = dirty_.find(key);
    NMO_CHECK(it != dirty_.end(), "WorkQueue: queued key is not dirty: " + key);
    metrics_->on_get(key, now - it->second);
    dirty_.erase(it);
    processing_.emplace(key, now);
    return key;
  }

  // Hands ready keys to waiting getters, oldest waiter first; once the queue is finished,
  // releases the remaining waiters with std::nullopt.
  void dispatch_locked(TimePoint now, std::vector<Handoff>& handoffs) {
    while (!waiters_.empty() && !queue_.empty() && !finished_locked()) {
      auto first = waiters_.begin();
      handoffs.push_back({std::move(first->second), take_front_locked(now)});
      waiters_.erase(first);
    }
    if (finished_locked()) {
      for (auto& entry : waiters_) {
        handoffs.push_back({std::move(entry.second), std::nullopt});
      }
      waiters_.clear();
    }
  }

  // True when get() must return std::nullopt: shut down, or draining with nothing left that
  // could ever be handed out (queued keys and processing keys to re-queue are all dirty).
  [[nodiscard]] bool finished_locked() const {
    return shutting_down_ && (!draining_ || dirty_.empty());
  }

  void cancel_get(std::uint64_t id) {
    std::unique_ptr<Waiter> waiter;
    {
      const std::lock_guard lock(mutex_);
      const auto it = waiters_.find(id);
      if (it == waiters_.end()) {
        return;  // already handed a key or released
      }
      waiter = std::move(it->second);
      waiters_.erase(it);
    }
    waiter->complete(std::nullopt);
  }

  // Records a delayed add of `key` at `ready_at` unless an earlier one is pending.
  void schedule_locked(const std::string& key, TimePoint ready_at, TimePoint now) {
    const auto it = delayed_.find(key);
    if (it != delayed_.end() && it->second.ready_at <= ready_at) {
      return;
    }
    const std::uint64_t seq = next_seq_++;
    delayed_.insert_or_assign(key, Pending{ready_at, seq});
    heap_.push_back({ready_at, seq, key});
    std::push_heap(heap_.begin(), heap_.end(), LaterFirst{});
    arm_timer_locked(now);
  }

  // Drops replaced entries from the top of the heap, so the top is the next real deadline.
  void drop_stale_top_locked() {
    while (!heap_.empty()) {
      const DelayedEntry& top = heap_.front();
      const auto it = delayed_.find(top.key);
      if (it != delayed_.end() && it->second.seq == top.seq) {
        return;
      }
      std::pop_heap(heap_.begin(), heap_.end(), LaterFirst{});
      heap_.pop_back();
    }
  }

  // Moves every delayed key whose time has come to the ready FIFO, earliest first.
  void promote_due_locked(TimePoint now) {
    while (true) {
      drop_stale_top_locked();
      if (heap_.empty() || heap_.front().ready_at > now) {
        return;
      }
      std::pop_heap(heap_.begin(), heap_.end(), LaterFirst{});
      DelayedEntry entry = std::move(heap_.back());
      heap_.pop_back();
      delayed_.erase(entry.key);
      enqueue_locked(entry.key, now);
    }
  }

  // Makes sure the timer fires no later than the earliest pending deadline.
  void arm_timer_locked(TimePoint now) {
    drop_stale_top_locked();
    if (heap_.empty()) {
      return;
    }
    const TimePoint ready_at = heap_.front().ready_at;
    if (timer_target_ && *timer_target_ <= ready_at) {
      return;
    }
    timer_target_ = ready_at;
    const std::uint64_t generation = ++timer_generation_;
    // The timer runs on real time; with a FakeClock it fires after the fake delay has passed
    // in real time, finds nothing due unless the fake clock moved, and re-arms.
    timer_.expires_after(std::max(std::chrono::nanoseconds(0), ready_at - now));
    timer_.async_wait([weak = weak_from_this(), generation](const boost::system::error_code& ec) {
      if (ec) {
        return;  // cancelled: re-armed or shut down
      }
      if (const std::shared_ptr<WorkQueueCore> core = weak.lock()) {
        core->on_timer(generation);
      }
    });
  }

  void on_timer(std::uint64_t generation) {
    std::vector<Handoff> handoffs;
    {
      const std::lock_guard lock(mutex_);
      if (generation != timer_generation_ || shutting_down_) {
        return;  // superseded by a later arm, or shut down
      }
      timer_target_.reset();
      const TimePoint now = clock_.now();
      promote_due_locked(now);
      dispatch_locked(now, handoffs);
      arm_timer_locked(now);
    }
    complete_all(handoffs);
  }

  struct Pending {
    TimePoint ready_at;
    std::uint64_t seq;
  };

  const std::unique_ptr<RateLimiter> limiter_;  // thread-safe on its own; called without mutex_
  const Clock& clock_;

  mutable std::mutex mutex_;
  // Everything below is guarded by mutex_. Invariants: a key is in queue_ at most once; every
  // key in queue_ is in dirty_ and not in processing_; every dirty key that is not processing
  // is in queue_; waiters_ is empty whenever queue_ is not.
  std::deque<std::string> queue_;                             // ready keys, FIFO
  std::unordered_map<std::string, TimePoint> dirty_;          // key -> when it was added
  std::unordered_map<std::string, TimePoint> processing_;     // key -> when a worker took it
  std::map<std::uint64_t, std::unique_ptr<Waiter>> waiters_;  // by id, so oldest first
  std::uint64_t next_waiter_id_ = 0;
  std::unordered_map<std::string, Pending> delayed_;  // the current delayed add of each key
  std::vector<DelayedEntry> heap_;  // min-heap (LaterFirst); holds replaced entries until popped
  std::uint64_t next_seq_ = 0;
  asio::steady_timer timer_;               // only touched under mutex_
  std::optional<TimePoint> timer_target_;  // deadline the armed timer wait is for
  std::uint64_t timer_generation_ = 0;     // identifies the current wait; stale handlers ignore
  bool shutting_down_ = false;
  bool draining_ = false;
  std::unique_ptr<WorkQueueMetrics> metrics_;
};

}  // namespace internal

WorkQueue::WorkQueue(const asio::any_io_executor& executor, std::unique_ptr<RateLimiter> limiter,
                     const Clock& clock)
    : core_(std::make_shared<internal::WorkQueueCore>(executor, std::move(limiter), clock)) {}

WorkQueue::~WorkQueue() { core_->shut_down(/*drain=*/false); }

void WorkQueue::add(const std::string& key) { core_->add(key); }

void WorkQueue::add_after(const std::string& key, std::chrono::nanoseconds delay) {
  core_->add_after(key, delay);
}

void WorkQueue::add_rate_limited(const std::string& key) { core_->add_rate_limited(key); }

void WorkQueue::forget(const std::string& key) { core_->forget(key); }

int WorkQueue::num_requeues(const std::string& key) const { return core_->num_requeues(key); }

asio::awaitable<std::optional<std::string>> WorkQueue::get() {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(std::optional<std::string>)>(
      [weak = std::weak_ptr<internal::WorkQueueCore>(core_)](auto handler) {
        const asio::cancellation_slot slot = asio::get_associated_cancellation_slot(handler);
        auto waiter =
            std::make_unique<internal::HandlerWaiter<decltype(handler)>>(std::move(handler));
        if (const std::shared_ptr<internal::WorkQueueCore> core = weak.lock()) {
          core->start_get(std::move(waiter), slot);
        } else {
          waiter->complete(std::nullopt);  // the queue is gone: as after shut_down()
        }
      },
      asio::use_awaitable);
}

void WorkQueue::done(const std::string& key) { core_->done(key); }

void WorkQueue::shut_down() { core_->shut_down(/*drain=*/false); }

void WorkQueue::shut_down_with_drain() { core_->shut_down(/*drain=*/true); }

bool WorkQueue::shutting_down() const { return core_->shutting_down(); }

std::size_t WorkQueue::depth() const { return core_->depth(); }

void WorkQueue::set_metrics(std::unique_ptr<WorkQueueMetrics> metrics) {
  core_->set_metrics(std::move(metrics));
}

}  // namespace nmo::runtime
