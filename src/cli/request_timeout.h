// kubectl's --request-timeout: how long one request to the API server may take.
//
// Threading: pure function; safe from any thread.
#pragma once

#include <chrono>
#include <string_view>

#include "base/result.h"

namespace nmo::cli {

// The request timeout `text` asks for: a duration ("30s", "2m") or a whole number of seconds,
// as kubectl reads it; 0 waits for ever (a year, as far as the client is concerned).
// ErrorCode::kInvalid, with parse_duration()'s message, for anything else.
[[nodiscard]] Result<std::chrono::milliseconds> parse_request_timeout(std::string_view text);

}  // namespace nmo::cli
