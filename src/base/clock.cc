#include "base/clock.h"

#include <string>
#include <type_traits>

#include "base/check.h"

namespace nmo {
namespace {

// The messages below print ticks as nanoseconds.
static_assert(std::is_same_v<Clock::duration, std::chrono::nanoseconds>);

class SteadyClock final : public Clock {
 public:
  [[nodiscard]] time_point now() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace

Clock& system_clock() {
  static SteadyClock clock;
  return clock;
}

FakeClock::FakeClock(time_point start) : now_(start.time_since_epoch().count()) {}

Clock::time_point FakeClock::now() const {
  return time_point(duration(now_.load(std::memory_order_acquire)));
}

void FakeClock::set(time_point time) {
  const duration::rep target = time.time_since_epoch().count();
  duration::rep current = now_.load(std::memory_order_acquire);
  do {
    NMO_CHECK(target >= current, "FakeClock::set would move time backwards by " +
                                     std::to_string(current - target) + " ns");
  } while (!now_.compare_exchange_weak(current, target, std::memory_order_acq_rel));
}

void FakeClock::advance(duration delta) {
  NMO_CHECK(delta.count() >= 0,
            "FakeClock::advance by a negative duration: " + std::to_string(delta.count()) + " ns");
  now_.fetch_add(delta.count(), std::memory_order_acq_rel);
}

}  // namespace nmo
