#include "base/backoff.h"

#include <cstdint>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/jitter.h"

namespace nmo {

ExponentialBackoff::ExponentialBackoff(const BackoffOptions& options, UniformRandom random)
    : options_(options), random_(std::move(random)), step_(options.initial) {
  NMO_CHECK(options_.initial.count() > 0, "ExponentialBackoff: initial must be positive, got " +
                                              std::to_string(options_.initial.count()) + " ns");
  NMO_CHECK(options_.max >= options_.initial,
            "ExponentialBackoff: max (" + std::to_string(options_.max.count()) +
                " ns) is below initial (" + std::to_string(options_.initial.count()) + " ns)");
  NMO_CHECK(options_.factor >= 1.0, "ExponentialBackoff: factor must be at least 1, got " +
                                        std::to_string(options_.factor));
  NMO_CHECK(options_.reset_after.count() >= 0, "ExponentialBackoff: reset_after is negative");
  if (options_.full_jitter && !random_) {
    random_ = make_uniform_random();
  }
}

std::chrono::nanoseconds ExponentialBackoff::next() {
  const std::chrono::nanoseconds step = step_;
  // Grow in floating point and compare before converting back, so a large factor or many steps
  // saturate at max instead of overflowing.
  const double grown = static_cast<double>(step_.count()) * options_.factor;
  step_ = grown >= static_cast<double>(options_.max.count())
              ? options_.max
              : std::chrono::nanoseconds(static_cast<std::int64_t>(grown));
  if (!options_.full_jitter) {
    return step;
  }
  const double fraction = random_();
  NMO_CHECK(fraction >= 0.0 && fraction < 1.0, "ExponentialBackoff: random source returned " +
                                                   std::to_string(fraction) + ", outside [0, 1)");
  return std::chrono::nanoseconds(
      static_cast<std::int64_t>(static_cast<double>(step.count()) * fraction));
}

void ExponentialBackoff::reset() { step_ = options_.initial; }

bool ExponentialBackoff::reset_after_healthy(std::chrono::nanoseconds ran_for) {
  if (options_.reset_after.count() == 0 || ran_for < options_.reset_after) {
    return false;
  }
  reset();
  return true;
}

}  // namespace nmo
