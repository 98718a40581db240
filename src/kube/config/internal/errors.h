// Message helpers shared by the kube/config files (private to nmo::kube_config).
//
// Threading: pure functions without shared state; safe to call from any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"

namespace nmo::kube::internal {

// `text` in double quotes with '"', '\' and control bytes escaped (\xNN), so a name read from a
// file cannot break the one-line shape of an error message.
[[nodiscard]] std::string quote(std::string_view text);

// `error` with "<prefix>: " put in front of its message; code and everything else unchanged.
[[nodiscard]] Error with_prefix(Error error, std::string_view prefix);

}  // namespace nmo::kube::internal
