// Go's time.Duration as text: parsing (time.ParseDuration) and formatting (Duration.String()),
// for API fields and messages written the way a Go client writes them.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"

namespace nmo::kube {

// A Go time.Duration: signed nanoseconds in 64 bits.
using Duration = std::chrono::nanoseconds;

// Parses a duration as Go's time.ParseDuration does, restricted to what CRD patterns for durations
// accept: one or more <decimal number><unit> pairs, e.g. "90m", "1h30m",
// "2h", "45s", "1.5h", "300ms". Units: ns, us, µs (U+00B5 or U+03BC), ms, s, m, h. Fractions are
// converted as Go converts them ("1.5h" is 90 minutes). Rejected with ErrorCode::kInvalid, the
// message quoting the input:
//   ""     invalid duration "": empty (write a number and a unit, e.g. "90m" or "2h")
//   "-1m"  invalid duration "-1m": must not be negative
//   "5"    invalid duration "5": missing unit after "5" (use h, m, s, ms, us or ns)
//   "1d"   invalid duration "1d": unknown unit "d" (use h, m, s, ms, us or ns)
// as are a "+" sign, ".5h" and "1.h" (a digit must stand on each side of the point), and
// durations beyond Go's limit of 2562047h47m16.854775807s. "0s" is a valid duration; whether
// zero makes sense is the caller's business.
[[nodiscard]] Result<Duration> parse_duration(std::string_view text);

// Formats `duration` exactly as Go's time.Duration.String(): "1h30m0s", "2h0m0s", "45s",
// "1m30s", "1.5s", "300ms", "1.5µs" (U+00B5), "0s", "-2m0s". Messages quote drainTimeout this
// way ("drain did not complete within 1h30m0s"), which is also what a Go client would print.
[[nodiscard]] std::string format_duration(Duration duration);

}  // namespace nmo::kube
