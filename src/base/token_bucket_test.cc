#include "base/token_bucket.h"

#include <gtest/gtest.h>

namespace nmo {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(TokenBucketTest, BurstIsFreeThenCallersWaitInOrder) {
  FakeClock clock;
  TokenBucket bucket(10.0, 3, clock);
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  // Empty: the next tokens are borrowed, due 100 ms apart at 10 qps.
  EXPECT_EQ(bucket.reserve(), milliseconds(100));
  EXPECT_EQ(bucket.reserve(), milliseconds(200));
}

TEST(TokenBucketTest, RefillsWithTimeUpToBurst) {
  FakeClock clock;
  TokenBucket bucket(2.0, 2, clock);
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  clock.advance(std::chrono::seconds(10));  // would be 20 tokens, capped at the burst of 2
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  EXPECT_EQ(bucket.reserve(), milliseconds(500));
}

TEST(TokenBucketTest, BorrowedTokensArePaidBackBeforeNewOnes) {
  FakeClock clock;
  TokenBucket bucket(1.0, 1, clock);
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  EXPECT_EQ(bucket.reserve(), std::chrono::seconds(1));
  clock.advance(std::chrono::milliseconds(500));
  // Half a second later the borrowed token is still 0.5 s away, so the next is 1.5 s away.
  EXPECT_EQ(bucket.reserve(), milliseconds(1500));
}

TEST(TokenBucketTest, TryReserveRefusesATokenDueAfterTheDeadlineAndTakesNothing) {
  FakeClock clock;
  TokenBucket bucket(10.0, 1, clock);
  EXPECT_EQ(bucket.try_reserve(milliseconds(250), 100), nanoseconds::zero());
  EXPECT_EQ(bucket.try_reserve(milliseconds(250), 100), milliseconds(100));
  EXPECT_EQ(bucket.try_reserve(milliseconds(250), 100), milliseconds(200));
  // The next would be due in 300 ms: refused, and the refusal borrowed nothing.
  EXPECT_EQ(bucket.try_reserve(milliseconds(250), 100), std::nullopt);
  EXPECT_EQ(bucket.waiting(), 2);
  clock.advance(milliseconds(100));
  EXPECT_EQ(bucket.waiting(), 1);
  EXPECT_EQ(bucket.try_reserve(milliseconds(250), 100), milliseconds(200));
}

TEST(TokenBucketTest, TryReserveRefusesBeyondTheBoundOnWaiters) {
  FakeClock clock;
  TokenBucket bucket(100.0, 2, clock);
  EXPECT_EQ(bucket.try_reserve(std::chrono::seconds(10), 2), nanoseconds::zero());
  EXPECT_EQ(bucket.try_reserve(std::chrono::seconds(10), 2), nanoseconds::zero());
  EXPECT_EQ(bucket.try_reserve(std::chrono::seconds(10), 2), milliseconds(10));
  EXPECT_EQ(bucket.try_reserve(std::chrono::seconds(10), 2), milliseconds(20));
  // Two wait already; the deadline would allow a third, the bound does not.
  EXPECT_EQ(bucket.try_reserve(std::chrono::seconds(10), 2), std::nullopt);
  // Once the first borrowed token is due, one place is free again.
  clock.advance(milliseconds(10));
  EXPECT_EQ(bucket.try_reserve(std::chrono::seconds(10), 2), milliseconds(20));
  EXPECT_EQ(bucket.try_reserve(std::chrono::seconds(10), 2), std::nullopt);
}

TEST(TokenBucketTest, TryReserveAlwaysGrantsATokenThatIsThere) {
  FakeClock clock;
  TokenBucket bucket(1.0, 3, clock);
  // Neither bound applies to a token that needs no wait.
  EXPECT_EQ(bucket.try_reserve(nanoseconds::zero(), 0), nanoseconds::zero());
  EXPECT_EQ(bucket.try_reserve(nanoseconds::zero(), 0), nanoseconds::zero());
  EXPECT_EQ(bucket.try_reserve(nanoseconds::zero(), 0), nanoseconds::zero());
  EXPECT_EQ(bucket.try_reserve(nanoseconds::zero(), 0), std::nullopt);
  EXPECT_EQ(bucket.waiting(), 0);
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(bucket.try_reserve(nanoseconds::zero(), 0), nanoseconds::zero());
}

TEST(TokenBucketTest, WaitersAreCountedAsReserveBorrows) {
  FakeClock clock;
  TokenBucket bucket(4.0, 1, clock);
  EXPECT_EQ(bucket.reserve(), nanoseconds::zero());
  EXPECT_EQ(bucket.waiting(), 0);
  EXPECT_EQ(bucket.reserve(), milliseconds(250));
  EXPECT_EQ(bucket.reserve(), milliseconds(500));
  EXPECT_EQ(bucket.waiting(), 2);
  clock.advance(milliseconds(300));  // the first is due, the second 200 ms away
  EXPECT_EQ(bucket.waiting(), 1);
  clock.advance(milliseconds(200));
  EXPECT_EQ(bucket.waiting(), 0);
}

}  // namespace
}  // namespace nmo
