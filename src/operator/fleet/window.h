// When a MaintenancePlan may work (docs/design.md §10): weekly maintenance windows in the local
// time of an IANA time zone, minus blackout dates.
//
//   - The zone comes from the system's time-zone database (/usr/share/zoneinfo, Debian's tzdata,
//     read through Howard Hinnant's date library), never from a table of our own: offsets and
//     daylight-saving rules change by decree several times a year somewhere in the world, and
//     Debian's tzdata package in the image is what keeps up with them. (The library reads the
//     transitions the files list, not their rule for the years after: Debian's files list them
//     up to 2037, so daylight saving time ends there.)
//   - A window "Sat 22:00-06:00" opens every Saturday at 22:00 local time and closes on Sunday at
//     06:00 local time: the days list names the day a window STARTS; end <= start means the next
//     day, end == start a whole (local) day.
//   - A blackout date closes everything on that local date, from its midnight to the next: a
//     window running into it closes at its midnight, a window starting on it does not open at all.
//   - Daylight saving time: every local time of day maps to one instant. A time that does not
//     exist (the spring-forward gap) is the first instant after the gap: 02:30 on a day that skips
//     02:00-03:00 is 03:00. An ambiguous time (the fall-back hour, seen twice) is the earlier of
//     its two instants: 01:30 is 01:30 in summer time. So a window is an hour shorter or longer on
//     those nights, and one lying wholly inside a gap does not open that day.
//   - Instants are UTC (std::chrono::sys_seconds); the zone only turns them into local days and
//     times of day.
//
// Threading: Schedule is an immutable value (it points into the process-wide, never-freed
// time-zone database, which the date library loads once and guards itself); safe from any
// thread. compile() may read the disk: the database's list of zones the first time it runs, a
// zone's file the first time that zone is compiled; nothing else does.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

// The date library's zone type; only window.cc includes <date/tz.h> (and so needs the library's
// compile definitions, which come with the imported target date::date-tz).
namespace date {
class time_zone;
}  // namespace date

namespace nmo::op::fleet {

using Instant = std::chrono::sys_seconds;  // wall-clock, UTC

// The zone of a schedule whose spec names none.
inline constexpr std::string_view kDefaultTimeZone = "UTC";

// How far next_open() and closes_at() look ahead: a year of weekly windows with a margin for
// blackout dates around it. Beyond it a schedule counts as never opening (or never closing).
inline constexpr std::chrono::days kHorizon{400};

// One weekly window as written in the MaintenancePlan spec.
struct WindowSpec {
  std::vector<std::string> days;  // "Mon".."Sun" (case-sensitive, three letters); empty = every day
  std::string start;              // "HH:MM", 00:00..23:59, local time of the schedule's zone
  std::string end;                // "HH:MM"; end <= start means the window ends the next day
                                  // (22:00-06:00), end == start means 24 hours
};

struct ScheduleSpec {
  std::string time_zone;                    // IANA name, e.g. "Asia/Taipei"; empty = "UTC"
  std::vector<WindowSpec> windows;          // empty = always open (except blackout dates)
  std::vector<std::string> blackout_dates;  // "YYYY-MM-DD" local dates on which nothing is open
};

// A validated schedule. Cheap to copy; immutable; safe from any thread.
class Schedule {
 public:
  // Always open, in UTC: what compile() gives for an empty spec, without reading the time-zone
  // database (so that a struct holding a Schedule can be default-constructed).
  Schedule() = default;

  // Errors (ErrorCode::kInvalid), each naming the field from the spec root exactly like this:
  //   spec.timeZone: unknown time zone "Asia/Taipeii"
  //   spec.windows[0].days[1]: "Mo" is not a day of the week (Mon, Tue, Wed, Thu, Fri, Sat, Sun)
  //   spec.windows[0].start: "25:00" is not a time of day (HH:MM)
  //   spec.blackoutDates[2]: "2026-02-30" is not a date (YYYY-MM-DD)
  // ErrorCode::kInternal when the time-zone database itself cannot be read (no tzdata).
  [[nodiscard]] static Result<Schedule> compile(const ScheduleSpec& spec);

  // True when `t` is inside a window and its local date (in the zone) is not a blackout date.
  // A window starting on day D at start runs until end (on D, or D+1 when end <= start); the
  // days list names the day the window STARTS. A window that started before midnight of a
  // blackout date stops at that midnight; a window starting on a blackout date does not open.
  [[nodiscard]] bool open_at(Instant t) const;

  // The first instant >= t at which open_at() is true (t itself when open); std::nullopt when
  // nothing opens within kHorizon (e.g. every window day is a blackout date).
  [[nodiscard]] std::optional<Instant> next_open(Instant t) const;

  // While open at t: the first instant > t at which it is closed (window end, or the midnight
  // starting a blackout date; contiguous/overlapping windows merge). std::nullopt when not open
  // at t, or when it never closes within kHorizon (no windows, no blackouts: always open).
  [[nodiscard]] std::optional<Instant> closes_at(Instant t) const;

  // `t` as the admin reads it in the schedule's zone: "Sat 22:00 Asia/Taipei" (weekday, HH:MM,
  // zone name; "UTC" for the default zone).
  [[nodiscard]] std::string describe(Instant t) const;

  // The zone's IANA name as written in the spec; "UTC" when it named none.
  [[nodiscard]] const std::string& time_zone() const;
  [[nodiscard]] bool always_open() const;  // no windows and no blackout dates

 private:
  // A window in minutes after local midnight; end <= start ends the next day.
  struct Window {
    unsigned day_mask = 0;  // bit d for weekday d (0 = Sunday, as std::chrono::weekday counts)
    std::chrono::minutes start{0};
    std::chrono::minutes end{0};
  };
  // [begin, end) in UTC.
  struct Interval {
    Instant begin;
    Instant end;
  };

  // The open intervals, merged and sorted, of every window starting on a local day from the one
  // before `from` to the one after `to`: exact wherever they lie within [from, to].
  [[nodiscard]] std::vector<Interval> open_intervals(Instant from, Instant to) const;

  std::string name_{kDefaultTimeZone};
  // Owned by the date library's database; nullptr for a default-constructed Schedule (UTC).
  const date::time_zone* zone_ = nullptr;
  std::vector<Window> windows_;
  std::vector<std::chrono::days> blackouts_;  // local dates as days since 1970-01-01, sorted
};

}  // namespace nmo::op::fleet
