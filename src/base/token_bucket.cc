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

std::optional<std::chrono::nanoseconds> TokenBucket::try_reserve(std::chrono::nanoseconds max_wait,
                                                                 int max_waiters) {
  const Clock::time_point now = clock_.now();
  const std::lock_guard lock(mu_);
  const Clock::time_point due = std::max(empty_at_, now - capacity_) + interval_;
  const std::chrono::nanoseconds wait = std::max(std::chrono::nanoseconds(0), due - now);
  if (wait > std::chrono::nanoseconds(0) && (wait > max_wait || waiting_at(now) >= max_waiters)) {
    return std::nullopt;
  }
  empty_at_ = due;
  return wait;
}

int TokenBucket::waiting() const {
  const Clock::time_point now = clock_.now();
  const std::lock_guard lock(mu_);
  return waiting_at(now);
}

int TokenBucket::waiting_at(Clock::time_point now) const {
  // Each waiting reservation is due one interval after the one before it, the last at empty_at_.
  const std::chrono::nanoseconds debt = empty_at_ - now;
  if (debt <= std::chrono::nanoseconds(0)) return 0;
  return static_cast<int>((debt + interval_ - std::chrono::nanoseconds(1)) / interval_);
}

}  // namespace nmo
