// ServerThrottle: how a Client slows down after the API server's Priority and Fairness (APF)
// answered 429 (docs/design.md §6, "Client lanes"). Without a client-side rate limit APF is the
// brake, so its answer must slow down more than the one request that got it: every request of
// the same class waits for the class's "not before" instant.
//
// On a 429 of a new wave (no other 429 of the class since the request was admitted), the class's
// consecutive count grows, and its not-before becomes
//   now + jitter_above(max(Retry-After, step), random)      in [d, 1.5 d)
// where step is ServerThrottleOptions::initial doubling per consecutive 429 up to `max`
// (base/backoff.h) and Retry-After is a floor that the jitter only ever lengthens. A 429 of the
// same wave (several requests were in flight when APF pushed back) only makes sure its own
// Retry-After is honoured: one burst of rejections is one step of backoff, not thirty. An answer
// that is not a throttle, to a request admitted after the latest 429, resets the backoff.
//
//   ServerThrottle throttle({.initial = 1s, .max = 30s});
//   wait until throttle.not_before(RequestClass::kWrite);
//   const ServerThrottle::Ticket ticket = throttle.admit(RequestClass::kWrite);
//   ... send ...
//   429: const ServerThrottle::Step step = throttle.throttled(ticket, retry_after);
//        if (step.to_log > 0) log it (at most one line per class per kThrottleLogInterval)
//   else: throttle.answered(ticket);
//
// Threading: every member may be called from any thread; the state is guarded by a mutex. The
// random source is called with that mutex held, so it need not be thread-safe itself.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "base/backoff.h"
#include "base/clock.h"

namespace nmo::kube {

/// The classes of requests that APF's answers slow down independently: reads (GET, list,
/// watch) and writes (create, update, patch, delete, eviction). kube-apiserver splits its own
/// limits the same way (--max-requests-inflight and --max-mutating-requests-inflight), and the
/// informers' lists and watches must keep the cache fresh while the writes back off.
enum class RequestClass { kRead, kWrite };

/// "read", "write".
[[nodiscard]] std::string_view to_string(RequestClass request_class) noexcept;

struct ServerThrottleOptions {
  /// The backoff step after the first 429 of a class; must be positive. 1 s: the Retry-After
  /// the client assumes when the answer has none.
  std::chrono::nanoseconds initial{std::chrono::seconds(1)};
  /// The largest step (before jitter); must be at least `initial`. 30 s: the client's cap on a
  /// Retry-After, and its default request timeout.
  std::chrono::nanoseconds max{std::chrono::seconds(30)};
};

/// At most one throttling log line per class in this interval; the next says how many 429s
/// came meanwhile.
inline constexpr std::chrono::seconds kThrottleLogInterval{10};

class ServerThrottle {
 public:
  /// What a request carries from the moment it is sent until its answer: which class, and which
  /// wave of that class's 429s it was sent in.
  struct Ticket {
    RequestClass request_class = RequestClass::kRead;
    std::uint64_t wave = 0;
  };

  /// What a 429 did to its class.
  struct Step {
    /// From now until the class's not-before instant.
    std::chrono::nanoseconds wait{0};
    /// The class's consecutive 429 waves, this one included.
    int consecutive = 0;
    /// When a log line is due: the 429s of the class since the previous line, this one
    /// included. 0: stay silent.
    int to_log = 0;
  };

  /// `options` must satisfy the rules on ServerThrottleOptions (NMO_CHECK). `random`: numbers in
  /// [0, 1) for the jitter; empty: a std::mt19937_64 of its own.
  explicit ServerThrottle(const ServerThrottleOptions& options, UniformRandom random = {},
                          const Clock& clock = system_clock());

  /// The instant before which no request of `request_class` should be sent (in the past when
  /// nothing throttles it).
  [[nodiscard]] Clock::time_point not_before(RequestClass request_class) const;

  /// The ticket of a request of `request_class` about to be sent.
  [[nodiscard]] Ticket admit(RequestClass request_class) const;

  /// The API server throttled the request of `ticket`, asking for `retry_after` (a floor).
  Step throttled(const Ticket& ticket, std::chrono::nanoseconds retry_after);

  /// The API server answered the request of `ticket` without throttling it.
  void answered(const Ticket& ticket);

  [[nodiscard]] const Clock& clock() const { return clock_; }

 private:
  struct ClassState {
    explicit ClassState(const BackoffOptions& options) : backoff(options) {}
    ExponentialBackoff backoff;  // un-jittered steps
    Clock::time_point not_before;
    int consecutive = 0;
    std::uint64_t wave = 0;  // 429 waves so far; a ticket of an older wave is stale
    int unlogged = 0;        // 429s since the last log line
    bool logged = false;     // whether a line was ever logged
    Clock::time_point logged_at;
  };

  [[nodiscard]] ClassState& state(RequestClass request_class) {
    return states_[static_cast<std::size_t>(request_class)];
  }
  [[nodiscard]] const ClassState& state(RequestClass request_class) const {
    return states_[static_cast<std::size_t>(request_class)];
  }

  const Clock& clock_;
  UniformRandom random_;
  mutable std::mutex mu_;
  std::array<ClassState, 2> states_;  // guarded by mu_; indexed by RequestClass
};

}  // namespace nmo::kube
