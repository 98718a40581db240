// Message digests for code above the HTTP layer that must not keep a secret as it came (the
// metrics authorizer caches its callers' bearer tokens by digest). OpenSSL stays in src/http.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace nmo::http {

/// The SHA-256 digest of `data`: 32 raw bytes.
[[nodiscard]] std::string sha256(std::string_view data);

}  // namespace nmo::http
