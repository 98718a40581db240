#include "base/testing/status_matchers.h"

#include <string>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace nmo {
namespace {

Result<int> ok_value() { return 5; }
Result<int> not_found() { return Error(ErrorCode::kNotFound, "no such node", 404); }
Result<void> ok_void() { return {}; }

TEST(StatusMatchersTest, PassOnSuccess) {
  EXPECT_OK(ok_value());
  EXPECT_OK(ok_void());
  ASSERT_OK(ok_value());
  ASSERT_OK_AND_ASSIGN(const int value, ok_value());
  EXPECT_EQ(value, 5);
}

TEST(StatusMatchersTest, ExpectOkFailsWithDescription) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(not_found()), "NotFound (404): no such node");
}

TEST(StatusMatchersTest, AssertOkFailsWithDescription) {
  EXPECT_FATAL_FAILURE(ASSERT_OK(not_found()), "NotFound (404): no such node");
}

void assign_from_error() {
  ASSERT_OK_AND_ASSIGN(const int value, not_found());
  ADD_FAILURE() << "not reached, got " << value;
}

TEST(StatusMatchersTest, AssertOkAndAssignFailsAndNamesTheExpression) {
  EXPECT_FATAL_FAILURE(assign_from_error(), "Expected not_found() to be OK");
}

}  // namespace
}  // namespace nmo
