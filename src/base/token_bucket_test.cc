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

}  // namespace
}  // namespace nmo
