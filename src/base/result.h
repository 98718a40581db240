// Result<T>: a value of type T or an Error, with std::expected's API shape.
//
// Library code returns Result instead of throwing. We cannot use std::expected itself: libstdc++
// 12 has it only under -std=c++2b and Clang 14 rejects it even then
// (docs/adr/0010-errors-result-type.md). The names follow std::expected (has_value, value, error,
// value_or, and_then, transform) so a later switch is a search-and-replace. Two deliberate
// differences:
//   - an Error converts implicitly into any Result (`return Error(ErrorCode::kInvalid, "...")`),
//     there is no std::unexpected wrapper;
//   - calling value() on an error, or error() on a value, is a broken invariant and aborts via
//     NMO_CHECK (std::expected would throw or be undefined behaviour). Test with has_value() or
//     `if (result)` first, or use NMO_TRY / NMO_TRY_ASSIGN to pass errors up.
//
// Threading: a plain value type, like std::variant. Distinct objects may be used from different
// threads; one object may be read concurrently but not written concurrently.
#pragma once

#include <concepts>
#include <functional>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/check.h"
#include "base/error.h"

namespace nmo {

template <typename T>
class Result;
// Declared before the primary template's members name Result<void>, so no compiler instantiates
// the primary template for void (Clang does so eagerly).
template <>
class Result<void>;

namespace internal {

template <typename T>
inline constexpr bool kIsResult = false;
template <typename T>
inline constexpr bool kIsResult<Result<T>> = true;

// U can initialise the value of a Result<T> and is not one of the types that select another
// constructor (the Result itself, Error, std::in_place_t). Those are tested first so that the
// constructible_from check never recurses into Result's own constructors.
template <typename U, typename T>
concept ValueFor =
    !std::same_as<std::remove_cvref_t<U>, Result<T>> &&
    !std::same_as<std::remove_cvref_t<U>, Error> &&
    !std::same_as<std::remove_cvref_t<U>, std::in_place_t> && std::constructible_from<T, U>;

}  // namespace internal

// Holds either a T ("has a value") or an Error. [[nodiscard]]: dropping a Result silently drops
// its error; write `(void)f();` with a comment where that is really intended.
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported; return a pointer");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Error>, "Result<Error> is ambiguous");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, std::in_place_t>);

 public:
  using value_type = T;
  using error_type = Error;

  // A value-initialised T (std::expected does the same).
  Result() requires std::default_initializable<T> : storage_(std::in_place_index<0>) {}

  // A value. Implicit when U converts implicitly to T, so `return value;` works.
  template <internal::ValueFor<T> U = T>
  explicit(!std::convertible_to<U, T>) Result(U&& value)  // NOLINT(bugprone-forwarding-reference-*)
      : storage_(std::in_place_index<0>, std::forward<U>(value)) {}

  // A value constructed in place from `args`.
  template <typename... Args>
  explicit Result(std::in_place_t /*tag*/, Args&&... args)
      : storage_(std::in_place_index<0>, std::forward<Args>(args)...) {}

  // An error. Implicit so that `return error;` works in any function returning a Result.
  Result(const Error& error) : storage_(std::in_place_index<1>, error) {}        // NOLINT
  Result(Error&& error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  // True when the Result holds a value.
  [[nodiscard]] bool has_value() const noexcept { return storage_.index() == 0; }
  // Same as has_value(): `if (auto r = f()) use(*r);`.
  explicit operator bool() const noexcept { return has_value(); }

  // The value. Aborts (NMO_CHECK) when the Result holds an error.
  [[nodiscard]] T& value() & { return *checked_value(); }
  [[nodiscard]] const T& value() const& { return *checked_value(); }
  [[nodiscard]] T&& value() && { return std::move(*checked_value()); }

  // The error. Aborts (NMO_CHECK) when the Result holds a value.
  [[nodiscard]] Error& error() & { return *checked_error(); }
  [[nodiscard]] const Error& error() const& { return *checked_error(); }
  [[nodiscard]] Error&& error() && { return std::move(*checked_error()); }

  // Access to the value; like value(), these abort when the Result holds an error.
  [[nodiscard]] T& operator*() & { return *checked_value(); }
  [[nodiscard]] const T& operator*() const& { return *checked_value(); }
  [[nodiscard]] T&& operator*() && { return std::move(*checked_value()); }
  [[nodiscard]] T* operator->() { return checked_value(); }
  [[nodiscard]] const T* operator->() const { return checked_value(); }

  // The value, or `fallback` converted to T when the Result holds an error.
  template <typename U>
  [[nodiscard]] T value_or(U&& fallback) const& {
    if (has_value()) {
      return **this;
    }
    return static_cast<T>(std::forward<U>(fallback));
  }
  template <typename U>
  [[nodiscard]] T value_or(U&& fallback) && {
    if (has_value()) {
      return std::move(**this);
    }
    return static_cast<T>(std::forward<U>(fallback));
  }

  // Chains a fallible step: returns f(value), which must itself be a Result<U>, or passes this
  // error through unchanged.
  template <typename F>
  auto and_then(F&& f) & {
    return and_then_impl(*this, std::forward<F>(f));
  }
  template <typename F>
  auto and_then(F&& f) const& {
    return and_then_impl(*this, std::forward<F>(f));
  }
  template <typename F>
  auto and_then(F&& f) && {
    return and_then_impl(std::move(*this), std::forward<F>(f));
  }

  // Maps the value: returns Result<U>{f(value)} (Result<void> when f returns void), or passes
  // this error through unchanged.
  template <typename F>
  auto transform(F&& f) & {
    return transform_impl(*this, std::forward<F>(f));
  }
  template <typename F>
  auto transform(F&& f) const& {
    return transform_impl(*this, std::forward<F>(f));
  }
  template <typename F>
  auto transform(F&& f) && {
    return transform_impl(std::move(*this), std::forward<F>(f));
  }

 private:
  T* checked_value() {
    NMO_CHECK(has_value(), "Result::value() on an error: " + std::get_if<1>(&storage_)->describe());
    return std::get_if<0>(&storage_);
  }
  const T* checked_value() const {
    NMO_CHECK(has_value(), "Result::value() on an error: " + std::get_if<1>(&storage_)->describe());
    return std::get_if<0>(&storage_);
  }
  Error* checked_error() {
    NMO_CHECK(!has_value(), "Result::error() on a value");
    return std::get_if<1>(&storage_);
  }
  const Error* checked_error() const {
    NMO_CHECK(!has_value(), "Result::error() on a value");
    return std::get_if<1>(&storage_);
  }

  template <typename Self, typename F>
  static auto and_then_impl(Self&& self, F&& f) {
    using Next = std::remove_cvref_t<std::invoke_result_t<F, decltype(*std::forward<Self>(self))>>;
    static_assert(internal::kIsResult<Next>, "and_then: the function must return a Result");
    if (!self.has_value()) {
      return Next(std::forward<Self>(self).error());
    }
    return std::invoke(std::forward<F>(f), *std::forward<Self>(self));
  }

  template <typename Self, typename F>
  static auto transform_impl(Self&& self, F&& f) {
    using U = std::remove_cv_t<std::invoke_result_t<F, decltype(*std::forward<Self>(self))>>;
    if (!self.has_value()) {
      return Result<U>(std::forward<Self>(self).error());
    }
    if constexpr (std::is_void_v<U>) {
      std::invoke(std::forward<F>(f), *std::forward<Self>(self));
      return Result<U>();  // Result<void>, spelled dependently: it is incomplete here
    } else {
      return Result<U>(std::invoke(std::forward<F>(f), *std::forward<Self>(self)));
    }
  }

  std::variant<T, Error> storage_;
};

// Success without a value, or an Error. A default-constructed Result<void> is success, so a
// function returning Result<void> ends with `return {};`.
template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;
  using error_type = Error;

  // Success.
  Result() noexcept = default;
  // An error. Implicit so that `return error;` works.
  Result(const Error& error) : storage_(std::in_place_index<1>, error) {}        // NOLINT
  Result(Error&& error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  // True on success.
  [[nodiscard]] bool has_value() const noexcept { return storage_.index() == 0; }
  // Same as has_value().
  explicit operator bool() const noexcept { return has_value(); }

  // Asserts success: aborts (NMO_CHECK) when the Result holds an error.
  void value() const {
    NMO_CHECK(has_value(), "Result::value() on an error: " + std::get_if<1>(&storage_)->describe());
  }

  // The error. Aborts (NMO_CHECK) on success.
  [[nodiscard]] Error& error() & { return *checked_error(); }
  [[nodiscard]] const Error& error() const& { return *checked_error(); }
  [[nodiscard]] Error&& error() && { return std::move(*checked_error()); }

  // Runs the next fallible step f() (which must return a Result) on success, or passes this
  // error through.
  template <typename F>
  auto and_then(F&& f) const& {
    using Next = std::remove_cvref_t<std::invoke_result_t<F>>;
    static_assert(internal::kIsResult<Next>, "and_then: the function must return a Result");
    if (!has_value()) {
      return Next(error());
    }
    return std::invoke(std::forward<F>(f));
  }
  template <typename F>
  auto and_then(F&& f) && {
    using Next = std::remove_cvref_t<std::invoke_result_t<F>>;
    static_assert(internal::kIsResult<Next>, "and_then: the function must return a Result");
    if (!has_value()) {
      return Next(std::move(*this).error());
    }
    return std::invoke(std::forward<F>(f));
  }

  // Returns Result<U>{f()} on success (Result<void> when f returns void), or passes this error
  // through.
  template <typename F>
  auto transform(F&& f) const& {
    return transform_impl(*this, std::forward<F>(f));
  }
  template <typename F>
  auto transform(F&& f) && {
    return transform_impl(std::move(*this), std::forward<F>(f));
  }

 private:
  Error* checked_error() {
    NMO_CHECK(!has_value(), "Result::error() on a value");
    return std::get_if<1>(&storage_);
  }
  const Error* checked_error() const {
    NMO_CHECK(!has_value(), "Result::error() on a value");
    return std::get_if<1>(&storage_);
  }

  template <typename Self, typename F>
  static auto transform_impl(Self&& self, F&& f) {
    using U = std::remove_cv_t<std::invoke_result_t<F>>;
    if (!self.has_value()) {
      return Result<U>(std::forward<Self>(self).error());
    }
    if constexpr (std::is_void_v<U>) {
      std::invoke(std::forward<F>(f));
      return Result<void>();
    } else {
      return Result<U>(std::invoke(std::forward<F>(f)));
    }
  }

  std::variant<std::monostate, Error> storage_;
};

}  // namespace nmo

// Propagation helpers for functions that return a Result. They are plain statements (no
// statement-expression extension), so they work with -Wpedantic on GCC and Clang. The NMO_CO_
// forms are the same for coroutines returning a Result (co_return instead of return); the
// expression may contain the co_await:
//   NMO_CO_TRY(co_await release_slot(name));
//   NMO_CO_TRY_ASSIGN(auto when, co_await write_status(nm, status));

// Evaluates `expr` (a Result) and returns its error from the enclosing function if it failed;
// a value, if any, is discarded.
//   NMO_TRY(client.delete_pod(key));
#define NMO_TRY(...)                              \
  do {                                            \
    auto nmo_try_result = (__VA_ARGS__);          \
    if (!nmo_try_result.has_value()) {            \
      return ::std::move(nmo_try_result).error(); \
    }                                             \
  } while (false)

// Evaluates `expr` (a Result<T>); on error returns the error from the enclosing function,
// otherwise moves the value into `lhs`, which may declare a variable:
//   NMO_TRY_ASSIGN(auto node, client.get_node(name));
//   NMO_TRY_ASSIGN(existing, parse(text));
// Expands to several statements: use it at block level, not as the body of an unbraced if.
#define NMO_TRY_ASSIGN(lhs, ...) \
  NMO_INTERNAL_TRY_ASSIGN(NMO_INTERNAL_CONCAT(nmo_try_assign_, __LINE__), lhs, __VA_ARGS__)

#define NMO_INTERNAL_CONCAT_INNER(a, b) a##b
#define NMO_INTERNAL_CONCAT(a, b) NMO_INTERNAL_CONCAT_INNER(a, b)
#define NMO_INTERNAL_TRY_ASSIGN(tmp, lhs, ...) \
  auto tmp = (__VA_ARGS__);                    \
  if (!tmp.has_value()) {                      \
    return ::std::move(tmp).error();           \
  }                                            \
  lhs = ::std::move(tmp).value()

#define NMO_CO_TRY(...)                                 \
  do {                                                  \
    auto nmo_co_try_result = (__VA_ARGS__);             \
    if (!nmo_co_try_result.has_value()) {               \
      co_return ::std::move(nmo_co_try_result).error(); \
    }                                                   \
  } while (false)

#define NMO_CO_TRY_ASSIGN(lhs, ...) \
  NMO_INTERNAL_CO_TRY_ASSIGN(NMO_INTERNAL_CONCAT(nmo_co_try_assign_, __LINE__), lhs, __VA_ARGS__)

#define NMO_INTERNAL_CO_TRY_ASSIGN(tmp, lhs, ...) \
  auto tmp = (__VA_ARGS__);                       \
  if (!tmp.has_value()) {                         \
    co_return ::std::move(tmp).error();           \
  }                                               \
  lhs = ::std::move(tmp).value()
