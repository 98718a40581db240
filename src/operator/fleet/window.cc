#include "operator/fleet/window.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <exception>
#include <utility>

#include <date/date.h>
#include <date/tz.h>

#include "base/error.h"
#include "base/strings.h"

namespace nmo::op::fleet {

namespace {

// date::days (int-based) rather than std::chrono::days, so that day arithmetic stays in the
// date library's own local_days, which its weekday and year_month_day take.
using date::days;
using std::chrono::minutes;

// Indexed by std::chrono::weekday's c_encoding() (0 = Sunday), as date::weekday counts too.
constexpr std::array<std::string_view, 7> kDayNames = {"Sun", "Mon", "Tue", "Wed",
                                                       "Thu", "Fri", "Sat"};
constexpr std::string_view kDayList = "(Mon, Tue, Wed, Thu, Fri, Sat, Sun)";

// Longer than any IANA zone name (the longest, America/Argentina/ComodRivadavia, has 32
// characters), short enough that a hostile spec cannot flood an Event with its value.
constexpr std::size_t kMaxQuoted = 64;

// Debian's /usr/share/zoneinfo also holds "localtime", a link to the host's /etc/localtime,
// which the library lists as a zone: not an IANA name, and a schedule must not depend on the image
// the operator runs in.
constexpr std::string_view kHostZone = "localtime";

Error invalid(const std::string& field, const std::string& message) {
  return {ErrorCode::kInvalid, field + ": " + message};
}

// The value of two ASCII digits, or -1.
int two_digits(std::string_view text) {
  if (text.size() != 2 || text[0] < '0' || text[0] > '9' || text[1] < '0' || text[1] > '9') {
    return -1;
  }
  return (text[0] - '0') * 10 + (text[1] - '0');
}

// "HH:MM", 00:00..23:59, as minutes after midnight.
std::optional<minutes> parse_time_of_day(std::string_view text) {
  if (text.size() != 5 || text[2] != ':') return std::nullopt;
  const int hours = two_digits(text.substr(0, 2));
  const int mins = two_digits(text.substr(3, 2));
  if (hours < 0 || hours > 23 || mins < 0 || mins > 59) return std::nullopt;
  return minutes(hours * 60 + mins);
}

// "YYYY-MM-DD", a day of the proleptic Gregorian calendar.
std::optional<date::local_days> parse_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  const int century = two_digits(text.substr(0, 2));
  const int year_in_century = two_digits(text.substr(2, 2));
  const int month = two_digits(text.substr(5, 2));
  const int day = two_digits(text.substr(8, 2));
  if (century < 0 || year_in_century < 0 || month < 0 || day < 0) return std::nullopt;
  const date::year_month_day ymd{date::year(century * 100 + year_in_century),
                                 date::month(static_cast<unsigned>(month)),
                                 date::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) return std::nullopt;
  return date::local_days(ymd);
}

Result<unsigned> parse_days(const std::vector<std::string>& names, const std::string& field) {
  // No days listed: every day.
  if (names.empty()) return (1U << kDayNames.size()) - 1;
  unsigned mask = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto found = std::find(kDayNames.begin(), kDayNames.end(), names[i]);
    if (found == kDayNames.end()) {
      return invalid(
          field + "[" + std::to_string(i) + "]",
          quoted(names[i], kMaxQuoted) + " is not a day of the week " + std::string(kDayList));
    }
    mask |= 1U << static_cast<unsigned>(found - kDayNames.begin());
  }
  return mask;
}

Result<minutes> parse_time_field(const std::string& text, const std::string& field) {
  std::optional<minutes> time = parse_time_of_day(text);
  if (!time) return invalid(field, quoted(text, kMaxQuoted) + " is not a time of day (HH:MM)");
  return *time;
}

// The zone named `name`. The date library reports both a missing database and an unknown name by
// throwing std::runtime_error; asking for the database first tells the two apart. The zone's
// transitions are loaded here, once (the library caches them), so that no later call reads the
// disk or throws.
Result<const date::time_zone*> find_zone(const std::string& name) {
  try {
    (void)date::get_tzdb();  // the database itself: the zone list, read at first use
  } catch (const std::exception& e) {
    return Error(ErrorCode::kInternal, std::string("the time-zone database cannot be read: ") +
                                           printable_prefix(e.what(), 200));
  }
  if (name == kHostZone)
    return invalid("spec.timeZone", "unknown time zone " + quoted(name, kMaxQuoted));
  const date::time_zone* zone = nullptr;
  try {
    zone = date::locate_zone(name);
  } catch (const std::exception&) {
    return invalid("spec.timeZone", "unknown time zone " + quoted(name, kMaxQuoted));
  }
  try {
    (void)zone->get_info(date::sys_seconds{});
  } catch (const std::exception& e) {
    return Error(ErrorCode::kInternal, "time zone " + quoted(name, kMaxQuoted) +
                                           " cannot be read: " + printable_prefix(e.what(), 200));
  }
  return zone;
}

// `t` on the clocks of `zone` (UTC when null).
date::local_seconds local_time_of(const date::time_zone* zone, Instant t) {
  if (zone == nullptr) return date::local_seconds(t.time_since_epoch());
  return zone->to_local(t);
}

// The instant a local time stands for in `zone` (UTC when null): the first after a
// spring-forward gap, the earlier of the two in a fall-back hour (see the header).
Instant instant_of(const date::time_zone* zone, date::local_seconds local) {
  if (zone == nullptr) return Instant(local.time_since_epoch());
  return zone->to_sys(local, date::choose::earliest);
}

}  // namespace

Result<Schedule> Schedule::compile(const ScheduleSpec& spec) {
  Schedule schedule;
  schedule.name_ = spec.time_zone.empty() ? std::string(kDefaultTimeZone) : spec.time_zone;
  NMO_TRY_ASSIGN(schedule.zone_, find_zone(schedule.name_));

  for (std::size_t i = 0; i < spec.windows.size(); ++i) {
    const WindowSpec& window = spec.windows[i];
    const std::string field = "spec.windows[" + std::to_string(i) + "]";
    Window compiled;
    NMO_TRY_ASSIGN(compiled.day_mask, parse_days(window.days, field + ".days"));
    NMO_TRY_ASSIGN(compiled.start, parse_time_field(window.start, field + ".start"));
    NMO_TRY_ASSIGN(compiled.end, parse_time_field(window.end, field + ".end"));
    schedule.windows_.push_back(compiled);
  }

  for (std::size_t i = 0; i < spec.blackout_dates.size(); ++i) {
    std::optional<date::local_days> day = parse_date(spec.blackout_dates[i]);
    if (!day) {
      return invalid("spec.blackoutDates[" + std::to_string(i) + "]",
                     quoted(spec.blackout_dates[i], kMaxQuoted) + " is not a date (YYYY-MM-DD)");
    }
    schedule.blackouts_.emplace_back(day->time_since_epoch());
  }
  std::sort(schedule.blackouts_.begin(), schedule.blackouts_.end());
  return schedule;
}

std::vector<Schedule::Interval> Schedule::open_intervals(Instant from, Instant to) const {
  const auto instant = [this](date::local_seconds local) { return instant_of(zone_, local); };
  const auto blacked_out = [this](date::local_days day) {
    return std::binary_search(blackouts_.begin(), blackouts_.end(), day.time_since_epoch());
  };

  // A window lasts at most a day, so one starting the local day before `from` may still be open
  // at `from`; the day after `to` keeps an interval running on past `to` from ending early.
  const auto first = date::floor<days>(local_time_of(zone_, from)) - days(1);
  const auto last = date::floor<days>(local_time_of(zone_, to)) + days(1);

  std::vector<Interval> intervals;
  for (date::local_days day = first; day <= last; day += days(1)) {
    if (blacked_out(day)) continue;  // nothing starts on a blackout date
    const date::local_days next = day + days(1);
    // A window running past midnight into a blackout date stops at that midnight.
    const Instant cut = blacked_out(next) ? instant(next) : Instant::max();
    if (windows_.empty()) {
      intervals.push_back({instant(day), instant(next)});
      continue;
    }
    const unsigned weekday = date::weekday(day).c_encoding();
    for (const Window& window : windows_) {
      if ((window.day_mask & (1U << weekday)) == 0) continue;
      const Instant begin = instant(day + window.start);
      const Instant end =
          std::min(instant((window.end <= window.start ? next : day) + window.end), cut);
      // Empty when the whole window lies in a spring-forward gap.
      if (begin < end) intervals.push_back({begin, end});
    }
  }

  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> merged;
  for (const Interval& interval : intervals) {
    if (!merged.empty() && interval.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, interval.end);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

bool Schedule::open_at(Instant t) const {
  const std::vector<Interval> intervals = open_intervals(t, t);
  return std::any_of(intervals.begin(), intervals.end(),
                     [t](const Interval& i) { return i.begin <= t && t < i.end; });
}

std::optional<Instant> Schedule::next_open(Instant t) const {
  const Instant horizon = t + kHorizon;
  for (const Interval& interval : open_intervals(t, horizon)) {
    if (interval.end <= t) continue;
    const Instant opens = std::max(interval.begin, t);
    if (opens > horizon) break;
    return opens;
  }
  return std::nullopt;
}

std::optional<Instant> Schedule::closes_at(Instant t) const {
  const Instant horizon = t + kHorizon;
  for (const Interval& interval : open_intervals(t, horizon)) {
    if (interval.begin <= t && t < interval.end) {
      // Intervals are exact up to the horizon only; one reaching past it may go on for ever.
      if (interval.end > horizon) return std::nullopt;
      return interval.end;
    }
  }
  return std::nullopt;
}

std::string Schedule::describe(Instant t) const {
  const date::local_seconds local = local_time_of(zone_, t);
  const date::local_days day = date::floor<days>(local);
  const date::hh_mm_ss<minutes> time(date::floor<minutes>(local - day));
  const auto two = [](long value) {
    return std::string(1, static_cast<char>('0' + value / 10)) +
           static_cast<char>('0' + value % 10);
  };
  return std::string(kDayNames[date::weekday(day).c_encoding()]) + " " + two(time.hours().count()) +
         ":" + two(time.minutes().count()) + " " + name_;
}

const std::string& Schedule::time_zone() const { return name_; }

bool Schedule::always_open() const { return windows_.empty() && blackouts_.empty(); }

}  // namespace nmo::op::fleet
