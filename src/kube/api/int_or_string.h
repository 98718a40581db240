// IntOrString: Kubernetes' intstr.IntOrString, a field that holds either an integer or a string
// (PodDisruptionBudget minAvailable/maxUnavailable: `2` or `"50%"`).
//
// Threading: a plain value type and pure functions; safe to use from any thread as values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <boost/json/fwd.hpp>

#include "base/result.h"

namespace nmo::kube {

// Either an integer (is_int, int_value) or a string (str_value), like the JSON it came from.
struct IntOrString {
  bool is_int = true;
  std::int64_t int_value = 0;
  std::string str_value;

  // The integer form.
  [[nodiscard]] static IntOrString from_int(std::int64_t value) { return {true, value, {}}; }
  // The string form.
  [[nodiscard]] static IntOrString from_string(std::string value) {
    return {false, 0, std::move(value)};
  }

  // "2" or "50%": the integer in decimal, or the string as is.
  [[nodiscard]] std::string to_string() const {
    return is_int ? std::to_string(int_value) : str_value;
  }

  friend bool operator==(const IntOrString&, const IntOrString&) = default;
};

// Decodes a JSON integer or string. Anything else (null included: callers treat an absent field
// themselves) is ErrorCode::kInvalid: "expected an integer or a string, got bool".
[[nodiscard]] Result<IntOrString> decode_int_or_string(const boost::json::value& value);

}  // namespace nmo::kube
