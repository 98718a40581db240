#include "base/jitter.h"

#include <cstdint>
#include <random>
#include <string>

#include "base/check.h"

namespace nmo {
namespace {

// 53 random bits scaled into [0, 1): exact, and unlike std::generate_canonical never 1.0.
double to_unit_interval(std::uint64_t bits) {
  constexpr double kTwoToMinus53 = 1.0 / static_cast<double>(std::uint64_t{1} << 53);
  return static_cast<double>(bits >> 11) * kTwoToMinus53;
}

}  // namespace

std::chrono::nanoseconds jitter_above(std::chrono::nanoseconds floor, double fraction) {
  NMO_CHECK(fraction >= 0.0 && fraction < 1.0,
            "jitter_above: fraction " + std::to_string(fraction) + " is outside [0, 1)");
  if (floor.count() <= 0) return std::chrono::nanoseconds::zero();
  // Half of the floor at most, computed in floating point: floor / 2 * fraction cannot overflow.
  const double extra = static_cast<double>(floor.count()) / 2.0 * fraction;
  return floor + std::chrono::nanoseconds(static_cast<std::int64_t>(extra));
}

UniformRandom make_uniform_random() {
  return [engine = std::mt19937_64(std::random_device{}())]() mutable {
    return to_unit_interval(engine());
  };
}

double uniform_random() {
  thread_local std::mt19937_64 engine(std::random_device{}());
  return to_unit_interval(engine());
}

}  // namespace nmo
