#include "runtime/rate_limiter.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"

namespace nmo::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;

std::vector<nanoseconds> take(RateLimiter& limiter, const std::string& key, int count) {
  std::vector<nanoseconds> delays;
  delays.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    delays.push_back(limiter.when(key));
  }
  return delays;
}

TEST(ItemExponentialRateLimiterTest, DoublesPerFailureFromFiveMilliseconds) {
  ItemExponentialRateLimiter limiter;
  EXPECT_THAT(take(limiter, "ns/a", 5),
              ElementsAre(milliseconds(5), milliseconds(10), milliseconds(20), milliseconds(40),
                          milliseconds(80)));
  EXPECT_EQ(limiter.num_requeues("ns/a"), 5);
}

TEST(ItemExponentialRateLimiterTest, CapsAtOneThousandSeconds) {
  ItemExponentialRateLimiter limiter;
  const std::vector<nanoseconds> delays = take(limiter, "a", 20);
  // 5 ms * 2^17 = 655.36 s is the last step below the cap; 5 ms * 2^18 would be 1310.72 s.
  EXPECT_EQ(delays[17], milliseconds(655'360));
  EXPECT_EQ(delays[18], seconds(1000));
  EXPECT_EQ(delays[19], seconds(1000));
}

TEST(ItemExponentialRateLimiterTest, HugeFailureCountsStayAtTheCap) {
  ItemExponentialRateLimiter limiter(nanoseconds(1), nanoseconds::max());
  const std::vector<nanoseconds> delays = take(limiter, "a", 100);
  EXPECT_EQ(delays[62], nanoseconds(std::int64_t{1} << 62));
  EXPECT_EQ(delays[63], nanoseconds::max());
  EXPECT_EQ(delays[99], nanoseconds::max());
}

TEST(ItemExponentialRateLimiterTest, KeysAreIndependentAndForgetResets) {
  ItemExponentialRateLimiter limiter(milliseconds(1), seconds(1));
  EXPECT_THAT(take(limiter, "a", 3),
              ElementsAre(milliseconds(1), milliseconds(2), milliseconds(4)));
  EXPECT_EQ(limiter.when("b"), milliseconds(1));
  EXPECT_EQ(limiter.num_requeues("a"), 3);
  EXPECT_EQ(limiter.num_requeues("b"), 1);
  EXPECT_EQ(limiter.num_requeues("never-seen"), 0);

  limiter.forget("a");
  EXPECT_EQ(limiter.num_requeues("a"), 0);
  EXPECT_EQ(limiter.when("a"), milliseconds(1));
  EXPECT_EQ(limiter.num_requeues("b"), 1);
}

TEST(BucketRateLimiterTest, BurstIsFreeThenOneTokenPerTenthOfASecond) {
  const FakeClock clock;
  BucketRateLimiter limiter(10.0, 100, clock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(limiter.when("k" + std::to_string(i)), nanoseconds(0)) << "call " << i;
  }
  EXPECT_THAT(take(limiter, "x", 3),
              ElementsAre(milliseconds(100), milliseconds(200), milliseconds(300)));
}

TEST(BucketRateLimiterTest, RefillsWithClockTime) {
  FakeClock clock;
  BucketRateLimiter limiter(10.0, 2, clock);
  EXPECT_THAT(take(limiter, "x", 3),
              ElementsAre(nanoseconds(0), nanoseconds(0), milliseconds(100)));
  // One token was borrowed; after 0.35 s the bucket holds 3.5 - 1 = 2.5 tokens, capped at 2.
  clock.advance(milliseconds(350));
  EXPECT_THAT(take(limiter, "x", 3),
              ElementsAre(nanoseconds(0), nanoseconds(0), milliseconds(100)));
  // At 0.4 s the bucket is half a token short (the last reservation is due at 0.45 s), so the
  // next token exists at 0.55 s.
  clock.advance(milliseconds(50));
  EXPECT_EQ(limiter.when("x"), milliseconds(150));
}

TEST(BucketRateLimiterTest, IdleTimeBeyondTheBurstIsLost) {
  FakeClock clock;
  BucketRateLimiter limiter(10.0, 100, clock);
  (void)take(limiter, "x", 100);
  clock.advance(std::chrono::hours(1));
  const std::vector<nanoseconds> delays = take(limiter, "x", 101);
  EXPECT_EQ(std::count(delays.begin(), delays.end(), nanoseconds(0)), 100);
  EXPECT_EQ(delays.back(), milliseconds(100));
}

TEST(BucketRateLimiterTest, FractionalQpsRoundsTheInterval) {
  const FakeClock clock;
  BucketRateLimiter limiter(3.0, 1, clock);
  EXPECT_THAT(take(limiter, "x", 3),
              ElementsAre(nanoseconds(0), nanoseconds(333'333'333), nanoseconds(666'666'666)));
}

TEST(BucketRateLimiterTest, IgnoresKeys) {
  const FakeClock clock;
  BucketRateLimiter limiter(1.0, 1, clock);
  EXPECT_EQ(limiter.when("a"), nanoseconds(0));
  limiter.forget("a");
  EXPECT_EQ(limiter.when("a"), seconds(1));
  EXPECT_EQ(limiter.num_requeues("a"), 0);
}

TEST(BucketRateLimiterTest, ConcurrentCallersEachReserveTheirOwnToken) {
  const FakeClock clock;
  BucketRateLimiter limiter(10.0, 100, clock);
  constexpr int kThreads = 2;
  constexpr int kCalls = 1000;
  std::vector<std::vector<nanoseconds>> delays(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&limiter, &mine = delays[static_cast<std::size_t>(t)]] {
      for (int i = 0; i < kCalls; ++i) {
        mine.push_back(limiter.when("x"));
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  std::vector<nanoseconds> all;
  for (const std::vector<nanoseconds>& mine : delays) {
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  // 100 free tokens, then one reservation per 100 ms: no two callers got the same token.
  std::vector<nanoseconds> expected(100, nanoseconds(0));
  for (int i = 1; i <= kThreads * kCalls - 100; ++i) {
    expected.emplace_back(milliseconds(100) * i);
  }
  EXPECT_EQ(all, expected);
}

TEST(MaxOfRateLimiterTest, ReturnsTheLongestDelayAndAsksEveryLimiter) {
  const FakeClock clock;
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialRateLimiter>(milliseconds(300), seconds(10)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(2.0, 1, clock));
  MaxOfRateLimiter limiter(std::move(limiters));
  // Item: 300, 600, 1200 ms. Bucket (one token per 500 ms): 0, 500, 1000 ms.
  EXPECT_THAT(take(limiter, "a", 3),
              ElementsAre(milliseconds(300), milliseconds(600), milliseconds(1200)));
  // The bucket's next reservation is at 1500 ms, the item's first delay for "b" 300 ms.
  EXPECT_EQ(limiter.when("b"), milliseconds(1500));
  EXPECT_EQ(limiter.num_requeues("a"), 3);
  limiter.forget("a");
  EXPECT_EQ(limiter.num_requeues("a"), 0);
  EXPECT_EQ(limiter.num_requeues("b"), 1);
}

TEST(DefaultControllerRateLimiterTest, ItemExponentialUnderATenQpsBucket) {
  const FakeClock clock;
  const std::unique_ptr<RateLimiter> limiter = default_controller_rate_limiter(clock);
  EXPECT_THAT(take(*limiter, "ns/a", 3),
              ElementsAre(milliseconds(5), milliseconds(10), milliseconds(20)));
  for (int i = 0; i < 97; ++i) {
    ASSERT_EQ(limiter->when("ns/k" + std::to_string(i)), milliseconds(5)) << "key " << i;
  }
  // The burst of 100 is spent: the bucket's 100 ms now beats a fresh key's 5 ms.
  EXPECT_EQ(limiter->when("ns/b"), milliseconds(100));
  EXPECT_EQ(limiter->num_requeues("ns/a"), 3);
  limiter->forget("ns/a");
  EXPECT_EQ(limiter->num_requeues("ns/a"), 0);
}

TEST(RateLimiterDeathTest, RejectsBadConfiguration) {
  EXPECT_DEATH(ItemExponentialRateLimiter(nanoseconds(0), seconds(1)), "base must be positive");
  EXPECT_DEATH(ItemExponentialRateLimiter(seconds(2), seconds(1)), "max is below base");
  EXPECT_DEATH(BucketRateLimiter(0.0, 1), "qps must be positive");
  EXPECT_DEATH(BucketRateLimiter(1.0, 0), "burst must be at least 1");
  EXPECT_DEATH(MaxOfRateLimiter({}), "needs at least one limiter");
}

}  // namespace
}  // namespace nmo::runtime
