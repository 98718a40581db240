// The names of the API's enums, shared by the projections of src/operator/api: parsing an enum
// from its name and the error that lists the valid names.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/result.h"
#include "base/strings.h"

namespace nmo::op::internal {

// Longest piece of user input quoted in an error message (a sane value is a few bytes).
inline constexpr std::size_t kQuoteLimit = 64;

// "A, B, C or D".
template <std::size_t N>
[[nodiscard]] std::string one_of(const std::array<std::string_view, N>& names) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) {
      out += i + 1 == N ? " or " : ", ";
    }
    out += names[i];
  }
  return out;
}

// The enum value whose name is `text`, for enums numbered 0..N-1 in the order of `names`;
// otherwise ErrorCode::kInvalid: `unknown <what> "<text>" (expected A, B or C)`.
template <typename Enum, std::size_t N>
[[nodiscard]] Result<Enum> parse_enum(std::string_view text,
                                      const std::array<std::string_view, N>& names,
                                      std::string_view what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) {
      return static_cast<Enum>(i);
    }
  }
  return Error(ErrorCode::kInvalid, "unknown " + std::string(what) + " " +
                                        nmo::quoted(text, kQuoteLimit) + " (expected " +
                                        one_of(names) + ")");
}

}  // namespace nmo::op::internal
