// ExponentialBackoff: how long to wait before retrying an operation that keeps failing.
//
// Pure arithmetic: it never reads a clock and never sleeps. The caller measures time with a Clock
// (base/clock.h), asks next() for the delay after each failure and waits on its own timer. The
// reflector's policy, taken from kube-rs's default watcher backoff, reads:
//
//   ExponentialBackoff backoff({.initial = 800ms, .max = 30s, .full_jitter = true,
//                               .reset_after = 120s});
//   // watch failed after running for `ran_for`:
//   backoff.reset_after_healthy(ran_for);   // a 2-minute healthy run forgets earlier failures
//   wait(backoff.next());                   // uniform in [0, 0.8 s), then [0, 1.6 s), ... [0, 30
//   s)
//
// Threading: a plain value type. One object must not be used from two threads at once; give
// each retry loop its own.
#pragma once

#include <chrono>
#include <functional>

namespace nmo {

// A source of uniformly distributed numbers in [0, 1). Tests inject a fixed one.
using UniformRandom = std::function<double()>;

// What an ExponentialBackoff does. The delays before jitter are initial, initial * factor,
// initial * factor^2, ..., capped at max.
struct BackoffOptions {
  // The first delay; must be positive.
  std::chrono::nanoseconds initial{0};
  // The largest delay; must be at least `initial`.
  std::chrono::nanoseconds max{0};
  // Growth per failure; must be at least 1.
  double factor = 2.0;
  // "Full jitter": each delay is drawn uniformly from [0, d) instead of being d itself, so
  // clients that failed together do not retry together.
  bool full_jitter = false;
  // reset_after_healthy(ran_for) starts over from `initial` when ran_for is at least this long.
  // Zero means "never": only reset() starts over.
  std::chrono::nanoseconds reset_after{0};
};

// The delay before each retry of an operation that keeps failing.
class ExponentialBackoff {
 public:
  // `options` must satisfy the rules on BackoffOptions (checked: a violation aborts). `random` is
  // used only with full jitter; when empty, a std::mt19937_64 seeded from std::random_device.
  explicit ExponentialBackoff(const BackoffOptions& options, UniformRandom random = {});

  // The delay before the next retry: the current step (with jitter applied when enabled). Each
  // call moves one step up, until the cap. With full jitter the delay is
  // floor(step * random()) nanoseconds; a random() outside [0, 1) aborts.
  [[nodiscard]] std::chrono::nanoseconds next();

  // Starts over: the next delay is based on `initial` again. Call after a success that proves
  // the failure is over (for example a relist that completed).
  void reset();

  // Call when an operation that had been running stops with a failure; `ran_for` is how long it
  // ran. When options.reset_after is non-zero and ran_for >= reset_after, the earlier failures are
  // forgotten (as reset()) and this returns true; otherwise nothing changes and it returns false.
  // A watch that was healthy for two minutes then breaks retries after ~initial, not after 30 s.
  bool reset_after_healthy(std::chrono::nanoseconds ran_for);

 private:
  BackoffOptions options_;
  UniformRandom random_;
  std::chrono::nanoseconds step_;  // the un-jittered delay next() returns
};

}  // namespace nmo
