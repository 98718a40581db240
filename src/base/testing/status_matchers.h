// GoogleTest helpers for Result<T> (the Abseil StatusOr / LLVM Expected test helpers' shape).
//
//   EXPECT_OK(f());                          // non-fatal; prints Error::describe() on failure
//   ASSERT_OK(f());                          // fatal: returns from the test on failure
//   ASSERT_OK_AND_ASSIGN(auto node, get());  // fatal on error, else moves the value into lhs
//
// Test-only: link nmo::base_testing. Threading: like any gtest assertion, use them on the test's
// own thread (gtest assertions are thread-safe only where gtest's own pthread support is on).
#pragma once

#include <utility>

#include <gtest/gtest.h>

#include "base/result.h"

namespace nmo::testing_internal {

// Predicate formatter behind EXPECT_OK / ASSERT_OK.
template <typename T>
::testing::AssertionResult result_is_ok(const char* expr_text, const Result<T>& result) {
  if (result.has_value()) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "Expected " << expr_text << " to be OK, got: " << result.error().describe();
}

// The same, reporting a fixed expression text; ASSERT_OK_AND_ASSIGN uses it so the message names
// the caller's expression rather than the macro's temporary.
struct ResultIsOk {
  const char* expr_text;

  template <typename T>
  ::testing::AssertionResult operator()(const char* /*unused*/, const Result<T>& result) const {
    return result_is_ok(expr_text, result);
  }
};

}  // namespace nmo::testing_internal

// Non-fatal: the test continues after a failure.
#define EXPECT_OK(...) EXPECT_PRED_FORMAT1(::nmo::testing_internal::result_is_ok, (__VA_ARGS__))

// Fatal: returns from the current function (which must return void) after a failure.
#define ASSERT_OK(...) ASSERT_PRED_FORMAT1(::nmo::testing_internal::result_is_ok, (__VA_ARGS__))

// Fatal on error; otherwise moves the value into `lhs`, which may declare a variable. Expands to
// several statements, like NMO_TRY_ASSIGN.
#define ASSERT_OK_AND_ASSIGN(lhs, ...) \
  NMO_INTERNAL_ASSERT_OK_AND_ASSIGN(NMO_INTERNAL_CONCAT(nmo_assert_ok_, __LINE__), lhs, __VA_ARGS__)

#define NMO_INTERNAL_ASSERT_OK_AND_ASSIGN(tmp, lhs, ...)                         \
  auto tmp = (__VA_ARGS__);                                                      \
  ASSERT_PRED_FORMAT1((::nmo::testing_internal::ResultIsOk{#__VA_ARGS__}), tmp); \
  lhs = ::std::move(tmp).value()
