// Quoting untrusted bytes (response bodies, watch lines, timestamps) inside error messages.
//
// An error message ends up in log lines and Kubernetes Events, so the bytes quoted from a peer
// must be short and printable: no control characters that break a log line, no invalid UTF-8.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nmo::kube::internal {

// At most `max_bytes` bytes of `text` made printable: each run of ASCII whitespace (space, \t,
// \n, \v, \f, \r) becomes one space, any other control byte or non-ASCII byte becomes '?'. When
// `text` is longer than `max_bytes`, "..." is appended. Example: printable_prefix("<h1>\r\nBad
// Gateway", 8) == "<h1> Ba..."; the output never exceeds max_bytes + 3 bytes.
[[nodiscard]] std::string printable_prefix(std::string_view text, std::size_t max_bytes);

}  // namespace nmo::kube::internal
