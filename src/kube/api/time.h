// Kubernetes timestamps: RFC 3339 parsing and the two wire formats of metav1.Time and
// metav1.MicroTime.
//
// GCC 12's libstdc++ has no std::chrono::parse, so the parser is ours. It is strict: the API
// server always writes `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` and anything else is bad input.
//
// Threading: pure functions without shared state; safe to call from any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"

namespace nmo::kube {

// A point in time as the API server records it: UTC, microsecond resolution (metav1.MicroTime is
// the finest Kubernetes format).
using Time = std::chrono::sys_time<std::chrono::microseconds>;

// Now on the wall clock, at that resolution: for timestamps written to objects (decisions that
// must be testable take a fake clock instead).
[[nodiscard]] inline Time wall_now() {
  return std::chrono::floor<std::chrono::microseconds>(std::chrono::system_clock::now());
}

// Parses an RFC 3339 timestamp as Kubernetes writes it:
//   2026-11-30T10:00:00Z            metav1.Time
//   2026-11-30T10:00:00.123456Z     metav1.MicroTime (1 to 9 fractional digits are accepted;
//                                   digits beyond microseconds are truncated)
//   2026-11-30T12:00:00+02:00       numeric offsets (also -00:00)
// Rejected with ErrorCode::kInvalid: a missing or lower-case `T`/`Z`, out-of-range fields
// (month 13, Feb 30, hour 24, second 60: Go's time package has no leap seconds either), more than
// 9 fractional digits, trailing text, and instants outside years 0000-9999 in UTC. The message
// quotes the input, e.g.
//   invalid RFC 3339 time "2026-02-30T00:00:00Z": day 30 out of range for 2026-02
[[nodiscard]] Result<Time> parse_time(std::string_view text);

// metav1.Time wire format: UTC with seconds precision, `2026-11-30T10:00:00Z`. Sub-second parts
// are truncated (towards the past). Instants outside years 0000-9999 are clamped to that range.
[[nodiscard]] std::string format_time(Time time);

// metav1.MicroTime wire format (Go's RFC3339Micro): UTC with exactly six fractional digits,
// `2026-11-30T10:00:00.123456Z`. Lease spec.renewTime and spec.acquireTime use it. Instants
// outside years 0000-9999 are clamped to that range.
[[nodiscard]] std::string format_micro_time(Time time);

}  // namespace nmo::kube
