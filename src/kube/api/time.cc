#include "kube/api/time.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "base/strings.h"

namespace nmo::kube {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::minutes;
using std::chrono::seconds;

// The instants RFC 3339 can write: four-digit years, in UTC.
constexpr Time kMinTime{std::chrono::sys_days{std::chrono::year{0} / 1 / 1}};
constexpr Time kMaxTime{std::chrono::sys_days{std::chrono::year{10000} / 1 / 1} - microseconds{1}};

// Longest input quoted in an error: a valid timestamp has at most 35 bytes.
constexpr std::size_t kQuoteLimit = 64;

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// Walks the input left to right; on failure `why` says what was expected where.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  // Reads exactly `count` decimal digits into `out`.
  bool digits(int count, int& out) {
    out = 0;
    for (int i = 0; i < count; ++i) {
      if (!has_more() || !is_digit(text_[pos_])) {
        return fail("expected a digit");
      }
      out = out * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    return true;
  }

  // Consumes `c`, which must be next.
  bool literal(char c) {
    if (!has_more() || text_[pos_] != c) {
      return fail(std::string("expected '") + c + "'");
    }
    ++pos_;
    return true;
  }

  // Consumes `c` when it is next.
  bool accept(char c) {
    if (has_more() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // Reads the digits after the decimal point (1 to 9 of them) as microseconds, truncated.
  bool fraction(microseconds& out) {
    const std::size_t start = pos_;
    std::int64_t micros = 0;
    while (has_more() && is_digit(text_[pos_])) {
      if (pos_ - start < 6) {
        micros = micros * 10 + (text_[pos_] - '0');
      }
      ++pos_;
    }
    const std::size_t count = pos_ - start;
    if (count == 0) {
      return fail("expected a digit");
    }
    if (count > 9) {
      pos_ = start + 9;
      return fail("more than 9 fractional digits");
    }
    for (std::size_t i = count; i < 6; ++i) {
      micros *= 10;
    }
    out = microseconds{micros};
    return true;
  }

  // Reads `Z` or `±HH:MM` as the offset from UTC.
  bool offset(minutes& out) {
    if (accept('Z')) {
      out = minutes{0};
      return true;
    }
    if (!has_more() || (text_[pos_] != '+' && text_[pos_] != '-')) {
      return fail("expected 'Z' or a numeric offset like +02:00");
    }
    const bool negative = text_[pos_] == '-';
    ++pos_;
    int offset_hours = 0;
    int offset_minutes = 0;
    if (!digits(2, offset_hours) || !literal(':') || !digits(2, offset_minutes)) {
      return false;
    }
    if (offset_hours > 23 || offset_minutes > 59) {
      why_ = "offset " + std::string(text_.substr(pos_ - 6, 6)) + " out of range";
      return false;
    }
    out = hours{offset_hours} + minutes{offset_minutes};
    if (negative) {
      out = -out;
    }
    return true;
  }

  // Succeeds when the whole input was consumed.
  bool at_end() { return !has_more() || fail("unexpected text after the time"); }

  [[nodiscard]] const std::string& why() const { return why_; }

 private:
  [[nodiscard]] bool has_more() const { return pos_ < text_.size(); }

  bool fail(const std::string& what) {
    why_ = what + " at offset " + std::to_string(pos_);
    return false;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string why_;
};

Error invalid_time(std::string_view text, const std::string& why) {
  return {ErrorCode::kInvalid,
          "invalid RFC 3339 time \"" + printable_prefix(text, kQuoteLimit) + "\": " + why};
}

std::string two_digits(int value) {
  return {static_cast<char>('0' + value / 10), static_cast<char>('0' + value % 10)};
}

// Writes `value` as exactly `width` decimal digits at `out`, most significant first.
void put_digits(char* out, std::int64_t value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

std::string format(Time time, bool with_micros) {
  time = std::clamp(time, kMinTime, kMaxTime);
  const auto day = std::chrono::floor<days>(time);
  const std::chrono::year_month_day date{day};
  const std::chrono::hh_mm_ss clock{time - day};
  // "YYYY-MM-DDTHH:MM:SS" then ".ffffff" then "Z".
  std::string out(with_micros ? 27 : 20, '\0');
  char* p = out.data();
  put_digits(p, static_cast<int>(date.year()), 4);
  p[4] = '-';
  put_digits(p + 5, static_cast<unsigned>(date.month()), 2);
  p[7] = '-';
  put_digits(p + 8, static_cast<unsigned>(date.day()), 2);
  p[10] = 'T';
  put_digits(p + 11, clock.hours().count(), 2);
  p[13] = ':';
  put_digits(p + 14, clock.minutes().count(), 2);
  p[16] = ':';
  put_digits(p + 17, clock.seconds().count(), 2);
  if (with_micros) {
    p[19] = '.';
    put_digits(p + 20, clock.subseconds().count(), 6);
  }
  out.back() = 'Z';
  return out;
}

}  // namespace

Result<Time> parse_time(std::string_view text) {
  Scanner in(text);
  int year = 0;
  int month = 0;
  int day = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  microseconds fraction{0};
  minutes offset{0};
  const bool parsed =
      in.digits(4, year) && in.literal('-') && in.digits(2, month) && in.literal('-') &&
      in.digits(2, day) && in.literal('T') && in.digits(2, hour) && in.literal(':') &&
      in.digits(2, minute) && in.literal(':') && in.digits(2, second) &&
      (!in.accept('.') || in.fraction(fraction)) && in.offset(offset) && in.at_end();
  if (!parsed) {
    return invalid_time(text, in.why());
  }
  if (month < 1 || month > 12) {
    return invalid_time(text, "month " + two_digits(month) + " out of range");
  }
  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok()) {
    return invalid_time(
        text, "day " + two_digits(day) + " out of range for " + std::string(text.substr(0, 7)));
  }
  if (hour > 23) {
    return invalid_time(text, "hour " + two_digits(hour) + " out of range");
  }
  if (minute > 59) {
    return invalid_time(text, "minute " + two_digits(minute) + " out of range");
  }
  if (second > 59) {
    return invalid_time(text, "second " + two_digits(second) + " out of range");
  }
  const Time local =
      std::chrono::sys_days{date} + hours{hour} + minutes{minute} + seconds{second} + fraction;
  const Time utc = local - offset;
  if (utc < kMinTime || utc > kMaxTime) {
    return invalid_time(text, "outside years 0000-9999 in UTC");
  }
  return utc;
}

std::string format_time(Time time) { return format(time, false); }

std::string format_micro_time(Time time) { return format(time, true); }

}  // namespace nmo::kube
