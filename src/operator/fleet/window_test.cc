#include "operator/fleet/window.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/testing/status_matchers.h"

namespace nmo::op::fleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// Expected instants are written in UTC with the standard library's calendar, not through the date
// library under test, and each test says what local time they are.
Instant utc(int year, unsigned month, unsigned day, int hour, int minute, int second = 0) {
  return Instant(std::chrono::sys_days(std::chrono::year(year) / std::chrono::month(month) /
                                       std::chrono::day(day))) +
         hours(hour) + minutes(minute) + seconds(second);
}

// "YYYY-MM-DD" of `day`.
std::string iso_date(std::chrono::sys_days day) {
  const std::chrono::year_month_day ymd(day);
  const auto two = [](unsigned value) {
    return std::string(value < 10 ? "0" : "") + std::to_string(value);
  };
  return std::to_string(static_cast<int>(ymd.year())) + "-" +
         two(static_cast<unsigned>(ymd.month())) + "-" + two(static_cast<unsigned>(ymd.day()));
}

Schedule compile_ok(const ScheduleSpec& spec) {
  Result<Schedule> schedule = Schedule::compile(spec);
  EXPECT_TRUE(schedule) << schedule.error().describe();
  return schedule ? std::move(schedule).value() : Schedule();
}

// Asia/Taipei is UTC+8 all year (no daylight saving time since 1979).
ScheduleSpec taipei_saturday_night() {
  return {.time_zone = "Asia/Taipei",
          .windows = {{.days = {"Sat"}, .start = "22:00", .end = "06:00"}},
          .blackout_dates = {}};
}

// ---- Asia/Taipei, "Sat 22:00-06:00" ----
// Saturday 2026-05-16 22:00 in Taipei is 14:00 UTC; Sunday 06:00 is Saturday 22:00 UTC.

TEST(ScheduleTest, TaipeiWindowStartIsInclusiveEndExclusive) {
  const Schedule schedule = compile_ok(taipei_saturday_night());
  EXPECT_EQ(schedule.time_zone(), "Asia/Taipei");
  EXPECT_FALSE(schedule.always_open());

  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 16, 13, 59, 59)));  // Sat 21:59:59 local
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 16, 14, 0)));        // Sat 22:00 local
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 16, 16, 0)));        // Sun 00:00 local
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 16, 21, 59, 59)));   // Sun 05:59:59 local
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 16, 22, 0)));       // Sun 06:00 local
  // Not in UTC terms: Saturday 22:00 UTC is Sunday 06:00 in Taipei.
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 16, 23, 0)));
  // Sunday 22:00 and Friday 22:00 local: only Saturday is a window day.
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 17, 14, 0)));
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 15, 14, 0)));
}

TEST(ScheduleTest, TaipeiNextOpenFromWednesday) {
  const Schedule schedule = compile_ok(taipei_saturday_night());
  const Instant wednesday = utc(2026, 5, 13, 2, 0);  // Wed 10:00 local
  ASSERT_EQ(schedule.next_open(wednesday), utc(2026, 5, 16, 14, 0));
  EXPECT_EQ(schedule.describe(*schedule.next_open(wednesday)), "Sat 22:00 Asia/Taipei");
  // Open: t itself.
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 16, 14, 0)), utc(2026, 5, 16, 14, 0));
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 16, 20, 30, 5)), utc(2026, 5, 16, 20, 30, 5));
  // Just closed (Sun 06:00 local): the next Saturday.
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 16, 22, 0)), utc(2026, 5, 23, 14, 0));
}

TEST(ScheduleTest, TaipeiClosesAt) {
  const Schedule schedule = compile_ok(taipei_saturday_night());
  const Instant sunday_six = utc(2026, 5, 16, 22, 0);  // Sun 06:00 local
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 16, 14, 0)), sunday_six);
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 16, 15, 0)), sunday_six);
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 16, 21, 59, 59)), sunday_six);
  EXPECT_EQ(schedule.closes_at(sunday_six), std::nullopt);  // closed
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 13, 2, 0)), std::nullopt);
}

TEST(ScheduleTest, DescribeUsesTheZonesWeekdayAndTime) {
  const Schedule schedule = compile_ok(taipei_saturday_night());
  EXPECT_EQ(schedule.describe(utc(2026, 5, 16, 14, 0)), "Sat 22:00 Asia/Taipei");
  // Seconds are dropped, not rounded; the local date has moved on past UTC's.
  EXPECT_EQ(schedule.describe(utc(2026, 5, 16, 16, 5, 59)), "Sun 00:05 Asia/Taipei");
  EXPECT_EQ(schedule.describe(utc(2026, 5, 17, 1, 9)), "Sun 09:09 Asia/Taipei");
}

// ---- The default zone and the always-open schedule ----

TEST(ScheduleTest, EmptySpecIsAlwaysOpenInUtc) {
  const Schedule schedule = compile_ok({});
  EXPECT_EQ(schedule.time_zone(), "UTC");
  EXPECT_TRUE(schedule.always_open());
  for (const Instant t :
       {utc(2026, 5, 16, 0, 0), utc(2026, 12, 31, 23, 59, 59), utc(2027, 3, 28, 1, 30)}) {
    EXPECT_TRUE(schedule.open_at(t));
    EXPECT_EQ(schedule.next_open(t), t);
    EXPECT_EQ(schedule.closes_at(t), std::nullopt);  // never closes within the horizon
  }
  EXPECT_EQ(schedule.describe(utc(2026, 5, 16, 22, 0)), "Sat 22:00 UTC");
}

TEST(ScheduleTest, DefaultConstructedIsAlwaysOpenInUtc) {
  const Schedule schedule;
  EXPECT_EQ(schedule.time_zone(), "UTC");
  EXPECT_TRUE(schedule.always_open());
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 16, 0, 0)));
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 16, 0, 0)), std::nullopt);
  EXPECT_EQ(schedule.describe(utc(2026, 5, 17, 6, 7)), "Sun 06:07 UTC");
}

TEST(ScheduleTest, DefaultZoneWindowsAreInUtc) {
  const Schedule schedule = compile_ok(
      {.time_zone = "", .windows = {{.days = {"Sat"}, .start = "22:00", .end = "06:00"}}});
  EXPECT_EQ(schedule.time_zone(), "UTC");
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 16, 21, 59, 59)));
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 16, 22, 0)));
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 16, 22, 0)), utc(2026, 5, 17, 6, 0));
  EXPECT_EQ(schedule.describe(utc(2026, 5, 16, 22, 0)), "Sat 22:00 UTC");
}

TEST(ScheduleTest, EmptyDaysMeansEveryDayAndSundayIsADay) {
  const Schedule every_day =
      compile_ok({.windows = {{.days = {}, .start = "09:00", .end = "10:00"}}});
  for (unsigned day = 11; day <= 17; ++day) {  // Mon 2026-05-11 .. Sun 2026-05-17
    EXPECT_TRUE(every_day.open_at(utc(2026, 5, day, 9, 30))) << "2026-05-" << day;
    EXPECT_FALSE(every_day.open_at(utc(2026, 5, day, 10, 0))) << "2026-05-" << day;
  }
  const Schedule sunday =
      compile_ok({.windows = {{.days = {"Sun"}, .start = "09:00", .end = "10:00"}}});
  EXPECT_TRUE(sunday.open_at(utc(2026, 5, 17, 9, 30)));
  EXPECT_FALSE(sunday.open_at(utc(2026, 5, 16, 9, 30)));
  EXPECT_FALSE(sunday.open_at(utc(2026, 5, 18, 9, 30)));
}

TEST(ScheduleTest, EndEqualToStartIsTwentyFourHours) {
  const Schedule schedule =
      compile_ok({.windows = {{.days = {"Wed"}, .start = "12:00", .end = "12:00"}}});
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 13, 12, 0)));       // Wed
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 14, 11, 59, 59)));  // Thu
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 14, 12, 0)));
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 13, 12, 0)), utc(2026, 5, 14, 12, 0));
}

TEST(ScheduleTest, ContiguousAndOverlappingWindowsMerge) {
  const Schedule schedule =
      compile_ok({.windows = {{.days = {"Mon"}, .start = "08:00", .end = "12:00"},
                              {.days = {"Mon"}, .start = "13:00", .end = "15:00"},
                              {.days = {"Mon"}, .start = "12:00", .end = "14:00"},
                              {.days = {"Mon"}, .start = "18:00", .end = "19:00"}}});
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 18, 9, 0)), utc(2026, 5, 18, 15, 0));
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 18, 12, 0)), utc(2026, 5, 18, 15, 0));
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 18, 18, 0)), utc(2026, 5, 18, 19, 0));
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 18, 15, 0)), utc(2026, 5, 18, 18, 0));
  // A daily window running into the next day's merges into one that never closes.
  const Schedule whole_days =
      compile_ok({.windows = {{.days = {}, .start = "06:00", .end = "06:00"}}});
  EXPECT_FALSE(whole_days.always_open());
  EXPECT_TRUE(whole_days.open_at(utc(2026, 5, 18, 5, 59)));
  EXPECT_EQ(whole_days.closes_at(utc(2026, 5, 18, 5, 59)), std::nullopt);
}

// ---- Blackout dates ----

TEST(ScheduleTest, BlackoutClosesAWindowCrossingIntoItAtLocalMidnight) {
  ScheduleSpec spec = taipei_saturday_night();
  spec.blackout_dates = {"2026-05-17"};  // the Sunday after Saturday 2026-05-16
  const Schedule schedule = compile_ok(spec);
  EXPECT_FALSE(schedule.always_open());
  const Instant midnight = utc(2026, 5, 16, 16, 0);  // Sun 2026-05-17 00:00 in Taipei
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 16, 14, 0)));
  EXPECT_TRUE(schedule.open_at(midnight - seconds(1)));
  EXPECT_FALSE(schedule.open_at(midnight));
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 16, 20, 0)));  // Sun 04:00 local
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 16, 14, 0)), midnight);
  EXPECT_EQ(schedule.next_open(midnight), utc(2026, 5, 23, 14, 0));
}

TEST(ScheduleTest, WindowStartingOnABlackoutDateNeverOpens) {
  ScheduleSpec spec = taipei_saturday_night();
  spec.blackout_dates = {"2026-05-23"};  // a Saturday
  const Schedule schedule = compile_ok(spec);
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 23, 14, 0)));  // Sat 22:00 local
  // Not even the part after midnight, on a Sunday that is not blacked out.
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 23, 17, 0)));  // Sun 01:00 local
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 20, 2, 0)), utc(2026, 5, 30, 14, 0));
  // The week before is untouched.
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 16, 17, 0)));
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 16, 17, 0)), utc(2026, 5, 16, 22, 0));
}

TEST(ScheduleTest, BlackoutDatesAreLocalDatesOfTheZone) {
  // No windows: always open but on 2026-05-17 in Taipei, which is 05-16 16:00 to 05-17 16:00 UTC.
  const Schedule schedule =
      compile_ok({.time_zone = "Asia/Taipei", .blackout_dates = {"2026-05-17"}});
  EXPECT_FALSE(schedule.always_open());
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 16, 15, 59, 59)));
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 16, 16, 0)));
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 17, 15, 59, 59)));
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 17, 16, 0)));
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 10, 0, 0)), utc(2026, 5, 16, 16, 0));
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 17, 3, 0)), utc(2026, 5, 17, 16, 0));
  // After the blackout it never closes again within the horizon.
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 17, 16, 0)), std::nullopt);
}

TEST(ScheduleTest, BlackoutDatesInAnyOrder) {
  const Schedule schedule = compile_ok(
      {.blackout_dates = {"2026-12-25", "2026-05-17", "2027-01-01", "2026-05-16", "2026-05-17"}});
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 16, 12, 0)));
  EXPECT_FALSE(schedule.open_at(utc(2026, 5, 17, 12, 0)));
  EXPECT_FALSE(schedule.open_at(utc(2026, 12, 25, 12, 0)));
  EXPECT_FALSE(schedule.open_at(utc(2027, 1, 1, 12, 0)));
  EXPECT_TRUE(schedule.open_at(utc(2026, 5, 18, 12, 0)));
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 16, 12, 0)), utc(2026, 5, 18, 0, 0));
  EXPECT_EQ(schedule.closes_at(utc(2026, 5, 18, 0, 0)), utc(2026, 12, 25, 0, 0));
}

TEST(ScheduleTest, NextOpenGivesUpAtTheHorizon) {
  // Mondays 09:00-10:00 UTC, every Monday from 2026-05-18 to 2027-06-14 (57 of them) blacked out.
  // From Sunday 2026-05-17 09:00 the horizon (400 days) ends on Monday 2027-06-21 09:00, exactly
  // when the first Monday not blacked out opens.
  const Instant t = utc(2026, 5, 17, 9, 0);
  ASSERT_EQ(t + kHorizon, utc(2027, 6, 21, 9, 0));
  ScheduleSpec spec{.windows = {{.days = {"Mon"}, .start = "09:00", .end = "10:00"}}};
  const std::chrono::sys_days first_monday =
      std::chrono::sys_days(std::chrono::year(2026) / std::chrono::May / std::chrono::day(18));
  const std::chrono::sys_days last_monday =
      std::chrono::sys_days(std::chrono::year(2027) / std::chrono::June / std::chrono::day(14));
  for (std::chrono::sys_days day = first_monday; day < last_monday; day += std::chrono::weeks(1)) {
    spec.blackout_dates.push_back(iso_date(day));
  }
  ASSERT_EQ(spec.blackout_dates.size(), 56U);
  ASSERT_EQ(spec.blackout_dates.back(), "2027-06-07");

  // The last Monday before the horizon is still open.
  EXPECT_EQ(compile_ok(spec).next_open(t), utc(2027, 6, 14, 9, 0));

  spec.blackout_dates.emplace_back("2027-06-14");
  const Schedule schedule = compile_ok(spec);
  EXPECT_FALSE(schedule.open_at(utc(2027, 6, 14, 9, 30)));
  EXPECT_TRUE(schedule.open_at(utc(2027, 6, 21, 9, 30)));
  // Opening at the horizon is within it; a second later is not.
  EXPECT_EQ(schedule.next_open(t), utc(2027, 6, 21, 9, 0));
  EXPECT_EQ(schedule.next_open(t - seconds(1)), std::nullopt);
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 13, 2, 0)), std::nullopt);
}

TEST(ScheduleTest, BlackoutSkipsToTheNextWindowDay) {
  // The only window day blacked out: closed until the same weekday a week later.
  ScheduleSpec spec{.windows = {{.days = {"Tue"}, .start = "00:00", .end = "00:00"}},
                    .blackout_dates = {"2026-05-19"}};
  const Schedule schedule = compile_ok(spec);
  EXPECT_EQ(schedule.next_open(utc(2026, 5, 18, 0, 0)), utc(2026, 5, 26, 0, 0));
}

// ---- Daylight saving time, America/New_York (EST UTC-5, EDT UTC-4) ----

TEST(ScheduleTest, SpringForwardStartInTheGapOpensAfterIt) {
  // 2026-03-08 (Sunday): 02:00 EST jumps to 03:00 EDT (07:00 UTC); 02:30 does not exist.
  const Schedule schedule =
      compile_ok({.time_zone = "America/New_York",
                  .windows = {{.days = {"Sun"}, .start = "02:30", .end = "04:00"}}});
  const Instant three_edt = utc(2026, 3, 8, 7, 0);
  EXPECT_FALSE(schedule.open_at(three_edt - seconds(1)));  // 01:59:59 EST
  EXPECT_TRUE(schedule.open_at(three_edt));
  EXPECT_EQ(schedule.describe(three_edt), "Sun 03:00 America/New_York");
  EXPECT_EQ(schedule.next_open(utc(2026, 3, 8, 5, 0)), three_edt);  // from 00:00 EST
  EXPECT_EQ(schedule.closes_at(three_edt), utc(2026, 3, 8, 8, 0));  // 04:00 EDT
  // The Sundays either side: 02:30 EST (07:30 UTC) and 02:30 EDT (06:30 UTC).
  EXPECT_EQ(schedule.next_open(utc(2026, 3, 1, 0, 0)), utc(2026, 3, 1, 7, 30));
  EXPECT_EQ(schedule.next_open(utc(2026, 3, 9, 0, 0)), utc(2026, 3, 15, 6, 30));
}

TEST(ScheduleTest, SpringForwardWindowInsideTheGapDoesNotOpen) {
  const Schedule schedule =
      compile_ok({.time_zone = "America/New_York",
                  .windows = {{.days = {"Sun"}, .start = "02:10", .end = "02:50"}}});
  EXPECT_FALSE(schedule.open_at(utc(2026, 3, 8, 7, 0)));
  EXPECT_EQ(schedule.next_open(utc(2026, 3, 8, 0, 0)), utc(2026, 3, 15, 6, 10));  // 02:10 EDT
}

TEST(ScheduleTest, FallBackAmbiguousTimesUseTheEarlierInstant) {
  // 2026-11-01 (Sunday): 02:00 EDT falls back to 01:00 EST (06:00 UTC); 01:30 happens twice, at
  // 05:30 UTC (EDT) and 06:30 UTC (EST).
  const Schedule schedule =
      compile_ok({.time_zone = "America/New_York",
                  .windows = {{.days = {"Sun"}, .start = "01:30", .end = "03:00"}}});
  const Instant first_one_thirty = utc(2026, 11, 1, 5, 30);
  EXPECT_FALSE(schedule.open_at(first_one_thirty - seconds(1)));
  EXPECT_TRUE(schedule.open_at(first_one_thirty));
  EXPECT_EQ(schedule.next_open(utc(2026, 11, 1, 4, 0)), first_one_thirty);  // from 00:00 EDT
  EXPECT_EQ(schedule.describe(first_one_thirty), "Sun 01:30 America/New_York");
  // Open through the repeated hour until 03:00 EST (08:00 UTC): two and a half hours.
  EXPECT_TRUE(schedule.open_at(utc(2026, 11, 1, 6, 15)));
  EXPECT_EQ(schedule.describe(utc(2026, 11, 1, 6, 15)), "Sun 01:15 America/New_York");
  EXPECT_EQ(schedule.closes_at(first_one_thirty), utc(2026, 11, 1, 8, 0));

  // An ambiguous end is the earlier instant too: 00:00-01:30 ends at 01:30 EDT.
  const Schedule early =
      compile_ok({.time_zone = "America/New_York",
                  .windows = {{.days = {"Sun"}, .start = "00:00", .end = "01:30"}}});
  EXPECT_EQ(early.closes_at(utc(2026, 11, 1, 4, 0)), first_one_thirty);
  EXPECT_FALSE(early.open_at(utc(2026, 11, 1, 6, 0)));  // 01:00 EST, the second time round
}

// ---- Errors ----

void expect_invalid(const ScheduleSpec& spec, const std::string& message) {
  const Result<Schedule> schedule = Schedule::compile(spec);
  ASSERT_FALSE(schedule) << "expected: " << message;
  EXPECT_EQ(schedule.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(schedule.error().message, message);
}

TEST(ScheduleCompileTest, UnknownTimeZone) {
  expect_invalid({.time_zone = "Asia/Taipeii"},
                 R"(spec.timeZone: unknown time zone "Asia/Taipeii")");
  expect_invalid({.time_zone = "asia/taipei"}, R"(spec.timeZone: unknown time zone "asia/taipei")");
  expect_invalid({.time_zone = "Asia"}, R"(spec.timeZone: unknown time zone "Asia")");
  expect_invalid({.time_zone = " UTC"}, R"(spec.timeZone: unknown time zone " UTC")");
  // Names are looked up in the database's list, never opened as paths.
  expect_invalid({.time_zone = "../zoneinfo/UTC"},
                 R"(spec.timeZone: unknown time zone "../zoneinfo/UTC")");
  expect_invalid({.time_zone = "/etc/passwd"}, R"(spec.timeZone: unknown time zone "/etc/passwd")");
  // Debian's zoneinfo directory has it, but it is the host's zone, not an IANA name.
  expect_invalid({.time_zone = "localtime"}, R"(spec.timeZone: unknown time zone "localtime")");
  // Hostile bytes are made printable and cut.
  const Result<Schedule> long_name = Schedule::compile({.time_zone = std::string(300, 'x')});
  ASSERT_FALSE(long_name);
  EXPECT_EQ(long_name.error().message,
            "spec.timeZone: unknown time zone \"" + std::string(64, 'x') + "...\"");
}

TEST(ScheduleCompileTest, KnownTimeZones) {
  for (const char* zone : {"UTC", "Etc/UTC", "Asia/Taipei", "America/New_York", "Europe/Berlin",
                           "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham"}) {
    const Result<Schedule> schedule = Schedule::compile({.time_zone = zone});
    ASSERT_TRUE(schedule) << zone << ": " << schedule.error().describe();
    EXPECT_EQ(schedule->time_zone(), zone);
  }
}

TEST(ScheduleCompileTest, BadDay) {
  expect_invalid(
      {.windows = {{.days = {"Mon", "Mo"}, .start = "22:00", .end = "06:00"}}},
      R"(spec.windows[0].days[1]: "Mo" is not a day of the week (Mon, Tue, Wed, Thu, Fri, Sat, Sun))");
  for (const char* day : {"mon", "MON", "Monday", "", "Mon "}) {
    expect_invalid({.windows = {{.days = {day}, .start = "22:00", .end = "06:00"}}},
                   std::string("spec.windows[0].days[0]: \"") + day +
                       "\" is not a day of the week (Mon, Tue, Wed, Thu, Fri, Sat, Sun)");
  }
}

TEST(ScheduleCompileTest, BadTimeOfDay) {
  expect_invalid({.windows = {{.days = {}, .start = "25:00", .end = "06:00"}}},
                 R"(spec.windows[0].start: "25:00" is not a time of day (HH:MM))");
  expect_invalid({.windows = {{.days = {}, .start = "22:00", .end = "06:00"},
                              {.days = {}, .start = "22:00", .end = "6:00"}}},
                 R"(spec.windows[1].end: "6:00" is not a time of day (HH:MM))");
  for (const char* time : {"24:00", "12:60", "", "1200", "12:00:00", "-1:00", "12:0a", " 2:00"}) {
    expect_invalid(
        {.windows = {{.days = {}, .start = time, .end = "06:00"}}},
        std::string("spec.windows[0].start: \"") + time + "\" is not a time of day (HH:MM)");
  }
  EXPECT_OK(Schedule::compile({.windows = {{.days = {}, .start = "00:00", .end = "23:59"}}}));
}

TEST(ScheduleCompileTest, BadBlackoutDate) {
  expect_invalid({.blackout_dates = {"2026-05-17", "2026-12-24", "2026-02-30"}},
                 R"(spec.blackoutDates[2]: "2026-02-30" is not a date (YYYY-MM-DD))");
  for (const char* date : {"2026-02-29", "2026-13-01", "2026-00-10", "2026-01-00", "2026-1-01",
                           "26-01-01", "2026/01/01", "2026-01-01T00:00", "", "2026-01-0x"}) {
    expect_invalid({.blackout_dates = {date}}, std::string("spec.blackoutDates[0]: \"") + date +
                                                   "\" is not a date (YYYY-MM-DD)");
  }
  EXPECT_OK(Schedule::compile({.blackout_dates = {"2028-02-29", "2000-02-29", "2026-12-31"}}));
  expect_invalid({.blackout_dates = {"2100-02-29"}},
                 R"(spec.blackoutDates[0]: "2100-02-29" is not a date (YYYY-MM-DD))");
}

TEST(ScheduleCompileTest, TheZoneIsCheckedFirst) {
  expect_invalid({.time_zone = "Mars/Base",
                  .windows = {{.days = {"Xyz"}, .start = "99:99", .end = ""}},
                  .blackout_dates = {"never"}},
                 R"(spec.timeZone: unknown time zone "Mars/Base")");
}

TEST(ScheduleTest, CopiesAreIndependentValues) {
  const Schedule original = compile_ok(taipei_saturday_night());
  Schedule copy = original;
  EXPECT_EQ(copy.time_zone(), "Asia/Taipei");
  EXPECT_TRUE(copy.open_at(utc(2026, 5, 16, 14, 0)));
  copy = Schedule();
  EXPECT_TRUE(original.open_at(utc(2026, 5, 16, 14, 0)));
  EXPECT_TRUE(copy.always_open());
}

}  // namespace
}  // namespace nmo::op::fleet
