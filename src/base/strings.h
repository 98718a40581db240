// Small string helpers the standard library lacks (C++20 already has starts_with/ends_with).
//
// Everything here is ASCII-only: Kubernetes names, label keys, header values and flag values are
// ASCII, and a locale-dependent std::isspace has no place in protocol code.
//
// Threading: pure functions without shared state; safe to call from any thread.
#pragma once

#include <string_view>
#include <vector>

namespace nmo {

// `text` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
// The result points into `text`: it must not outlive the characters it views.
[[nodiscard]] std::string_view trim(std::string_view text) noexcept;

// The pieces of `text` between occurrences of `separator`, empty pieces included, like Go's
// strings.Split: split("a,,b", ',') is {"a", "", "b"}, split("", ',') is {""} and split(",", ',')
// is {"", ""}. The pieces point into `text`: they must not outlive the characters they view.
[[nodiscard]] std::vector<std::string_view> split(std::string_view text, char separator);

}  // namespace nmo
