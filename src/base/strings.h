// Small string helpers the standard library lacks (C++20 already has starts_with/ends_with).
//
// Everything here is ASCII-only: Kubernetes names, label keys, header values and flag values are
// ASCII, and a locale-dependent std::isspace has no place in protocol code.
//
// Threading: pure functions without shared state; safe to call from any thread.
#pragma once

#include <cstddef>
#include <string>
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

// Untrusted bytes (response bodies, watch lines, a plugin's stderr) quoted inside an error
// message, which ends up in log lines and Kubernetes Events: at most `max_bytes` bytes of `text`
// made printable. Each run of ASCII whitespace becomes one space, any other control byte or
// non-ASCII byte '?'; when `text` is longer, "..." is appended. Example:
// printable_prefix("<h1>\r\nBad Gateway", 8) == "<h1> Ba..."; never more than max_bytes + 3.
[[nodiscard]] std::string printable_prefix(std::string_view text, std::size_t max_bytes);

// printable_prefix() in double quotes, for naming a value inside an error message:
// quoted("1d", 64) == "\"1d\"".
[[nodiscard]] std::string quoted(std::string_view text, std::size_t max_bytes);

// The parts with `separator` between them: join({"a", "b"}, ", ") == "a, b"; "" for no parts.
[[nodiscard]] std::string join(const std::vector<std::string>& parts, std::string_view separator);

}  // namespace nmo
