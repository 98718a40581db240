#include "kube/client/server_throttle.h"

#include <algorithm>
#include <utility>

#include "base/jitter.h"

namespace nmo::kube {
namespace {

BackoffOptions backoff_options(const ServerThrottleOptions& options) {
  return {.initial = options.initial, .max = options.max};
}

}  // namespace

std::string_view to_string(RequestClass request_class) noexcept {
  switch (request_class) {
    case RequestClass::kRead:
      return "read";
    case RequestClass::kWrite:
      return "write";
  }
  return "write";
}

ServerThrottle::ServerThrottle(const ServerThrottleOptions& options, UniformRandom random,
                               const Clock& clock)
    : clock_(clock),
      random_(random ? std::move(random) : make_uniform_random()),
      states_{ClassState(backoff_options(options)), ClassState(backoff_options(options))} {}

Clock::time_point ServerThrottle::not_before(RequestClass request_class) const {
  const std::lock_guard lock(mu_);
  return state(request_class).not_before;
}

ServerThrottle::Ticket ServerThrottle::admit(RequestClass request_class) const {
  const std::lock_guard lock(mu_);
  return {.request_class = request_class, .wave = state(request_class).wave};
}

ServerThrottle::Step ServerThrottle::throttled(const Ticket& ticket,
                                               std::chrono::nanoseconds retry_after) {
  const Clock::time_point now = clock_.now();
  const std::lock_guard lock(mu_);
  ClassState& s = state(ticket.request_class);
  std::chrono::nanoseconds wait = std::max(retry_after, std::chrono::nanoseconds::zero());
  if (ticket.wave == s.wave) {
    // The first 429 since this request was admitted: a new wave, one step further.
    ++s.wave;
    ++s.consecutive;
    wait = jitter_above(std::max(wait, s.backoff.next()), random_());
  }
  s.not_before = std::max(s.not_before, now + wait);
  ++s.unlogged;
  Step step{.wait = s.not_before - now, .consecutive = s.consecutive};
  if (!s.logged || now - s.logged_at >= kThrottleLogInterval) {
    step.to_log = std::exchange(s.unlogged, 0);
    s.logged = true;
    s.logged_at = now;
  }
  return step;
}

void ServerThrottle::answered(const Ticket& ticket) {
  const std::lock_guard lock(mu_);
  ClassState& s = state(ticket.request_class);
  // A request sent before the latest 429 says nothing about whether the throttling is over.
  if (ticket.wave != s.wave || s.consecutive == 0) return;
  s.consecutive = 0;
  s.backoff.reset();
}

}  // namespace nmo::kube
