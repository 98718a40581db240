// FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3): the short, stable
// fingerprint behind every name the operator derives from other names (slot Leases, a plan's
// NodeMaintenances, a plan's stop token). The same on every build and machine; never change it:
// names already in clusters depend on it.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace nmo {

// 64-bit FNV-1a of `text`.
[[nodiscard]] std::uint64_t fnv1a64(std::string_view text) noexcept;

// fnv1a64(text) as 16 lower-case hex digits, leading zeros kept.
[[nodiscard]] std::string fnv1a64_hex(std::string_view text);

}  // namespace nmo
