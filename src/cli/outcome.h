// Outcome<T>: a value, or the Failure (cli/api_error.h) a command reports and exits with. What
// the plugin's readers return, so that every failure is already a one-line message with its
// exit status when it reaches the command.
//
// Threading: a plain value type.
#pragma once

#include <optional>
#include <utility>

#include "cli/api_error.h"

namespace nmo::cli {

template <typename T>
class Outcome {
 public:
  Outcome(T value) : value_(std::move(value)) {}              // NOLINT(google-explicit-constructor)
  Outcome(Failure failure) : failure_(std::move(failure)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] explicit operator bool() const noexcept { return value_.has_value(); }
  [[nodiscard]] T& operator*() { return *value_; }
  [[nodiscard]] T* operator->() { return &*value_; }
  [[nodiscard]] const Failure& failure() const { return failure_; }

 private:
  std::optional<T> value_;
  Failure failure_;
};

// Outcome<Done> for steps without a value.
struct Done {};

}  // namespace nmo::cli
