#include "runtime/work_queue.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "http/asio.h"
#include "runtime/rate_limiter.h"
#include "runtime/work_queue_metrics.h"

namespace nmo::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::Optional;

// The outcome of one get() spawned on the test's io_context.
struct PendingGet {
  bool done = false;
  std::optional<std::string> key;
  std::exception_ptr error;
  asio::cancellation_signal cancel;  // emits into the get() through co_spawn's slot
};

// Records every hook call as text, e.g. "get ns/a 3ms".
class RecordingMetrics final : public WorkQueueMetrics {
 public:
  explicit RecordingMetrics(std::vector<std::string>& events) : events_(events) {}

  void on_add(const std::string& key) override { events_.push_back("add " + key); }
  void on_get(const std::string& key, std::chrono::nanoseconds waited) override {
    events_.push_back("get " + key + " " + to_ms(waited));
  }
  void on_done(const std::string& key, std::chrono::nanoseconds worked) override {
    events_.push_back("done " + key + " " + to_ms(worked));
  }
  void on_retry(const std::string& key) override { events_.push_back("retry " + key); }

 private:
  static std::string to_ms(std::chrono::nanoseconds duration) {
    return std::to_string(std::chrono::duration_cast<milliseconds>(duration).count()) + "ms";
  }

  std::vector<std::string>& events_;
};

// A single-threaded io_context driven by the test, a FakeClock, and a queue whose rate limiter
// is the per-item exponential one (5 ms doubling), so delays are exact.
class WorkQueueTest : public ::testing::Test {
 protected:
  void TearDown() override {
    queue_->shut_down();
    poll();
    for (const std::unique_ptr<PendingGet>& get : gets_) {
      EXPECT_TRUE(get->done);
      EXPECT_EQ(get->error, nullptr);
    }
  }

  // Runs every handler that is ready, without waiting for timers.
  void poll() {
    ctx_.restart();
    ctx_.poll();
  }

  // Starts queue.get() in a new coroutine and lets it run as far as it can.
  PendingGet& start_get(WorkQueue& queue) {
    gets_.push_back(std::make_unique<PendingGet>());
    PendingGet* get = gets_.back().get();
    asio::co_spawn(
        ctx_, queue.get(),
        asio::bind_cancellation_slot(get->cancel.slot(), [get](const std::exception_ptr& error,
                                                               std::optional<std::string> key) {
          get->done = true;
          get->key = std::move(key);
          get->error = error;
        }));
    poll();
    return *get;
  }
  PendingGet& start_get() { return start_get(*queue_); }

  // The key get() returns at once, or std::nullopt when it would have to wait (the waiting
  // get() is then cancelled, which also checks that a cancelled get() takes no key).
  std::optional<std::string> get_now() {
    PendingGet& get = start_get();
    if (!get.done) {
      get.cancel.emit(asio::cancellation_type::terminal);
      poll();
    }
    EXPECT_TRUE(get.done);
    return get.key;
  }

  // Declared first so that handlers destroyed with ctx_ never see them dangle.
  std::vector<std::unique_ptr<PendingGet>> gets_;
  asio::io_context ctx_;
  FakeClock clock_;
  std::unique_ptr<WorkQueue> queue_ = std::make_unique<WorkQueue>(
      ctx_.get_executor(), std::make_unique<ItemExponentialRateLimiter>(), clock_);
};

TEST_F(WorkQueueTest, HandsOutKeysInFifoOrder) {
  queue_->add("ns/c");
  queue_->add("ns/a");
  queue_->add("b");
  EXPECT_EQ(get_now(), "ns/c");
  EXPECT_EQ(get_now(), "ns/a");
  EXPECT_EQ(get_now(), "b");
  EXPECT_EQ(get_now(), std::nullopt);
}

TEST_F(WorkQueueTest, AddingAWaitingKeyAgainDoesNothing) {
  queue_->add("ns/a");
  queue_->add("ns/b");
  queue_->add("ns/a");
  EXPECT_EQ(queue_->depth(), 2U);
  EXPECT_EQ(get_now(), "ns/a");
  EXPECT_EQ(get_now(), "ns/b");
  EXPECT_EQ(get_now(), std::nullopt);
}

TEST_F(WorkQueueTest, ReAddWhileProcessingWaitsForDoneThenRunsOnceMore) {
  queue_->add("ns/a");
  ASSERT_EQ(get_now(), "ns/a");
  queue_->add("ns/a");
  queue_->add("ns/a");
  EXPECT_EQ(queue_->depth(), 0U);
  EXPECT_EQ(get_now(), std::nullopt);  // not while a worker has it

  queue_->done("ns/a");
  EXPECT_EQ(queue_->depth(), 1U);
  EXPECT_EQ(get_now(), "ns/a");
  queue_->done("ns/a");
  EXPECT_EQ(get_now(), std::nullopt);  // both re-adds were one
}

TEST_F(WorkQueueTest, DoneWithoutReAddDoesNotQueueAgain) {
  queue_->add("a");
  ASSERT_EQ(get_now(), "a");
  queue_->done("a");
  EXPECT_EQ(queue_->depth(), 0U);
  EXPECT_EQ(get_now(), std::nullopt);
}

TEST_F(WorkQueueTest, DoneOfAKeyNotBeingProcessedIsIgnored) {
  queue_->add("a");
  queue_->done("a");  // waiting, not processing
  queue_->done("never-added");
  EXPECT_EQ(queue_->depth(), 1U);
  EXPECT_EQ(get_now(), "a");
}

TEST_F(WorkQueueTest, WaitingGetResumesWhenAKeyArrives) {
  PendingGet& get = start_get();
  EXPECT_FALSE(get.done);
  queue_->add("ns/a");
  poll();
  EXPECT_TRUE(get.done);
  EXPECT_THAT(get.key, Optional(std::string("ns/a")));
  EXPECT_EQ(queue_->depth(), 0U);
  queue_->add("ns/a");  // now processing: deferred
  EXPECT_EQ(queue_->depth(), 0U);
}

TEST_F(WorkQueueTest, WaitingGetsAreServedInTheOrderTheyStarted) {
  PendingGet& first = start_get();
  PendingGet& second = start_get();
  PendingGet& third = start_get();
  queue_->add("z");
  queue_->add("y");
  queue_->add("x");
  poll();
  EXPECT_THAT(first.key, Optional(std::string("z")));
  EXPECT_THAT(second.key, Optional(std::string("y")));
  EXPECT_THAT(third.key, Optional(std::string("x")));
}

TEST_F(WorkQueueTest, CancelledGetTakesNoKey) {
  PendingGet& cancelled = start_get();
  PendingGet& waiting = start_get();
  cancelled.cancel.emit(asio::cancellation_type::terminal);
  poll();
  EXPECT_TRUE(cancelled.done);
  EXPECT_EQ(cancelled.key, std::nullopt);
  EXPECT_FALSE(waiting.done);

  queue_->add("a");
  poll();
  EXPECT_THAT(waiting.key, Optional(std::string("a")));
}

TEST_F(WorkQueueTest, AddAfterOrdersByDeadlineAndAnEarlierDeadlineWins) {
  queue_->add_after("c", milliseconds(30));
  queue_->add_after("a", milliseconds(10));
  queue_->add_after("b", milliseconds(20));
  queue_->add_after("a", milliseconds(50));  // later than the pending 10 ms: ignored
  queue_->add_after("c", milliseconds(5));   // earlier than the pending 30 ms: replaces it
  EXPECT_EQ(queue_->depth(), 0U);
  EXPECT_EQ(get_now(), std::nullopt);

  clock_.advance(milliseconds(4));
  EXPECT_EQ(get_now(), std::nullopt);
  clock_.advance(milliseconds(1));
  EXPECT_EQ(get_now(), "c");
  queue_->done("c");

  clock_.advance(milliseconds(15));
  EXPECT_EQ(get_now(), "a");
  EXPECT_EQ(get_now(), "b");
  queue_->done("a");
  queue_->done("b");

  // Neither the ignored 50 ms add of "a" nor the replaced 30 ms add of "c" comes back.
  clock_.advance(std::chrono::hours(1));
  EXPECT_EQ(get_now(), std::nullopt);
}

TEST_F(WorkQueueTest, AddAfterWithoutAPositiveDelayAddsAtOnce) {
  queue_->add_after("a", milliseconds(0));
  queue_->add_after("b", seconds(-1));
  EXPECT_EQ(queue_->depth(), 2U);
  EXPECT_EQ(get_now(), "a");
  EXPECT_EQ(get_now(), "b");
}

TEST_F(WorkQueueTest, AddDoesNotCancelAPendingDelayedAdd) {
  queue_->add_after("a", milliseconds(10));
  queue_->add("a");
  EXPECT_EQ(get_now(), "a");
  queue_->done("a");
  EXPECT_EQ(get_now(), std::nullopt);
  clock_.advance(milliseconds(10));
  EXPECT_EQ(get_now(), "a");
}

TEST_F(WorkQueueTest, DelayedKeyJoinsTheBackOfTheReadyQueue) {
  queue_->add_after("late", milliseconds(1));
  queue_->add("first");
  clock_.advance(milliseconds(1));
  queue_->add("second");
  EXPECT_EQ(get_now(), "first");
  EXPECT_EQ(get_now(), "second");
  EXPECT_EQ(get_now(), "late");
}

TEST_F(WorkQueueTest, RateLimitedBackoffGrowsAndForgetResetsIt) {
  // Waits `expected` (by the fake clock) for the key, then finishes it.
  const auto expect_delay = [this](std::chrono::nanoseconds expected) {
    clock_.advance(expected - milliseconds(1));
    EXPECT_EQ(get_now(), std::nullopt);
    clock_.advance(milliseconds(1));
    EXPECT_EQ(get_now(), "ns/a");
    queue_->done("ns/a");
  };

  queue_->add_rate_limited("ns/a");
  EXPECT_EQ(queue_->num_requeues("ns/a"), 1);
  expect_delay(milliseconds(5));
  queue_->add_rate_limited("ns/a");
  EXPECT_EQ(queue_->num_requeues("ns/a"), 2);
  expect_delay(milliseconds(10));
  queue_->add_rate_limited("ns/a");
  expect_delay(milliseconds(20));
  EXPECT_EQ(queue_->num_requeues("ns/a"), 3);

  queue_->forget("ns/a");
  EXPECT_EQ(queue_->num_requeues("ns/a"), 0);
  queue_->add_rate_limited("ns/a");
  expect_delay(milliseconds(5));
}

TEST_F(WorkQueueTest, DepthCountsOnlyReadyKeys) {
  queue_->add("a");
  queue_->add("b");
  queue_->add("c");
  EXPECT_EQ(queue_->depth(), 3U);
  ASSERT_EQ(get_now(), "a");
  EXPECT_EQ(queue_->depth(), 2U);
  queue_->add_after("d", milliseconds(10));
  EXPECT_EQ(queue_->depth(), 2U);
  queue_->add("a");  // processing: waits for done
  EXPECT_EQ(queue_->depth(), 2U);
  queue_->done("a");
  EXPECT_EQ(queue_->depth(), 3U);
}

TEST_F(WorkQueueTest, ShutDownWakesEveryWaitingGetWithNullopt) {
  PendingGet& first = start_get();
  PendingGet& second = start_get();
  PendingGet& third = start_get();
  EXPECT_FALSE(queue_->shutting_down());
  queue_->shut_down();
  EXPECT_TRUE(queue_->shutting_down());
  poll();
  for (const PendingGet* get : {&first, &second, &third}) {
    EXPECT_TRUE(get->done);
    EXPECT_EQ(get->key, std::nullopt);
  }
  queue_->add("a");
  queue_->add_after("b", milliseconds(0));
  queue_->add_rate_limited("c");
  EXPECT_EQ(queue_->depth(), 0U);
  EXPECT_EQ(queue_->num_requeues("c"), 0);
  EXPECT_EQ(get_now(), std::nullopt);
}

TEST_F(WorkQueueTest, ShutDownAbandonsWaitingKeys) {
  queue_->add("a");
  queue_->shut_down();
  EXPECT_EQ(get_now(), std::nullopt);
}

TEST_F(WorkQueueTest, ShutDownWithDrainHandsOutWhatIsLeft) {
  queue_->add("a");
  queue_->add("b");
  ASSERT_EQ(get_now(), "a");
  queue_->add("a");  // dirty while processing: done("a") queues it again
  queue_->add_after("delayed", milliseconds(1));

  queue_->shut_down_with_drain();
  EXPECT_TRUE(queue_->shutting_down());
  queue_->add("c");  // refused
  EXPECT_EQ(queue_->depth(), 1U);
  EXPECT_EQ(get_now(), "b");

  // Nothing is ready, but "a" comes back once its worker is done: getters wait for it.
  PendingGet& first = start_get();
  PendingGet& second = start_get();
  EXPECT_FALSE(first.done);
  queue_->done("a");
  poll();
  EXPECT_THAT(first.key, Optional(std::string("a")));
  // Then nothing can come any more, although "a" and "b" are still being processed.
  EXPECT_TRUE(second.done);
  EXPECT_EQ(second.key, std::nullopt);
  clock_.advance(seconds(1));  // the delayed add was dropped
  EXPECT_EQ(get_now(), std::nullopt);
  queue_->done("a");
  queue_->done("b");
}

TEST_F(WorkQueueTest, ShutDownAfterDrainStopsAtOnce) {
  queue_->add("a");
  queue_->shut_down_with_drain();
  queue_->shut_down();
  EXPECT_EQ(get_now(), std::nullopt);
}

TEST_F(WorkQueueTest, DrainOnAnEmptyQueueWakesWaitingGets) {
  PendingGet& get = start_get();
  queue_->shut_down_with_drain();
  poll();
  EXPECT_TRUE(get.done);
  EXPECT_EQ(get.key, std::nullopt);
}

TEST_F(WorkQueueTest, MetricsHooksSeeAddsWaitsWorkAndRetries) {
  std::vector<std::string> events;
  queue_->set_metrics(std::make_unique<RecordingMetrics>(events));
  queue_->add("a");
  queue_->add("a");  // coalesced: not an add
  clock_.advance(milliseconds(3));
  ASSERT_EQ(get_now(), "a");
  queue_->add("a");  // dirty while processing: an add
  clock_.advance(milliseconds(7));
  queue_->done("a");
  ASSERT_EQ(get_now(), "a");
  queue_->add_rate_limited("a");
  queue_->add_after("b", milliseconds(2));
  clock_.advance(milliseconds(2));
  ASSERT_EQ(get_now(), "b");
  EXPECT_THAT(events, ElementsAre("add a", "get a 3ms", "add a", "done a 7ms", "get a 7ms",
                                  "retry a", "retry b", "add b", "get b 0ms"));

  queue_->set_metrics(nullptr);  // back to the no-op hooks
  queue_->add("c");
  EXPECT_EQ(events.size(), 9U);
}

TEST_F(WorkQueueTest, DestroyingTheQueueWakesWaitingGets) {
  PendingGet& get = start_get();
  queue_.reset();
  poll();
  EXPECT_TRUE(get.done);
  EXPECT_EQ(get.key, std::nullopt);
  queue_ = std::make_unique<WorkQueue>(ctx_.get_executor());  // for TearDown
}

TEST_F(WorkQueueTest, GetAwaitedAfterTheQueueIsGoneReturnsNullopt) {
  asio::awaitable<std::optional<std::string>> pending = queue_->get();
  queue_.reset();
  std::optional<std::optional<std::string>> result;
  asio::co_spawn(ctx_, std::move(pending),
                 [&result](const std::exception_ptr& error, std::optional<std::string> key) {
                   EXPECT_EQ(error, nullptr);
                   result = std::move(key);
                 });
  poll();
  EXPECT_THAT(result, Optional(std::optional<std::string>()));
  queue_ = std::make_unique<WorkQueue>(ctx_.get_executor());  // for TearDown
}

// Runs `ctx` on the calling thread until `condition` holds; false after `limit`.
bool run_until(asio::io_context& ctx, const std::function<bool()>& condition,
               std::chrono::seconds limit = seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    ctx.restart();
    ctx.run_one_for(milliseconds(10));
  }
  return true;
}

TEST(WorkQueueRealClockTest, DelayedKeyWakesAWaitingGetWhenItsTimerFires) {
  asio::io_context ctx;
  WorkQueue queue(ctx.get_executor());
  std::optional<std::string> key;
  bool done = false;
  asio::co_spawn(ctx, queue.get(),
                 [&](const std::exception_ptr& error, std::optional<std::string> got) {
                   EXPECT_EQ(error, nullptr);
                   key = std::move(got);
                   done = true;
                 });
  const auto start = std::chrono::steady_clock::now();
  queue.add_after("ns/a", milliseconds(20));
  ASSERT_TRUE(run_until(ctx, [&done] { return done; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(20));
  EXPECT_THAT(key, Optional(std::string("ns/a")));
  queue.done("ns/a");
}

// Two threads run 4 workers while two producer threads keep adding the same 1,000 keys, and
// workers re-add keys they are processing (directly or through the delay timer). No key may ever
// be processed by two workers at once, and every key is processed.
TEST(WorkQueueStressTest, TwoThreadsNeverProcessOneKeyConcurrently) {
  constexpr int kKeys = 1000;
  constexpr int kRounds = 10;
  constexpr int kWorkers = 4;
  constexpr int kThreads = 2;

  std::vector<std::string> keys;
  keys.reserve(kKeys);
  std::unordered_map<std::string, std::size_t> index;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back("ns/object-" + std::to_string(i));
    index.emplace(keys.back(), keys.size() - 1);
  }
  std::vector<std::atomic<int>> in_flight(kKeys);
  std::vector<std::atomic<int>> processed(kKeys);
  std::atomic<int> overlaps{0};
  std::atomic<int> workers_finished{0};

  asio::io_context ctx(kThreads);
  WorkQueue queue(ctx.get_executor());
  const auto worker = [&]() -> asio::awaitable<void> {
    while (std::optional<std::string> key = co_await queue.get()) {
      const std::size_t i = index.at(*key);
      if (in_flight[i].fetch_add(1) != 0) {
        overlaps.fetch_add(1);
      }
      // Every other run re-adds the key while processing it, at once or after a short delay.
      const int run = processed[i].fetch_add(1);
      if (run % 4 == 0) {
        queue.add(*key);
      } else if (run % 4 == 2) {
        queue.add_after(*key, std::chrono::microseconds(200));
      }
      // Let the other thread and worker run while this key is in flight.
      co_await asio::post(ctx.get_executor(), asio::use_awaitable);
      in_flight[i].fetch_sub(1);
      queue.done(*key);
    }
    workers_finished.fetch_add(1);
  };
  for (int w = 0; w < kWorkers; ++w) {
    asio::co_spawn(ctx, worker(),
                   [](const std::exception_ptr& error) { EXPECT_EQ(error, nullptr); });
  }

  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ctx] { ctx.run_for(seconds(60)); });
  }
  std::vector<std::thread> producers;
  producers.reserve(2);
  for (int p = 0; p < 2; ++p) {
    producers.emplace_back([&queue, &keys] {
      for (int round = 0; round < kRounds; ++round) {
        for (const std::string& key : keys) {
          queue.add(key);
        }
      }
    });
  }
  for (std::thread& producer : producers) {
    producer.join();
  }
  queue.shut_down_with_drain();  // workers finish what is queued, then get std::nullopt
  for (std::thread& thread : threads) {
    thread.join();
  }

  EXPECT_EQ(workers_finished.load(), kWorkers);
  EXPECT_EQ(overlaps.load(), 0);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const int count = processed[i].load();
    // At least once; at most once per add (2 producers x kRounds, plus the workers' re-adds,
    // one per two runs).
    EXPECT_GE(count, 1) << keys[i];
    EXPECT_LE(count, 2 * (2 * kRounds) + 1) << keys[i];
    EXPECT_EQ(in_flight[i].load(), 0);
  }
  EXPECT_EQ(queue.depth(), 0U);
}

}  // namespace
}  // namespace nmo::runtime
