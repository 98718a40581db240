#include "base/jitter.h"

#include <chrono>
#include <set>

#include <gtest/gtest.h>

namespace nmo {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(JitterAboveTest, SpreadsOverHalfAgainAboveTheFloor) {
  EXPECT_EQ(jitter_above(seconds(2), 0.0), seconds(2));
  EXPECT_EQ(jitter_above(seconds(2), 0.5), milliseconds(2500));
  const nanoseconds top = jitter_above(seconds(2), 0.999999);
  EXPECT_GT(top, milliseconds(2999));
  EXPECT_LT(top, seconds(3));
  EXPECT_EQ(jitter_above(nanoseconds(0), 0.7), nanoseconds(0));
  EXPECT_EQ(jitter_above(seconds(-1), 0.7), nanoseconds(0));
  // The largest duration does not overflow.
  EXPECT_GE(jitter_above(nanoseconds::max() / 2, 0.9), nanoseconds::max() / 2);
}

TEST(JitterAboveTest, AFractionOutsideTheUnitIntervalAborts) {
  EXPECT_DEATH((void)jitter_above(seconds(1), 1.0), "outside \\[0, 1\\)");
  EXPECT_DEATH((void)jitter_above(seconds(1), -0.1), "outside \\[0, 1\\)");
}

TEST(UniformRandomTest, DrawsDifferentNumbersInTheUnitInterval) {
  UniformRandom own = make_uniform_random();
  std::set<double> drawn;
  for (int i = 0; i < 100; ++i) {
    for (const double value : {own(), uniform_random()}) {
      EXPECT_GE(value, 0.0);
      EXPECT_LT(value, 1.0);
      drawn.insert(value);
    }
  }
  EXPECT_GT(drawn.size(), 190U);
}

}  // namespace
}  // namespace nmo
