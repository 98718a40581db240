// Jitter: spreading a delay so that callers that failed together do not retry together.
//
// ExponentialBackoff's full jitter draws a delay from [0, d): right for a delay of our own choice,
// wrong when d is a floor someone else set (an API server's Retry-After). jitter_above() keeps the
// floor and spreads above it:
//
//   const auto wait = jitter_above(std::max(retry_after, backoff_step), random());
//   // in [d, 1.5 d): never earlier than asked, and 32 callers throttled together spread out
//
// Threading: jitter_above() is a pure function; uniform_random() may be called from any thread
// (each thread draws from its own engine); a UniformRandom from make_uniform_random() is a plain
// value, one thread at a time.
#pragma once

#include <chrono>

#include "base/backoff.h"

namespace nmo {

// `floor` stretched by up to half again: floor + floor * fraction / 2, so in [floor, 1.5 floor)
// for `fraction` in [0, 1) (a fraction outside it aborts: NMO_CHECK). A negative floor counts as
// zero.
[[nodiscard]] std::chrono::nanoseconds jitter_above(std::chrono::nanoseconds floor,
                                                    double fraction);

// A new source of uniform numbers in [0, 1): a std::mt19937_64 seeded from std::random_device.
[[nodiscard]] UniformRandom make_uniform_random();

// A number drawn uniformly from [0, 1) by this thread's own engine (seeded as above), for code
// that was given no UniformRandom, such as a default argument.
[[nodiscard]] double uniform_random();

}  // namespace nmo
