// Clock: the monotonic time source of everything that measures intervals (backoff, rate limits,
// work queue delays, lease renewal deadlines), behind an interface so tests can drive time.
//
// Only std::chrono::steady_clock time points exist here: a wall clock can jump (NTP, manual
// changes, leap smearing), and a jump must never shorten a backoff or let a leader keep a lease it
// has lost. Wall-clock timestamps that go on the wire (Lease renewTime, Event times) are a
// separate concern and do not use this interface.
//
// Threading: system_clock() and every FakeClock method may be called from any thread at any time.
#pragma once

#include <atomic>
#include <chrono>

namespace nmo {

// A monotonic clock: now() never goes backwards.
class Clock {
 public:
  // The member names of a std::chrono clock, so code written for one reads the same here.
  // NOLINTBEGIN(readability-identifier-naming)
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;
  // NOLINTEND(readability-identifier-naming)

  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  virtual ~Clock() = default;

  // The current time.
  [[nodiscard]] virtual time_point now() const = 0;
};

// The process-wide std::chrono::steady_clock. The object lives for the whole program.
Clock& system_clock();

// A clock that moves only when told to, for tests. Starts at `start` (the steady_clock epoch by
// default). Moving it backwards breaks the Clock contract and aborts (NMO_CHECK).
class FakeClock final : public Clock {
 public:
  explicit FakeClock(time_point start = time_point{});

  [[nodiscard]] time_point now() const override;

  // Jumps to `time`, which must not be earlier than now().
  void set(time_point time);

  // Moves forward by `delta`, which must not be negative.
  void advance(duration delta);

 private:
  std::atomic<duration::rep> now_;  // ticks since the steady_clock epoch
};

}  // namespace nmo
