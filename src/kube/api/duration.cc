#include "kube/api/duration.h"

#include <cstddef>
#include <cstdint>
#include <limits>

#include "base/strings.h"

namespace nmo::kube {
namespace {

// Longest piece of user input quoted in an error message (a sane duration is a few bytes).
constexpr std::size_t kQuoteLimit = 64;

constexpr std::uint64_t kNanosPerMicro = 1000;
constexpr std::uint64_t kNanosPerMilli = 1000 * kNanosPerMicro;
constexpr std::uint64_t kNanosPerSecond = 1000 * kNanosPerMilli;
constexpr std::uint64_t kNanosPerMinute = 60 * kNanosPerSecond;
constexpr std::uint64_t kNanosPerHour = 60 * kNanosPerMinute;
// 1 << 63: Go's bound for the magnitude of a duration while parsing.
constexpr std::uint64_t kMagnitudeLimit = std::uint64_t{1} << 63U;

constexpr std::string_view kUnitList = "h, m, s, ms, us or ns";

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// Nanoseconds per `unit`, or 0 for an unknown unit. Go accepts both micro signs.
std::uint64_t unit_nanos(std::string_view unit) noexcept {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\u00b5s" || unit == "\u03bcs") return kNanosPerMicro;
  if (unit == "ms") return kNanosPerMilli;
  if (unit == "s") return kNanosPerSecond;
  if (unit == "m") return kNanosPerMinute;
  if (unit == "h") return kNanosPerHour;
  return 0;
}

// Go's fmtFrac: writes the fraction of v/10^precision (".5", ".123") in front of `end`, leaving
// out trailing zeros and the point itself when the fraction is 0. Returns v/10^precision.
std::uint64_t format_fraction(std::string& reversed, std::uint64_t v, int precision) {
  bool print = false;
  for (int i = 0; i < precision; ++i) {
    const auto digit = static_cast<char>(v % 10);
    print = print || digit != 0;
    if (print) {
      reversed += static_cast<char>('0' + digit);
    }
    v /= 10;
  }
  if (print) {
    reversed += '.';
  }
  return v;
}

// Go's fmtInt: the decimal digits of v, appended in reverse.
void format_integer(std::string& reversed, std::uint64_t v) {
  if (v == 0) {
    reversed += '0';
    return;
  }
  while (v > 0) {
    reversed += static_cast<char>('0' + static_cast<char>(v % 10));
    v /= 10;
  }
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  const auto fail = [text](const std::string& why) {
    return Error(ErrorCode::kInvalid, "invalid duration " + quoted(text, kQuoteLimit) + ": " + why);
  };
  if (text.empty()) {
    return fail(R"(empty (write a number and a unit, e.g. "90m" or "2h"))");
  }
  if (text.front() == '-') {
    return fail("must not be negative");
  }
  if (text.front() == '+') {
    return fail("must not have a sign");
  }
  const auto out_of_range = [&] {
    return fail("out of range (the longest duration is " + format_duration(Duration::max()) + ")");
  };
  std::uint64_t total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    // The whole part: Go's leadingInt.
    const std::size_t number_start = pos;
    std::uint64_t whole = 0;
    for (; pos < text.size() && is_digit(text[pos]); ++pos) {
      if (whole > kMagnitudeLimit / 10) {
        return out_of_range();
      }
      whole = whole * 10 + static_cast<std::uint64_t>(text[pos] - '0');
      if (whole > kMagnitudeLimit) {
        return out_of_range();
      }
    }
    if (pos == number_start) {
      return fail("expected a number at offset " + std::to_string(pos));
    }
    // The fraction: Go's leadingFraction, which stops accumulating digits (but still consumes
    // them) once more would overflow.
    std::uint64_t fraction = 0;
    double scale = 1;
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      const std::size_t fraction_start = pos;
      bool overflow = false;
      for (; pos < text.size() && is_digit(text[pos]); ++pos) {
        if (overflow) {
          continue;
        }
        if (fraction > (kMagnitudeLimit - 1) / 10) {
          overflow = true;
          continue;
        }
        const std::uint64_t next = fraction * 10 + static_cast<std::uint64_t>(text[pos] - '0');
        if (next > kMagnitudeLimit) {
          overflow = true;
          continue;
        }
        fraction = next;
        scale *= 10;
      }
      if (pos == fraction_start) {
        return fail("expected a digit after '.' at offset " + std::to_string(pos - 1));
      }
    }
    const std::string_view number = text.substr(number_start, pos - number_start);
    // The unit: everything up to the next digit or point.
    const std::size_t unit_start = pos;
    while (pos < text.size() && !is_digit(text[pos]) && text[pos] != '.') {
      ++pos;
    }
    const std::string_view unit = text.substr(unit_start, pos - unit_start);
    if (unit.empty()) {
      return fail("missing unit after " + quoted(number, kQuoteLimit) + " (use " +
                  std::string(kUnitList) + ")");
    }
    const std::uint64_t nanos = unit_nanos(unit);
    if (nanos == 0) {
      return fail("unknown unit " + quoted(unit, kQuoteLimit) + " (use " + std::string(kUnitList) +
                  ")");
    }
    if (whole > kMagnitudeLimit / nanos) {
      return out_of_range();
    }
    std::uint64_t value = whole * nanos;
    if (fraction > 0) {
      // Exactly Go's arithmetic, so "1.1h" means the same number of nanoseconds as in Go.
      value += static_cast<std::uint64_t>(static_cast<double>(fraction) *
                                          (static_cast<double>(nanos) / scale));
      if (value > kMagnitudeLimit) {
        return out_of_range();
      }
    }
    total += value;
    if (total > kMagnitudeLimit) {
      return out_of_range();
    }
  }
  if (total > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return out_of_range();
  }
  return Duration(static_cast<std::int64_t>(total));
}

std::string format_duration(Duration duration) {
  // A port of Go's time.Duration.String(): built back to front, then reversed.
  const std::int64_t count = duration.count();
  const bool negative = count < 0;
  // Two's complement negation in unsigned arithmetic handles the minimum value too.
  auto u = static_cast<std::uint64_t>(count);
  if (negative) {
    u = ~u + 1;
  }
  std::string reversed;
  if (u < kNanosPerSecond) {
    // Below one second a smaller unit is used: "1.5µs", "300ms".
    if (u == 0) {
      return "0s";
    }
    int precision = 0;
    if (u < kNanosPerMicro) {
      reversed = "sn";
    } else if (u < kNanosPerMilli) {
      precision = 3;
      reversed = "s\xb5\xc2";  // "µs" (U+00B5), reversed byte by byte
    } else {
      precision = 6;
      reversed = "sm";
    }
    u = format_fraction(reversed, u, precision);
    format_integer(reversed, u);
  } else {
    reversed = "s";
    u = format_fraction(reversed, u, 9);
    format_integer(reversed, u % 60);
    u /= 60;
    if (u > 0) {
      reversed += 'm';
      format_integer(reversed, u % 60);
      u /= 60;
      if (u > 0) {
        reversed += 'h';
        format_integer(reversed, u);
      }
    }
  }
  if (negative) {
    reversed += '-';
  }
  return {reversed.rbegin(), reversed.rend()};
}

}  // namespace nmo::kube
