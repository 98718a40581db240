#include "operator/drain/status_coalescer.h"

#include <chrono>

#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using std::chrono::milliseconds;
using Kind = StatusWriteDecision::Kind;

TEST(StatusCoalescerTest, NothingChangedNoWrite) {
  const StatusCoalescer coalescer;
  const Clock::time_point now{};
  EXPECT_EQ(coalescer.decide("cr", false, false, now).kind, Kind::kSkip);
}

TEST(StatusCoalescerTest, FirstChangeIsWrittenAtOnce) {
  const StatusCoalescer coalescer;
  const Clock::time_point now = Clock::time_point{} + milliseconds{5000};
  EXPECT_EQ(coalescer.decide("cr", true, false, now),
            (StatusWriteDecision{.kind = Kind::kNow, .at = now}));
}

TEST(StatusCoalescerTest, AtMostOneWritePerSecond) {
  StatusCoalescer coalescer;
  const Clock::time_point t0 = Clock::time_point{} + milliseconds{10000};
  coalescer.record_write("cr", t0);
  EXPECT_EQ(coalescer.decide("cr", true, false, t0 + milliseconds{300}),
            (StatusWriteDecision{.kind = Kind::kLater, .at = t0 + milliseconds{1000}}));
  EXPECT_EQ(coalescer.decide("cr", true, false, t0 + milliseconds{1000}).kind, Kind::kNow);
  // Another CR is not held back.
  EXPECT_EQ(coalescer.decide("other", true, false, t0 + milliseconds{300}).kind, Kind::kNow);
  EXPECT_EQ(coalescer.last_write("cr"), t0);
  EXPECT_EQ(coalescer.last_write("other"), std::nullopt);
}

TEST(StatusCoalescerTest, PhaseChangeIsWrittenAtOnce) {
  StatusCoalescer coalescer;
  const Clock::time_point t0 = Clock::time_point{} + milliseconds{10000};
  coalescer.record_write("cr", t0);
  EXPECT_EQ(coalescer.decide("cr", true, true, t0 + milliseconds{10}),
            (StatusWriteDecision{.kind = Kind::kNow, .at = t0 + milliseconds{10}}));
}

TEST(StatusCoalescerTest, ForgetAndCustomInterval) {
  StatusCoalescer coalescer(milliseconds{250});
  const Clock::time_point t0 = Clock::time_point{} + milliseconds{10000};
  coalescer.record_write("cr", t0);
  EXPECT_EQ(coalescer.decide("cr", true, false, t0 + milliseconds{100}).at, t0 + milliseconds{250});
  coalescer.forget("cr");
  EXPECT_EQ(coalescer.decide("cr", true, false, t0 + milliseconds{100}).kind, Kind::kNow);
}

}  // namespace
}  // namespace nmo::op
