// ScopedEnv: sets (or unsets) an environment variable for the lifetime of the object and then
// restores the previous value. Test-only (nmo::kube_config_testing).
//
// Threading: setenv() is not thread-safe; use it only while no other thread reads the
// environment (a test body before it starts threads).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace nmo::kube::testing {

class ScopedEnv {
 public:
  // Sets `name` to `value`, or unsets it when `value` is std::nullopt.
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): see the header
    if (const char* old = std::getenv(name_.c_str()); old != nullptr) {
      previous_ = old;
    }
    apply(value);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { apply(previous_); }

 private:
  void apply(const std::optional<std::string>& value) const {
    if (value.has_value()) {
      ::setenv(name_.c_str(), value->c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
    } else {
      ::unsetenv(name_.c_str());  // NOLINT(concurrency-mt-unsafe)
    }
  }

  std::string name_;
  std::optional<std::string> previous_;
};

}  // namespace nmo::kube::testing
