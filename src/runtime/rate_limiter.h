// RateLimiter: how long a work-queue key waits before it is retried (client-go's
// util/workqueue rate limiters). A controller calls WorkQueue::add_rate_limited(key) after a
// failed reconcile, which asks when(key); WorkQueue::forget(key) after a success clears the key's
// history.
//
//   ItemExponentialRateLimiter  per key: base * 2^failures, capped (5 ms .. 1000 s by default)
//   BucketRateLimiter           one token bucket for all keys (10 qps, burst 100 by default)
//   MaxOfRateLimiter            the longest delay any of its limiters asks for
//   default_controller_rate_limiter()  max(item exponential, bucket): controller-runtime's default
//
// Threading: every limiter here is thread-safe; when(), forget() and num_requeues() may be called
// from any thread at any time.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/token_bucket.h"

namespace nmo::runtime {

// Decides the retry delay of work-queue keys.
class RateLimiter {
 public:
  RateLimiter() = default;
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;
  virtual ~RateLimiter() = default;

  // How long `key` should wait before its next attempt. Counts as one more failure of `key` (and
  // reserves a token, for limiters that have them).
  [[nodiscard]] virtual std::chrono::nanoseconds when(const std::string& key) = 0;
  // Forgets the failures of `key`: its next when() starts from the beginning again.
  virtual void forget(const std::string& key) = 0;
  // How many times when(key) was called since the last forget(key).
  [[nodiscard]] virtual int num_requeues(const std::string& key) const = 0;
};

// client-go DefaultControllerRateLimiter: per-item exponential from 5 ms to 1000 s ...
inline constexpr std::chrono::nanoseconds kDefaultItemBaseDelay = std::chrono::milliseconds(5);
inline constexpr std::chrono::nanoseconds kDefaultItemMaxDelay = std::chrono::seconds(1000);
// ... and an overall token bucket of 10 qps with a burst of 100.
inline constexpr double kDefaultBucketQps = 10.0;
inline constexpr int kDefaultBucketBurst = 100;

// Per key: the n-th when(key) since forget(key) returns base * 2^(n-1), capped at max. Keys are
// independent.
class ItemExponentialRateLimiter final : public RateLimiter {
 public:
  // `base` must be positive and `max` at least `base` (checked: a violation aborts).
  explicit ItemExponentialRateLimiter(std::chrono::nanoseconds base = kDefaultItemBaseDelay,
                                      std::chrono::nanoseconds max = kDefaultItemMaxDelay);

  [[nodiscard]] std::chrono::nanoseconds when(const std::string& key) override;
  void forget(const std::string& key) override;
  [[nodiscard]] int num_requeues(const std::string& key) const override;

 private:
  const std::chrono::nanoseconds base_;
  const std::chrono::nanoseconds max_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, int> failures_;  // guarded by mutex_
};

// A token bucket shared by all keys (golang.org/x/time/rate semantics): it holds at most `burst`
// tokens, starts full and refills at `qps` tokens per second of `clock` time. when() takes a
// token, borrowing from the future when none is left, and returns how long until that token
// exists; later callers queue behind earlier reservations. The key is ignored, so forget() does
// nothing and num_requeues() is always 0.
class BucketRateLimiter final : public RateLimiter {
 public:
  // `qps` must be positive and `burst` at least 1 (checked). One token takes 1/qps seconds,
  // rounded to whole nanoseconds.
  explicit BucketRateLimiter(double qps = kDefaultBucketQps, int burst = kDefaultBucketBurst,
                             const Clock& clock = system_clock());

  [[nodiscard]] std::chrono::nanoseconds when(const std::string& key) override;
  void forget(const std::string& key) override;
  [[nodiscard]] int num_requeues(const std::string& key) const override;

 private:
  TokenBucket bucket_;
};

// Combines limiters: when() asks all of them (so each counts the failure or reserves its token)
// and returns the longest delay; num_requeues() is the largest count; forget() forgets in all.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  // `limiters` must not be empty and must not contain null (checked).
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);

  [[nodiscard]] std::chrono::nanoseconds when(const std::string& key) override;
  void forget(const std::string& key) override;
  [[nodiscard]] int num_requeues(const std::string& key) const override;

 private:
  const std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// controller-runtime's default: max(ItemExponentialRateLimiter(5 ms, 1000 s),
// BucketRateLimiter(10 qps, burst 100 on `clock`)).
[[nodiscard]] std::unique_ptr<RateLimiter> default_controller_rate_limiter(
    const Clock& clock = system_clock());

}  // namespace nmo::runtime
