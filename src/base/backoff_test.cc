#include "base/backoff.h"

#include <chrono>
#include <cstddef>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;

// The reflector's policy (kube-rs default watcher backoff): 0.8 s doubling to 30 s.
constexpr BackoffOptions kReflector{.initial = milliseconds(800), .max = seconds(30)};

std::vector<nanoseconds> take(ExponentialBackoff& backoff, int count) {
  std::vector<nanoseconds> delays;
  delays.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    delays.push_back(backoff.next());
  }
  return delays;
}

// A random source that replays `values` in order.
UniformRandom replay(std::vector<double> values) {
  return
      [values = std::move(values), index = std::size_t{0}]() mutable { return values.at(index++); };
}

TEST(ExponentialBackoffTest, DoublesUpToTheCap) {
  ExponentialBackoff backoff(kReflector);
  EXPECT_THAT(
      take(backoff, 8),
      ElementsAre(milliseconds(800), milliseconds(1600), milliseconds(3200), milliseconds(6400),
                  milliseconds(12800), milliseconds(25600), seconds(30), seconds(30)));
}

TEST(ExponentialBackoffTest, OtherFactor) {
  ExponentialBackoff backoff({.initial = seconds(1), .max = seconds(10), .factor = 3.0});
  EXPECT_THAT(take(backoff, 4), ElementsAre(seconds(1), seconds(3), seconds(9), seconds(10)));
}

TEST(ExponentialBackoffTest, FactorOneIsConstant) {
  ExponentialBackoff backoff({.initial = milliseconds(250), .max = seconds(1), .factor = 1.0});
  EXPECT_THAT(take(backoff, 3),
              ElementsAre(milliseconds(250), milliseconds(250), milliseconds(250)));
}

TEST(ExponentialBackoffTest, ManyStepsSaturateWithoutOverflow) {
  ExponentialBackoff backoff({.initial = nanoseconds(1), .max = nanoseconds::max()});
  nanoseconds last{0};
  for (int i = 0; i < 200; ++i) {
    last = backoff.next();
  }
  EXPECT_EQ(last, nanoseconds::max());
}

TEST(ExponentialBackoffTest, ResetStartsOver) {
  ExponentialBackoff backoff(kReflector);
  (void)take(backoff, 5);
  backoff.reset();
  EXPECT_THAT(take(backoff, 2), ElementsAre(milliseconds(800), milliseconds(1600)));
}

TEST(ExponentialBackoffTest, ResetAfterHealthyNeedsTheThreshold) {
  BackoffOptions options = kReflector;
  options.reset_after = seconds(120);
  ExponentialBackoff backoff(options);
  EXPECT_THAT(take(backoff, 3),
              ElementsAre(milliseconds(800), milliseconds(1600), milliseconds(3200)));

  EXPECT_FALSE(backoff.reset_after_healthy(seconds(119)));
  EXPECT_EQ(backoff.next(), milliseconds(6400));

  EXPECT_TRUE(backoff.reset_after_healthy(seconds(120)));
  EXPECT_EQ(backoff.next(), milliseconds(800));
}

TEST(ExponentialBackoffTest, ResetAfterHealthyIsOffByDefault) {
  ExponentialBackoff backoff(kReflector);
  (void)backoff.next();
  EXPECT_FALSE(backoff.reset_after_healthy(std::chrono::hours(24)));
  EXPECT_EQ(backoff.next(), milliseconds(1600));
}

TEST(ExponentialBackoffTest, FullJitterScalesEachStep) {
  BackoffOptions options = kReflector;
  options.full_jitter = true;
  ExponentialBackoff backoff(options, [] { return 0.5; });
  EXPECT_THAT(take(backoff, 8),
              ElementsAre(milliseconds(400), milliseconds(800), milliseconds(1600),
                          milliseconds(3200), milliseconds(6400), milliseconds(12800),
                          milliseconds(15000), milliseconds(15000)));
}

TEST(ExponentialBackoffTest, FullJitterCoversZeroToJustBelowTheStep) {
  BackoffOptions options = kReflector;
  options.full_jitter = true;
  ExponentialBackoff backoff(options, replay({0.0, 0.25, 0.999999999}));
  // 0 * 0.8 s, 0.25 * 1.6 s, and 0.999999999 * 3.2 s rounded down to whole nanoseconds.
  EXPECT_THAT(take(backoff, 3),
              ElementsAre(nanoseconds(0), milliseconds(400), nanoseconds(3'199'999'996)));
}

TEST(ExponentialBackoffTest, DefaultRandomStaysBelowEachStep) {
  BackoffOptions options = kReflector;
  options.full_jitter = true;
  ExponentialBackoff backoff(options);
  ExponentialBackoff steps(kReflector);
  for (int i = 0; i < 1000; ++i) {
    const nanoseconds step = steps.next();
    const nanoseconds delay = backoff.next();
    EXPECT_GE(delay, nanoseconds(0));
    EXPECT_LT(delay, step);
  }
}

TEST(ExponentialBackoffDeathTest, RejectsBadOptions) {
  EXPECT_DEATH(ExponentialBackoff({.initial = nanoseconds(0), .max = seconds(1)}),
               "initial must be positive, got 0 ns");
  EXPECT_DEATH(ExponentialBackoff({.initial = seconds(2), .max = seconds(1)}),
               "max \\(1000000000 ns\\) is below initial \\(2000000000 ns\\)");
  EXPECT_DEATH(ExponentialBackoff({.initial = seconds(1), .max = seconds(2), .factor = 0.5}),
               "factor must be at least 1, got 0.5");
}

TEST(ExponentialBackoffDeathTest, RejectsRandomOutsideUnitInterval) {
  BackoffOptions options = kReflector;
  options.full_jitter = true;
  ExponentialBackoff backoff(options, [] { return 1.0; });
  EXPECT_DEATH((void)backoff.next(), "random source returned 1.000000, outside \\[0, 1\\)");
}

}  // namespace
}  // namespace nmo
