#include "kube/client/server_throttle.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace nmo::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// The highest fraction a UniformRandom may return, for the top of the jitter.
constexpr double kTop = 0.999999;

// A random source that replays `values` in order, then repeats the last.
UniformRandom replay(std::vector<double> values) {
  return [values = std::move(values), index = std::size_t{0}]() mutable {
    return values.at(std::min(index++, values.size() - 1));
  };
}

class ServerThrottleTest : public ::testing::Test {
 protected:
  // A 429 for a request of `request_class` admitted now.
  ServerThrottle::Step throttle(ServerThrottle& throttle, RequestClass request_class,
                                nanoseconds retry_after) {
    return throttle.throttled(throttle.admit(request_class), retry_after);
  }

  FakeClock clock_;
};

TEST_F(ServerThrottleTest, RepeatedThrottlesGrowTheWaitWithinJitterBounds) {
  // One throttle draws at the bottom of the jitter, the other at its top.
  ServerThrottle low({.initial = seconds(1), .max = seconds(8)}, replay({0.0}), clock_);
  ServerThrottle high({.initial = seconds(1), .max = seconds(8)}, replay({kTop}), clock_);
  nanoseconds previous_high{0};
  for (const seconds step : {seconds(1), seconds(2), seconds(4), seconds(8), seconds(8)}) {
    const ServerThrottle::Step bottom = throttle(low, RequestClass::kWrite, seconds(0));
    const ServerThrottle::Step top = throttle(high, RequestClass::kWrite, seconds(0));
    EXPECT_EQ(bottom.wait, step);
    const nanoseconds half_again = nanoseconds(step) * 3 / 2;
    EXPECT_GT(top.wait, half_again - milliseconds(1));
    EXPECT_LT(top.wait, half_again);
    EXPECT_GE(top.wait, previous_high) << "the wait never shrinks while the 429s go on";
    previous_high = top.wait;
    EXPECT_EQ(low.not_before(RequestClass::kWrite), clock_.now() + bottom.wait);
    // The next 429 comes once the class may send again.
    clock_.advance(top.wait);
  }
  EXPECT_EQ(throttle(low, RequestClass::kWrite, seconds(0)).consecutive, 6);
}

TEST_F(ServerThrottleTest, ASuccessResetsTheBackoff) {
  ServerThrottle throttle_state({.initial = seconds(1), .max = seconds(30)}, replay({0.0}), clock_);
  EXPECT_EQ(throttle(throttle_state, RequestClass::kRead, seconds(0)).wait, seconds(1));
  clock_.advance(seconds(1));
  EXPECT_EQ(throttle(throttle_state, RequestClass::kRead, seconds(0)).wait, seconds(2));
  clock_.advance(seconds(2));
  throttle_state.answered(throttle_state.admit(RequestClass::kRead));
  const ServerThrottle::Step again = throttle(throttle_state, RequestClass::kRead, seconds(0));
  EXPECT_EQ(again.wait, seconds(1));
  EXPECT_EQ(again.consecutive, 1);
}

TEST_F(ServerThrottleTest, AnAnswerToARequestSentBeforeTheLatestThrottleResetsNothing) {
  ServerThrottle throttle_state({.initial = seconds(1), .max = seconds(30)}, replay({0.0}), clock_);
  const ServerThrottle::Ticket early = throttle_state.admit(RequestClass::kWrite);
  EXPECT_EQ(throttle(throttle_state, RequestClass::kWrite, seconds(0)).wait, seconds(1));
  throttle_state.answered(early);  // was in flight when APF pushed back
  clock_.advance(seconds(1));
  EXPECT_EQ(throttle(throttle_state, RequestClass::kWrite, seconds(0)).wait, seconds(2));
}

TEST_F(ServerThrottleTest, ThrottlesOfOneWaveAreOneStep) {
  ServerThrottle throttle_state({.initial = seconds(1), .max = seconds(30)}, replay({0.0}), clock_);
  std::vector<ServerThrottle::Ticket> in_flight;
  for (int i = 0; i < 32; ++i) in_flight.push_back(throttle_state.admit(RequestClass::kWrite));
  for (const ServerThrottle::Ticket& ticket : in_flight) {
    const ServerThrottle::Step step = throttle_state.throttled(ticket, seconds(0));
    EXPECT_EQ(step.consecutive, 1);
    EXPECT_EQ(step.wait, seconds(1));
  }
  // But a later Retry-After of the same wave is still honoured.
  EXPECT_EQ(throttle_state.throttled(in_flight.front(), seconds(5)).wait, seconds(5));
}

TEST_F(ServerThrottleTest, AnotherClassIsNotDelayed) {
  ServerThrottle throttle_state({.initial = seconds(1), .max = seconds(30)}, replay({0.5}), clock_);
  const Clock::time_point before = clock_.now();
  EXPECT_EQ(throttle(throttle_state, RequestClass::kWrite, seconds(3)).wait, milliseconds(3750));
  EXPECT_EQ(throttle_state.not_before(RequestClass::kWrite), before + milliseconds(3750));
  EXPECT_LE(throttle_state.not_before(RequestClass::kRead), clock_.now());
  // Nor does the other class's success reset this one.
  throttle_state.answered(throttle_state.admit(RequestClass::kRead));
  clock_.advance(milliseconds(3750));
  EXPECT_EQ(throttle(throttle_state, RequestClass::kWrite, seconds(0)).consecutive, 2);
}

TEST_F(ServerThrottleTest, RetryAfterIsAFloor) {
  ServerThrottle bottom({.initial = seconds(1), .max = seconds(30)}, replay({0.0}), clock_);
  ServerThrottle top({.initial = seconds(1), .max = seconds(30)}, replay({kTop}), clock_);
  EXPECT_EQ(throttle(bottom, RequestClass::kRead, seconds(10)).wait, seconds(10));
  const nanoseconds highest = throttle(top, RequestClass::kRead, seconds(10)).wait;
  EXPECT_GE(highest, seconds(10));
  EXPECT_LT(highest, seconds(15));
}

TEST_F(ServerThrottleTest, LogLinesAreRateLimitedPerClass) {
  ServerThrottle throttle_state({.initial = milliseconds(100), .max = seconds(1)}, replay({0.0}),
                                clock_);
  EXPECT_EQ(throttle(throttle_state, RequestClass::kWrite, seconds(0)).to_log, 1);
  int silent = 0;
  for (int i = 0; i < 50; ++i) {
    clock_.advance(milliseconds(100));
    silent += throttle(throttle_state, RequestClass::kWrite, seconds(0)).to_log == 0 ? 1 : 0;
  }
  EXPECT_EQ(silent, 50);  // 5 s: within kThrottleLogInterval
  EXPECT_EQ(throttle(throttle_state, RequestClass::kRead, seconds(0)).to_log, 1);
  clock_.advance(kThrottleLogInterval);
  EXPECT_EQ(throttle(throttle_state, RequestClass::kWrite, seconds(0)).to_log, 51);
}

}  // namespace
}  // namespace nmo::kube
