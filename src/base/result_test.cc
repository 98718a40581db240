#include "base/result.h"

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo {
namespace {

using ::testing::HasSubstr;

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') {
    return Error(ErrorCode::kInvalid, std::string("not a digit: ") + c);
  }
  return c - '0';
}

Result<void> require_positive(int n) {
  if (n <= 0) {
    return Error(ErrorCode::kInvalid, "not positive");
  }
  return {};
}

TEST(ResultTest, HoldsValue) {
  const Result<int> r = 7;
  EXPECT_TRUE(r.has_value());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.value(), 7);
  EXPECT_EQ(*r, 7);
}

TEST(ResultTest, HoldsError) {
  const Result<int> r = Error(ErrorCode::kNotFound, "gone fishing", 404);
  EXPECT_FALSE(r.has_value());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().http_status, 404);
  EXPECT_EQ(r.error().message, "gone fishing");
}

TEST(ResultTest, DefaultConstructedHoldsValueInitialisedValue) {
  const Result<int> r;
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 0);
}

TEST(ResultTest, ConvertsFromConvertibleValue) {
  const Result<std::string> r = "abc";
  EXPECT_EQ(r.value(), "abc");
}

TEST(ResultTest, InPlaceConstruction) {
  const Result<std::string> r(std::in_place, 3, 'x');
  EXPECT_EQ(r.value(), "xxx");
}

TEST(ResultTest, ArrowReachesMembers) {
  Result<std::string> r = std::string("hello");
  EXPECT_EQ(r->size(), 5U);
  r->append("!");
  EXPECT_EQ(*r, "hello!");
}

TEST(ResultTest, ValueCanBeMovedOut) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(42);
  const std::unique_ptr<int> owned = std::move(r).value();
  ASSERT_NE(owned, nullptr);
  EXPECT_EQ(*owned, 42);
}

TEST(ResultTest, ValueOr) {
  EXPECT_EQ(parse_digit('4').value_or(-1), 4);
  EXPECT_EQ(parse_digit('x').value_or(-1), -1);
  Result<std::string> err = Error(ErrorCode::kInternal, "boom");
  EXPECT_EQ(std::move(err).value_or("fallback"), "fallback");
}

TEST(ResultTest, AndThenChainsOnValue) {
  const auto doubled = parse_digit('3').and_then([](int n) -> Result<int> { return n * 2; });
  ASSERT_OK(doubled);
  EXPECT_EQ(*doubled, 6);
}

TEST(ResultTest, AndThenPropagatesErrorWithoutCalling) {
  bool called = false;
  const auto r = parse_digit('z').and_then([&called](int n) -> Result<int> {
    called = true;
    return n;
  });
  EXPECT_FALSE(called);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "not a digit: z");
}

TEST(ResultTest, AndThenCanFail) {
  const auto r = parse_digit('0').and_then(require_positive);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "not positive");
}

TEST(ResultTest, TransformMapsValueAndType) {
  const Result<std::string> r = parse_digit('5').transform([](int n) { return std::to_string(n); });
  ASSERT_OK(r);
  EXPECT_EQ(*r, "5");
}

TEST(ResultTest, TransformPropagatesError) {
  const Result<std::string> r = parse_digit('?').transform([](int n) { return std::to_string(n); });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalid);
}

TEST(ResultTest, TransformToVoid) {
  int seen = 0;
  const Result<void> r = parse_digit('8').transform([&seen](int n) { seen = n; });
  EXPECT_OK(r);
  EXPECT_EQ(seen, 8);
}

TEST(ResultTest, MoveOnlyValueThroughAndThen) {
  auto r = Result<std::unique_ptr<int>>(std::make_unique<int>(1))
               .and_then([](std::unique_ptr<int> p) -> Result<std::unique_ptr<int>> {
                 *p += 1;
                 return p;
               });
  ASSERT_OK(r);
  EXPECT_EQ(**r, 2);
}

TEST(ResultVoidTest, DefaultIsSuccess) {
  const Result<void> r;
  EXPECT_TRUE(r.has_value());
  EXPECT_TRUE(static_cast<bool>(r));
  r.value();  // does not abort
}

TEST(ResultVoidTest, HoldsError) {
  const Result<void> r = require_positive(-3);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalid);
}

TEST(ResultVoidTest, AndThenAndTransform) {
  const Result<int> next = require_positive(1).and_then([]() -> Result<int> { return 10; });
  ASSERT_OK(next);
  EXPECT_EQ(*next, 10);

  const Result<int> mapped = require_positive(0).transform([] { return 10; });
  ASSERT_FALSE(mapped.has_value());
  EXPECT_EQ(mapped.error().message, "not positive");
}

// NMO_TRY and NMO_TRY_ASSIGN.

Result<int> sum_digits(char a, char b) {
  NMO_TRY_ASSIGN(const int x, parse_digit(a));
  NMO_TRY_ASSIGN(const int y, parse_digit(b));
  return x + y;
}

Result<int> checked_sum(char a, char b) {
  NMO_TRY_ASSIGN(auto sum, sum_digits(a, b));
  NMO_TRY(require_positive(sum));
  return sum;
}

Result<std::string> assign_existing(char c) {
  std::string out = "initial";
  NMO_TRY_ASSIGN(out, parse_digit(c).transform([](int n) { return std::to_string(n * 11); }));
  return out;
}

TEST(ResultMacroTest, TryAssignPassesValues) {
  const Result<int> r = sum_digits('2', '3');
  ASSERT_OK(r);
  EXPECT_EQ(*r, 5);
}

TEST(ResultMacroTest, TryAssignReturnsFirstError) {
  const Result<int> r = sum_digits('a', 'b');
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "not a digit: a");
}

TEST(ResultMacroTest, TryAssignToExistingVariable) {
  EXPECT_EQ(assign_existing('3').value(), "33");
  EXPECT_FALSE(assign_existing('-').has_value());
}

TEST(ResultMacroTest, TryReturnsErrorOfVoidResult) {
  EXPECT_EQ(checked_sum('1', '2').value(), 3);
  const Result<int> r = checked_sum('0', '0');
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "not positive");
}

// Broken invariants abort rather than throw or return garbage.

TEST(ResultDeathTest, ValueOnErrorAborts) {
  const Result<int> r = Error(ErrorCode::kConflict, "stale", 409);
  EXPECT_DEATH((void)r.value(), HasSubstr("Result::value() on an error: Conflict (409): stale"));
}

TEST(ResultDeathTest, ErrorOnValueAborts) {
  const Result<int> r = 1;
  EXPECT_DEATH((void)r.error(), HasSubstr("Result::error() on a value"));
}

TEST(ResultDeathTest, VoidValueOnErrorAborts) {
  const Result<void> r = Error(ErrorCode::kTimeout, "slow");
  EXPECT_DEATH(r.value(), HasSubstr("Timeout: slow"));
}

// NMO_CO_TRY and NMO_CO_TRY_ASSIGN, in a coroutine that runs to completion at once and
// keeps what it co_returns.
template <typename T>
struct Eager {
  struct promise_type {
    std::optional<Result<T>> result;
    Eager get_return_object() {
      return Eager{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_value(Result<T> value) { result = std::move(value); }
    void unhandled_exception() { std::terminate(); }
  };
  explicit Eager(std::coroutine_handle<promise_type> h) : handle(h) {}
  // Movable (Clang 14 moves the object get_return_object() returns), never copied.
  Eager(Eager&& other) noexcept : handle(std::exchange(other.handle, nullptr)) {}
  Eager(const Eager&) = delete;
  Eager& operator=(const Eager&) = delete;
  Eager& operator=(Eager&&) = delete;
  ~Eager() {
    if (handle) handle.destroy();
  }
  Result<T> get() { return std::move(*handle.promise().result); }
  std::coroutine_handle<promise_type> handle;
};

// An awaitable that is ready at once with `value`.
template <typename T>
struct Ready {
  T value;
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  T await_resume() { return std::move(value); }
};

// The awaitables are named (see docs/development.md, "GCC 12 and temporaries in co_await").
Eager<int> co_checked_sum(char a, char b) {
  Ready<Result<int>> first{parse_digit(a)};
  Ready<Result<int>> second{parse_digit(b)};
  NMO_CO_TRY_ASSIGN(const int x, co_await first);
  NMO_CO_TRY_ASSIGN(const int y, co_await second);
  Ready<Result<void>> positive{require_positive(x + y)};
  NMO_CO_TRY(co_await positive);
  co_return x + y;
}

TEST(ResultMacroTest, CoroutineFormsPropagateErrorsAndPassValues) {
  EXPECT_EQ(*co_checked_sum('2', '3').get(), 5);
  const Result<int> bad_digit = co_checked_sum('2', 'x').get();
  ASSERT_FALSE(bad_digit.has_value());
  EXPECT_EQ(bad_digit.error().code, parse_digit('x').error().code);
  const Result<int> zero = co_checked_sum('0', '0').get();
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().message, "not positive");
}

}  // namespace
}  // namespace nmo
