#include "base/token_bucket.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/check.h"

namespace nmo {
namespace {

std::chrono::nanoseconds token_interval(double qps) {
  NMO_CHECK(qps > 0.0, "TokenBucket: qps must be positive");
  // At least one nanosecond, so a huge qps still makes time pass between tokens.
  const double nanos = std::round(1e9 / qps);
  return std::chrono::nanoseconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(nanos)));
}

}  // namespace

TokenBucket::TokenBucket(double qps, int burst, const Clock& clock)
    : clock_(clock), interval_(token_interval(qps)), capacity_(interval_ * burst) {
  NMO_CHECK(burst >= 1, "TokenBucket: burst must be at least 1");
  empty_at_ = clock_.now() - capacity_;  // starts full
}

std::chrono::nanoseconds TokenBucket::reserve() {
  const Clock::time_point now = clock_.now();
  const std::lock_guard lock(mu_);
  // Tokens beyond the burst are lost: the bucket cannot have been empty longer ago than it takes
  // to fill it.
  empty_at_ = std::max(empty_at_, now - capacity_) + interval_;
  return std::max(std::chrono::nanoseconds(0), empty_at_ - now);
}

}  // namespace nmo
