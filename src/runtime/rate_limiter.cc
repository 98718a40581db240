#include "runtime/rate_limiter.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <utility>

#include "base/check.h"

namespace nmo::runtime {

ItemExponentialRateLimiter::ItemExponentialRateLimiter(std::chrono::nanoseconds base,
                                                       std::chrono::nanoseconds max)
    : base_(base), max_(max) {
  NMO_CHECK(base_.count() > 0, "ItemExponentialRateLimiter: base must be positive");
  NMO_CHECK(max_ >= base_, "ItemExponentialRateLimiter: max is below base");
}

std::chrono::nanoseconds ItemExponentialRateLimiter::when(const std::string& key) {
  int exponent = 0;
  {
    const std::lock_guard lock(mutex_);
    int& failures = failures_[key];
    exponent = failures;
    if (failures < INT_MAX) {
      ++failures;
    }
  }
  // base << exponent <= max exactly when base <= max >> exponent; checking that way round keeps
  // every intermediate value in range.
  if (exponent < 63 && base_.count() <= (max_.count() >> exponent)) {
    return std::chrono::nanoseconds(base_.count() << exponent);
  }
  return max_;
}

void ItemExponentialRateLimiter::forget(const std::string& key) {
  const std::lock_guard lock(mutex_);
  failures_.erase(key);
}

int ItemExponentialRateLimiter::num_requeues(const std::string& key) const {
  const std::lock_guard lock(mutex_);
  const auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, const Clock& clock)
    : bucket_(qps, burst, clock) {}

std::chrono::nanoseconds BucketRateLimiter::when(const std::string& /*key*/) {
  return bucket_.reserve();
}

void BucketRateLimiter::forget(const std::string& /*key*/) {}

int BucketRateLimiter::num_requeues(const std::string& /*key*/) const { return 0; }

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {
  NMO_CHECK(!limiters_.empty(), "MaxOfRateLimiter needs at least one limiter");
  for (const std::unique_ptr<RateLimiter>& limiter : limiters_) {
    NMO_CHECK(limiter != nullptr, "MaxOfRateLimiter: null limiter");
  }
}

std::chrono::nanoseconds MaxOfRateLimiter::when(const std::string& key) {
  std::chrono::nanoseconds longest(0);
  for (const std::unique_ptr<RateLimiter>& limiter : limiters_) {
    longest = std::max(longest, limiter->when(key));
  }
  return longest;
}

void MaxOfRateLimiter::forget(const std::string& key) {
  for (const std::unique_ptr<RateLimiter>& limiter : limiters_) {
    limiter->forget(key);
  }
}

int MaxOfRateLimiter::num_requeues(const std::string& key) const {
  int most = 0;
  for (const std::unique_ptr<RateLimiter>& limiter : limiters_) {
    most = std::max(most, limiter->num_requeues(key));
  }
  return most;
}

std::unique_ptr<RateLimiter> default_controller_rate_limiter(const Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialRateLimiter>());
  limiters.push_back(
      std::make_unique<BucketRateLimiter>(kDefaultBucketQps, kDefaultBucketBurst, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace nmo::runtime
