#include "base/clock.h"

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace nmo {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(SystemClockTest, IsTheSteadyClock) {
  const auto before = std::chrono::steady_clock::now();
  const auto reading = system_clock().now();
  const auto after = std::chrono::steady_clock::now();
  EXPECT_LE(before, reading);
  EXPECT_LE(reading, after);
}

TEST(SystemClockTest, IsOneObject) { EXPECT_EQ(&system_clock(), &system_clock()); }

TEST(FakeClockTest, StartsAtTheEpochByDefault) {
  const FakeClock clock;
  EXPECT_EQ(clock.now(), Clock::time_point{});
}

TEST(FakeClockTest, StartsWhereTold) {
  const Clock::time_point start = Clock::time_point{} + seconds(42);
  const FakeClock clock(start);
  EXPECT_EQ(clock.now(), start);
}

TEST(FakeClockTest, MovesOnlyWhenTold) {
  FakeClock clock;
  clock.advance(milliseconds(1500));
  EXPECT_EQ(clock.now().time_since_epoch(), milliseconds(1500));
  EXPECT_EQ(clock.now().time_since_epoch(), milliseconds(1500));
  clock.advance(nanoseconds(0));
  EXPECT_EQ(clock.now().time_since_epoch(), milliseconds(1500));
  clock.set(Clock::time_point{} + seconds(10));
  EXPECT_EQ(clock.now().time_since_epoch(), seconds(10));
  clock.set(clock.now());
  EXPECT_EQ(clock.now().time_since_epoch(), seconds(10));
}

TEST(FakeClockTest, ConcurrentAdvancesAllCount) {
  FakeClock clock;
  constexpr int kThreads = 2;
  constexpr int kSteps = 10'000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < kSteps; ++i) {
        clock.advance(nanoseconds(3));
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(clock.now().time_since_epoch(), nanoseconds(3 * kThreads * kSteps));
}

TEST(FakeClockDeathTest, RefusesToGoBackwards) {
  FakeClock clock(Clock::time_point{} + seconds(5));
  EXPECT_DEATH(clock.set(Clock::time_point{} + seconds(4)),
               "FakeClock::set would move time backwards by 1000000000 ns");
  EXPECT_DEATH(clock.advance(nanoseconds(-1)), "FakeClock::advance by a negative duration: -1 ns");
}

}  // namespace
}  // namespace nmo
