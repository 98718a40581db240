#include "runtime/controller.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/redirect_error.hpp>
#include <boost/system/error_code.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "http/asio.h"
#include "runtime/rate_limiter.h"

namespace nmo::runtime {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// One on_reconcile() call.
struct ReconcileRecord {
  std::string result;
  std::chrono::nanoseconds duration;
};

class RecordingMetrics final : public ControllerMetrics {
 public:
  explicit RecordingMetrics(std::vector<ReconcileRecord>& records) : records_(records) {}

  void on_reconcile(std::string_view result, std::chrono::nanoseconds duration) override {
    records_.push_back({std::string(result), duration});
  }

 private:
  std::vector<ReconcileRecord>& records_;
};

// A single-threaded io_context driven by the test, a FakeClock, and a reconcile function whose
// behaviour each test scripts: what a call returns (decide_), how often it yields to other
// coroutines (yields_), and which keys wait until the test releases them (gate()).
class ControllerTest : public ::testing::Test {
 protected:
  using Decide = std::function<Result<ReconcileAction>(const std::string& key, int call)>;

  void SetUp() override {
    log::set_writer([this](std::string_view line) { log_lines_.emplace_back(line); });
  }

  void TearDown() override {
    if (controller_ != nullptr) {
      for (const std::string& key : std::set<std::string>(gated_)) release(key);
      EXPECT_TRUE(stop(1h));
      EXPECT_EQ(total_in_flight_, 0);
    }
    log::set_writer({});
  }

  // A controller with `workers` workers, the per-key exponential limiter (5 ms doubling, so
  // delays are exact) and recording metrics. `reconcile` defaults to the scripted one.
  Controller& make_controller(int workers, ReconcileFunction reconcile = {}) {
    if (!reconcile) {
      reconcile = [this](std::string key) { return scripted(std::move(key)); };
    }
    controller_ = std::make_unique<Controller>(
        ctx_.get_executor(), "test", std::move(reconcile),
        ControllerOptions{.workers = workers,
                          .rate_limiter = std::make_unique<ItemExponentialRateLimiter>(),
                          .metrics = std::make_unique<RecordingMetrics>(metrics_)},
        clock_);
    return *controller_;
  }

  // Runs handlers until `condition` holds, moving the fake clock by `step` between rounds so
  // that delayed keys come due. Gives up after 10 s of real time (a hang guard only: every
  // wait in these tests is on the io_context, never a sleep).
  bool run_until(const std::function<bool()>& condition,
                 Clock::duration step = Clock::duration::zero()) {
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      poll();
      if (condition()) return true;
      if (std::chrono::steady_clock::now() > give_up) return false;
      if (step > Clock::duration::zero()) clock_.advance(step);
      ctx_.restart();
      ctx_.run_one_for(1ms);
    }
  }

  void poll() {
    ctx_.restart();
    ctx_.poll();
  }

  // Starts controller_->stop(grace) as a coroutine on the io_context.
  void start_stop(std::chrono::nanoseconds grace) {
    stopped_ = false;
    asio::co_spawn(ctx_, controller_->stop(grace), [this](const std::exception_ptr& error) {
      EXPECT_EQ(error, nullptr);
      stopped_ = true;
    });
  }

  // Stops the controller and runs the io_context until stop() returned.
  bool stop(std::chrono::nanoseconds grace) {
    start_stop(grace);
    return run_until([this] { return stopped_; });
  }

  // Makes reconciles of `key` wait (after their yields) until release(key).
  void gate(const std::string& key) { gated_.insert(key); }

  // Lets the waiting reconcile of `key` (if any) and later ones go on.
  void release(const std::string& key) {
    gated_.erase(key);
    const auto it = gates_.find(key);
    if (it != gates_.end()) it->second->cancel();
  }

  bool waiting_at_gate(const std::string& key) const { return gates_.contains(key); }

  int calls(const std::string& key) const {
    const auto it = calls_by_key_.find(key);
    return it == calls_by_key_.end() ? 0 : it->second;
  }

  std::vector<std::string> results() const {
    std::vector<std::string> out;
    for (const ReconcileRecord& record : metrics_) out.push_back(record.result);
    return out;
  }

  bool logged(const std::vector<std::string>& parts) const {
    return std::any_of(log_lines_.begin(), log_lines_.end(), [&](const std::string& line) {
      return std::all_of(parts.begin(), parts.end(), [&](const std::string& part) {
        return line.find(part) != std::string::npos;
      });
    });
  }

  // The scripted reconcile. Records the call, yields yields_ times, waits at the key's gate if
  // it has one, then returns decide_(key, call) (which may throw).
  asio::awaitable<Result<ReconcileAction>> scripted(std::string key) {
    const int call = ++calls_by_key_[key];
    calls_.push_back(key);
    started_at_[key].push_back(clock_.now());
    requeues_seen_[key].push_back(controller_->queue().num_requeues(key));
    max_same_key_ = std::max(max_same_key_, ++in_flight_[key]);
    max_in_flight_ = std::max(max_in_flight_, ++total_in_flight_);
    if (on_call_) on_call_(key, call);

    const asio::any_io_executor executor = co_await asio::this_coro::executor;
    for (int i = 0; i < yields_; ++i) co_await asio::post(executor, asio::use_awaitable);
    if (gated_.contains(key)) {
      asio::steady_timer gate_timer(executor, asio::steady_timer::time_point::max());
      gates_[key] = &gate_timer;
      boost::system::error_code ec;
      co_await gate_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      gates_.erase(key);
      // Cancelled without release(): the controller cancelled this reconcile.
      if (gated_.contains(key)) cancelled_.push_back(key);
    }
    --in_flight_[key];
    --total_in_flight_;
    if (decide_) co_return decide_(key, call);
    co_return ReconcileAction::done();
  }

  // Declared before ctx_ so that coroutine frames destroyed with ctx_ never see them dangle.
  std::vector<std::string> log_lines_;
  std::vector<ReconcileRecord> metrics_;
  Decide decide_;
  std::function<void(const std::string& key, int call)> on_call_;
  int yields_ = 0;
  std::set<std::string> gated_;
  std::map<std::string, asio::steady_timer*> gates_;
  std::vector<std::string> cancelled_;
  std::vector<std::string> calls_;
  std::map<std::string, int> calls_by_key_;
  std::map<std::string, std::vector<Clock::time_point>> started_at_;
  std::map<std::string, std::vector<int>> requeues_seen_;
  std::map<std::string, int> in_flight_;
  int total_in_flight_ = 0;
  int max_same_key_ = 0;
  int max_in_flight_ = 0;
  bool stopped_ = false;
  FakeClock clock_;

  asio::io_context ctx_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(ControllerTest, WorkersNeverReconcileOneKeyAtOnce) {
  Controller& controller = make_controller(4);
  yields_ = 3;
  // Each reconcile re-adds its key while it runs (an event arriving meanwhile), twice.
  on_call_ = [&](const std::string& key, int call) {
    if (call < 3) controller.enqueue(key);
  };
  const std::vector<std::string> keys = {"ns/a", "ns/b", "ns/c", "ns/d", "ns/e", "f"};
  for (const std::string& key : keys) controller.enqueue(key);
  controller.start();

  ASSERT_TRUE(run_until([&] { return calls_.size() == 3 * keys.size() && total_in_flight_ == 0; }));
  EXPECT_EQ(max_same_key_, 1);
  EXPECT_EQ(max_in_flight_, 4);  // the four workers did run side by side
  for (const std::string& key : keys) EXPECT_EQ(calls(key), 3) << key;
  EXPECT_EQ(controller.queue().depth(), 0U);
  EXPECT_EQ(controller.active_workers(), 0);
}

TEST_F(ControllerTest, ErrorsRequeueWithGrowingBackoffAndSuccessForgets) {
  Controller& controller = make_controller(1);
  decide_ = [](const std::string& /*key*/, int call) -> Result<ReconcileAction> {
    if (call <= 3) return Error(ErrorCode::kConflict, "the object has been modified", 409);
    return ReconcileAction::done();
  };
  controller.enqueue("ns/a");
  controller.start();

  ASSERT_TRUE(run_until([&] { return calls("ns/a") == 4 && total_in_flight_ == 0; }, 1ms));
  poll();
  // Each call saw how many rate-limited requeues came before it; success forgot them.
  EXPECT_THAT(requeues_seen_["ns/a"], ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(controller.queue().num_requeues("ns/a"), 0);
  // The key came back no earlier than the limiter's delays: 5 ms, 10 ms, 20 ms.
  const std::vector<Clock::time_point>& at = started_at_["ns/a"];
  ASSERT_EQ(at.size(), 4U);
  EXPECT_GE(at[1] - at[0], 5ms);
  EXPECT_GE(at[2] - at[1], 10ms);
  EXPECT_GE(at[3] - at[2], 20ms);
  EXPECT_THAT(results(), ElementsAre("error", "error", "error", "success"));
  EXPECT_TRUE(logged({"reconcile failed", "ns/a", "the object has been modified"}));
  // Done with: not queued again.
  EXPECT_EQ(controller.queue().depth(), 0U);
}

TEST_F(ControllerTest, RequeueAfterQueuesTheKeyAgainAfterTheDelay) {
  Controller& controller = make_controller(1);
  decide_ = [](const std::string& /*key*/, int call) -> Result<ReconcileAction> {
    if (call == 1) return Error(ErrorCode::kUnavailable, "connection refused");
    if (call == 2) return ReconcileAction::after(50ms);
    return ReconcileAction::done();
  };
  controller.enqueue("node-1");
  controller.start();

  ASSERT_TRUE(run_until([&] { return calls("node-1") == 2 && total_in_flight_ == 0; }, 1ms));
  poll();
  // requeue_after forgets the error backoff and delays the key instead of queueing it now.
  EXPECT_EQ(controller.queue().num_requeues("node-1"), 0);
  EXPECT_EQ(controller.queue().depth(), 0U);

  ASSERT_TRUE(run_until([&] { return calls("node-1") == 3; }, 1ms));
  const std::vector<Clock::time_point>& at = started_at_["node-1"];
  EXPECT_GE(at[2] - at[1], 50ms);
  poll();
  EXPECT_THAT(results(), ElementsAre("error", "requeue_after", "success"));
}

TEST_F(ControllerTest, AnExceptionIsContainedLoggedAndTheKeyRetried) {
  int direct_calls = 0;
  // "sync" throws from the reconcile function itself, "async" from inside its coroutine.
  Controller& controller = make_controller(2, [&](std::string key) {
    if (std::string_view(key) == "sync" && ++direct_calls == 1)
      throw std::runtime_error("boom before awaiting");
    return scripted(std::move(key));
  });
  yields_ = 1;
  decide_ = [](const std::string& key, int call) -> Result<ReconcileAction> {
    if (key == "async" && call == 1) throw std::logic_error("boom inside");
    return ReconcileAction::done();
  };
  controller.enqueue("sync");
  controller.enqueue("async");
  controller.start();

  ASSERT_TRUE(run_until(
      [&] { return direct_calls == 2 && calls("async") == 2 && total_in_flight_ == 0; }, 1ms));
  poll();
  EXPECT_EQ(calls("sync"), 1);  // the first call never reached the coroutine
  EXPECT_EQ(controller.queue().num_requeues("sync"), 0);
  EXPECT_EQ(controller.queue().num_requeues("async"), 0);
  EXPECT_THAT(results(), UnorderedElementsAre("error", "error", "success", "success"));
  EXPECT_TRUE(logged({"reconcile failed", "sync", "boom before awaiting"}));
  EXPECT_TRUE(logged({"reconcile failed", "async", "boom inside"}));
}

TEST_F(ControllerTest, StopWaitsForReconcilesInFlightAndStartsNoOther) {
  Controller& controller = make_controller(2);
  gate("a");
  gate("b");
  controller.enqueue("a");
  controller.enqueue("b");
  controller.enqueue("c");  // waits: both workers are busy
  controller.start();
  ASSERT_TRUE(run_until([&] { return waiting_at_gate("a") && waiting_at_gate("b"); }));
  EXPECT_EQ(controller.active_workers(), 2);

  start_stop(1h);
  poll();
  EXPECT_TRUE(controller.queue().shutting_down());
  EXPECT_FALSE(stopped_);   // a and b still run
  controller.enqueue("d");  // ignored from now on
  release("a");
  poll();
  EXPECT_FALSE(stopped_);    // b still runs
  EXPECT_EQ(calls("c"), 0);  // a's worker did not take c
  release("b");
  ASSERT_TRUE(run_until([&] { return stopped_; }));

  EXPECT_THAT(calls_, ElementsAre("a", "b"));
  EXPECT_THAT(results(), ElementsAre("success", "success"));
  EXPECT_EQ(controller.active_workers(), 0);
  EXPECT_TRUE(cancelled_.empty());
}

TEST_F(ControllerTest, AKeyHandedOutAsStopIsCalledIsNotReconciled) {
  Controller& controller = make_controller(1);
  controller.start();
  poll();                      // the worker now waits in get()
  controller.enqueue("late");  // handed to the worker, which has not resumed yet
  start_stop(1h);
  ASSERT_TRUE(run_until([&] { return stopped_; }));
  EXPECT_EQ(calls("late"), 0);
  EXPECT_TRUE(metrics_.empty());
}

TEST_F(ControllerTest, StopCancelsAReconcileThatOutlivesTheGracePeriod) {
  Controller& controller = make_controller(1);
  gate("stuck");
  controller.enqueue("stuck");
  controller.start();
  ASSERT_TRUE(run_until([&] { return waiting_at_gate("stuck"); }));

  ASSERT_TRUE(stop(1ms));
  EXPECT_THAT(cancelled_, ElementsAre("stuck"));
  EXPECT_EQ(controller.active_workers(), 0);
  EXPECT_TRUE(logged({"cancelling them"}));
}

TEST_F(ControllerTest, StopBeforeStartReturnsAtOnceAndStartIsThenIgnored) {
  Controller& controller = make_controller(2);
  controller.enqueue("a");
  ASSERT_TRUE(stop(1h));
  controller.start();
  poll();
  EXPECT_EQ(calls("a"), 0);
}

TEST_F(ControllerTest, MetricsSeeEveryResultAndItsDuration) {
  Controller& controller = make_controller(1);
  decide_ = [&](const std::string& key, int call) -> Result<ReconcileAction> {
    if (key == "slow") clock_.advance(250ms);  // the reconcile "takes" 250 ms
    if (call > 1) return ReconcileAction::done();
    if (key == "ns/fails") return Error(ErrorCode::kInternal, "failed");
    if (key == "ns/requeues")
      return ReconcileAction{.requeue_after = std::nullopt, .requeue = true};
    if (key == "ns/polls") return ReconcileAction::after(10ms);
    return ReconcileAction::done();
  };
  for (const char* key : {"slow", "ns/fails", "ns/requeues", "ns/polls"}) {
    controller.enqueue(key);
  }
  controller.start();

  ASSERT_TRUE(run_until([&] { return metrics_.size() == 7; }, 1ms));
  EXPECT_THAT(results(), UnorderedElementsAre("success", "error", "requeue", "requeue_after",
                                              "success", "success", "success"));
  EXPECT_EQ(metrics_.front().result, "success");  // "slow" went first
  EXPECT_EQ(metrics_.front().duration, 250ms);
  // A requeue without an error is rate limited like one, but not logged as an error.
  EXPECT_TRUE(logged({"reconcile failed", "ns/fails"}));
  EXPECT_FALSE(logged({"reconcile failed", "ns/requeues"}));
}

TEST_F(ControllerTest, UnhealthyWhileAReconcileStalls) {
  Controller& controller = make_controller(2);
  EXPECT_TRUE(controller.healthy(1min));  // before start
  controller.start();
  poll();
  clock_.advance(1h);
  EXPECT_TRUE(controller.healthy(1min));  // idle workers are not stalled

  gate("slow");
  controller.enqueue("slow");
  ASSERT_TRUE(run_until([&] { return waiting_at_gate("slow"); }));
  clock_.advance(1min);
  EXPECT_TRUE(controller.healthy(1min));  // exactly at the limit
  clock_.advance(1s);
  EXPECT_FALSE(controller.healthy(1min));
  EXPECT_TRUE(controller.healthy(2min));
  EXPECT_EQ(controller.active_workers(), 1);

  release("slow");
  ASSERT_TRUE(run_until([&] { return total_in_flight_ == 0; }));
  poll();
  EXPECT_TRUE(controller.healthy(1min));
  EXPECT_EQ(controller.active_workers(), 0);
}

// Several threads run the io_context: workers on their strands reconcile different keys in
// parallel, still never one key twice at once.
TEST(ControllerThreadsTest, ManyThreadsNeverReconcileOneKeyAtOnce) {
  struct Shared {
    std::mutex mutex;
    std::map<std::string, int> in_flight;
    std::map<std::string, int> calls;
    int max_same_key = 0;
    int finished = 0;
    std::promise<void> all_finished;
  } shared;
  constexpr int kKeys = 40;
  constexpr int kRounds = 3;
  asio::io_context ctx;
  auto work = asio::make_work_guard(ctx);
  std::unique_ptr<Controller> controller;
  controller = std::make_unique<Controller>(
      ctx.get_executor(), "threads",
      [&](std::string key) -> asio::awaitable<Result<ReconcileAction>> {
        int call = 0;
        {
          const std::lock_guard lock(shared.mutex);
          call = ++shared.calls[key];
          shared.max_same_key = std::max(shared.max_same_key, ++shared.in_flight[key]);
        }
        if (call < kRounds) controller->enqueue(key);
        const asio::any_io_executor executor = co_await asio::this_coro::executor;
        for (int i = 0; i < 3; ++i) co_await asio::post(executor, asio::use_awaitable);
        const std::lock_guard lock(shared.mutex);
        --shared.in_flight[key];
        if (++shared.finished == kKeys * kRounds) shared.all_finished.set_value();
        co_return ReconcileAction::done();
      },
      ControllerOptions{.workers = 8});
  for (int i = 0; i < kKeys; ++i) controller->enqueue("ns/key-" + std::to_string(i));
  controller->start();
  std::vector<std::thread> threads;
  threads.reserve(3);
  for (int i = 0; i < 3; ++i) threads.emplace_back([&] { ctx.run(); });

  const bool finished = shared.all_finished.get_future().wait_for(30s) == std::future_status::ready;
  EXPECT_TRUE(finished);
  std::promise<void> stopped;
  asio::co_spawn(ctx, controller->stop(1h),
                 [&](const std::exception_ptr& /*error*/) { stopped.set_value(); });
  EXPECT_EQ(stopped.get_future().wait_for(30s), std::future_status::ready);
  work.reset();
  for (std::thread& thread : threads) thread.join();

  EXPECT_EQ(shared.max_same_key, 1);
  for (const auto& [key, count] : shared.calls) EXPECT_EQ(count, kRounds) << key;
  EXPECT_EQ(shared.calls.size(), static_cast<std::size_t>(kKeys));
}

}  // namespace
}  // namespace nmo::runtime
