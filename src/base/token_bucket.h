// TokenBucket: the classic rate limiter (client-go's flowcontrol token bucket, the shape of
// golang.org/x/time/rate): `burst` tokens, refilled at `qps` tokens per second of a monotonic
// Clock, starting full. reserve() takes one token, borrowing from the future when none is left,
// and says how long the caller must wait before using it, so waiting callers are served in the
// order they reserved.
//
// Threading: reserve() may be called from any thread; the bucket guards itself with a mutex.
#pragma once

#include <chrono>
#include <mutex>

#include "base/clock.h"

namespace nmo {

class TokenBucket {
 public:
  // `qps` must be > 0 and `burst` >= 1 (NMO_CHECK): a bucket that never refills is a bug.
  TokenBucket(double qps, int burst, const Clock& clock = system_clock());

  // Takes a token; returns zero when one was available, otherwise the time until the borrowed
  // token becomes due.
  [[nodiscard]] std::chrono::nanoseconds reserve();

  /// The time it takes to make one token (1 / qps, at least 1 ns).
  [[nodiscard]] std::chrono::nanoseconds interval() const { return interval_; }

 private:
  const Clock& clock_;
  const std::chrono::nanoseconds interval_;  // time to make one token
  const std::chrono::nanoseconds capacity_;  // time to fill an empty bucket: burst * interval_
  std::mutex mu_;
  // When the bucket is (or was, or will be after the reservations made so far) empty. At time t
  // it holds min(burst, (t - empty_at_) / interval_) tokens, negative while reservations wait.
  // Whole nanoseconds keep every delay exact.
  Clock::time_point empty_at_;  // guarded by mu_
};

}  // namespace nmo
