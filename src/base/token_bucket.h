// TokenBucket: the classic rate limiter (client-go's flowcontrol token bucket, the shape of
// golang.org/x/time/rate): `burst` tokens, refilled at `qps` tokens per second of a monotonic
// Clock, starting full. reserve() takes one token, borrowing from the future when none is left,
// and says how long the caller must wait before using it, so waiting callers are served in the
// order they reserved. try_reserve() is the bounded form: it refuses, taking nothing, when the
// token would not be due within a deadline or too many callers already wait for borrowed tokens
// (docs/reliability.md, "Hostile clients"), so the debt and the queue behind it stay bounded.
//
// Threading: reserve() may be called from any thread; the bucket guards itself with a mutex.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>

#include "base/clock.h"

namespace nmo {

class TokenBucket {
 public:
  // `qps` must be > 0 and `burst` >= 1 (NMO_CHECK): a bucket that never refills is a bug.
  TokenBucket(double qps, int burst, const Clock& clock = system_clock());

  // Takes a token; returns zero when one was available, otherwise the time until the borrowed
  // token becomes due.
  [[nodiscard]] std::chrono::nanoseconds reserve();

  // Takes a token when it is available now, or when it becomes due within `max_wait` and fewer
  // than `max_waiters` earlier reservations are still waiting for theirs; returns the wait as
  // reserve() does. Otherwise takes nothing and returns std::nullopt: the caller fails fast.
  [[nodiscard]] std::optional<std::chrono::nanoseconds> try_reserve(
      std::chrono::nanoseconds max_wait, int max_waiters);

  // How many reservations made so far are not due yet (callers waiting for borrowed tokens).
  [[nodiscard]] int waiting() const;

  /// The time it takes to make one token (1 / qps, at least 1 ns).
  [[nodiscard]] std::chrono::nanoseconds interval() const { return interval_; }

 private:
  const Clock& clock_;
  const std::chrono::nanoseconds interval_;  // time to make one token
  const std::chrono::nanoseconds capacity_;  // time to fill an empty bucket: burst * interval_
  mutable std::mutex mu_;
  // When the bucket is (or was, or will be after the reservations made so far) empty. At time t
  // it holds min(burst, (t - empty_at_) / interval_) tokens, negative while reservations wait.
  // Whole nanoseconds keep every delay exact.
  Clock::time_point empty_at_;  // guarded by mu_

  // Callers waiting at `now`, with mu_ held.
  [[nodiscard]] int waiting_at(Clock::time_point now) const;
};

}  // namespace nmo
