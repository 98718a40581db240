// Fitting a generated object name into a Kubernetes name limit, deterministically.
//
// Scheme: `prefix + name` when that fits in `max_length`; otherwise
// `prefix + <name cut short> + "-" + <16 lower-case hex digits>`, the hex digits being the 64-bit
// FNV-1a hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of the whole `name`, and the
// cut-short name losing any trailing '-' or '.' so the result stays a valid DNS subdomain. Names
// that differ only after the cut get different hashes; the result is always the same for the same
// input, across processes and versions (never change the scheme: names already in clusters
// depend on it).
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/fnv1a.h"

namespace nmo::op::internal {

// The name as described in the file comment. `max_length` must exceed prefix.size() + 17.
[[nodiscard]] std::string fit_name(std::string_view prefix, std::string_view name,
                                   std::size_t max_length);

}  // namespace nmo::op::internal
