// NMO_CHECK: invariants that must hold in every build type.
//
// A failed check means the program is in a state its author ruled out, so continuing would only
// spread the damage (Envoy's rule: "if it should never happen, terminate"). Expected failures,
// such as network errors, API errors and bad input, are `Result` values instead (see result.h).
//
// Threading: the macro and check_failed() are safe to use from any thread.
#pragma once

#include <string_view>

namespace nmo::internal {

// Prints "<file>:<line>: NMO_CHECK(<condition>) failed: <message>" to stderr and aborts.
// Called only by NMO_CHECK; not part of the public API.
[[noreturn]] void check_failed(const char* file, int line, const char* condition,
                               std::string_view message) noexcept;

}  // namespace nmo::internal

// Aborts the process with file:line, the condition text and `msg` when `cond` is false.
// `msg` is anything convertible to std::string_view and is evaluated only on failure, so it may
// build a string (`NMO_CHECK(ok, "bad state: " + describe())`).
#define NMO_CHECK(cond, msg)                                           \
  do {                                                                 \
    if (!(cond)) [[unlikely]] {                                        \
      ::nmo::internal::check_failed(__FILE__, __LINE__, #cond, (msg)); \
    }                                                                  \
  } while (false)
