// StatusCoalescer: when to write a NodeMaintenance's status (docs/design.md §2.4: "coalesced to at
// most about one write per second per CR, and on every phase change"; §1.2: lastUpdate is the time
// of the last meaningful change, not bumped by no-op reconciles).
//
// The reconciler builds the status it wants, compares it with the last one it wrote (ignoring
// lastUpdate) and asks decide():
//   - nothing changed              -> kSkip: no write, lastUpdate untouched;
//   - the phase changed            -> kNow, whatever the last write's time;
//   - anything else changed        -> kNow when the last write was at least `min_interval` ago
//                                     (or there was none), else kLater with the time to come back;
//                                     the later write carries everything that changed meanwhile.
// After a successful write the reconciler calls record_write(), setting lastUpdate in that write.
//
// Times are base/clock.h steady time points (never the wall clock: a clock jump must not stall
// or flood status writes). Keys are whatever identifies a CR (its uid is best: a CR deleted and
// recreated under the same name starts afresh).
//
// Threading: not synchronised; use from the reconciler's strand only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.h"

namespace nmo::op {

// The default spacing of status writes per CR.
inline constexpr std::chrono::seconds kDefaultStatusWriteInterval{1};

struct StatusWriteDecision {
  enum class Kind {
    kSkip,   // nothing meaningful changed: do not write
    kNow,    // write now
    kLater,  // write at `at` (requeue the CR for then)
  };
  Kind kind = Kind::kSkip;
  Clock::time_point at{};  // kNow: now; kLater: when to write

  friend bool operator==(const StatusWriteDecision&, const StatusWriteDecision&) = default;
};

class StatusCoalescer {
 public:
  explicit StatusCoalescer(Clock::duration min_interval = kDefaultStatusWriteInterval);

  // The decision for CR `key` at `now`. `changed`: the desired status differs from the last
  // written one (lastUpdate aside). `phase_changed`: status.phase differs.
  [[nodiscard]] StatusWriteDecision decide(std::string_view key, bool changed, bool phase_changed,
                                           Clock::time_point now) const;

  // Records that CR `key`'s status was written at `now`.
  void record_write(std::string_view key, Clock::time_point now);

  // Forgets CR `key` (deleted).
  void forget(std::string_view key);

  // The time of CR `key`'s last recorded write, if any.
  [[nodiscard]] std::optional<Clock::time_point> last_write(std::string_view key) const;

 private:
  Clock::duration min_interval_;
  std::unordered_map<std::string, Clock::time_point> last_write_;
};

}  // namespace nmo::op
