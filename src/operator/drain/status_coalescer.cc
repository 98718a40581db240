#include "operator/drain/status_coalescer.h"

#include <algorithm>

namespace nmo::op {

StatusCoalescer::StatusCoalescer(Clock::duration min_interval)
    : min_interval_(std::max(min_interval, Clock::duration::zero())) {}

StatusWriteDecision StatusCoalescer::decide(std::string_view key, bool changed, bool phase_changed,
                                            Clock::time_point now) const {
  using Kind = StatusWriteDecision::Kind;
  if (!changed && !phase_changed) return {.kind = Kind::kSkip, .at = {}};
  if (phase_changed) return {.kind = Kind::kNow, .at = now};
  const std::optional<Clock::time_point> last = last_write(key);
  if (!last || now - *last >= min_interval_) return {.kind = Kind::kNow, .at = now};
  return {.kind = Kind::kLater, .at = *last + min_interval_};
}

void StatusCoalescer::record_write(std::string_view key, Clock::time_point now) {
  last_write_.insert_or_assign(std::string(key), now);
}

void StatusCoalescer::forget(std::string_view key) { last_write_.erase(std::string(key)); }

std::optional<Clock::time_point> StatusCoalescer::last_write(std::string_view key) const {
  const auto it = last_write_.find(std::string(key));
  if (it == last_write_.end()) return std::nullopt;
  return it->second;
}

}  // namespace nmo::op
