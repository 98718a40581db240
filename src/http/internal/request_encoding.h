// Turns a caller's Request into the Beast message written on the wire, refusing what would
// corrupt it: a target that is not an origin-form path, header names that are not HTTP tokens,
// header values with CR, LF or NUL (header injection), and framing headers the client owns.
//
// Threading: pure function.
#pragma once

#include "base/result.h"
#include "http/internal/connection.h"
#include "http/message.h"

namespace nmo::http::internal {

// The HTTP/1.1 message for `request` to `server`: the caller's headers in order, Host (unless the
// caller set one), Content-Length when there is a body or the method carries one, keep-alive.
// Fails with kInvalid naming the offending part ("header \"X-A\": value contains CR, LF or NUL").
[[nodiscard]] Result<BeastRequest> encode_request(const Request& request,
                                                  const ServerAddress& server);

}  // namespace nmo::http::internal
