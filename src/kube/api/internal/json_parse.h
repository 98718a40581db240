// Parsing untrusted JSON text (list pages, watch lines, Status bodies) into a Boost.JSON DOM.
//
// One place decides the parser options for everything the API server sends and turns Boost's
// error codes into Result values with the byte offset of the failure.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <cstddef>
#include <string_view>

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>

#include "base/result.h"

namespace nmo::kube::internal {

// Deepest nesting accepted. Boost.JSON's default of 32 is tight for managedFields of CRD objects
// inside a list; 64 leaves room while still bounding the parser's recursion.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Parses `text`, which must hold exactly one JSON value (surrounding whitespace allowed), into
// memory from `storage`. Strict JSON: no comments, no trailing commas, valid UTF-8 only. On
// failure an ErrorCode::kInvalid error whose message is Boost's reason and the byte offset, e.g.
// "syntax error at byte 12" or "incomplete JSON at byte 40".
[[nodiscard]] Result<boost::json::value> parse_json(std::string_view text,
                                                    boost::json::storage_ptr storage);

}  // namespace nmo::kube::internal
