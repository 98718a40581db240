#include "base/check.h"

#include <string>

#include <gtest/gtest.h>

namespace nmo {
namespace {

TEST(CheckTest, PassingCheckDoesNotEvaluateMessage) {
  int evaluated = 0;
  // The analyzer rightly sees that the lambda is never called: that is what this test checks.
  auto message = [&evaluated] {  // NOLINT(clang-analyzer-deadcode.DeadStores)
    ++evaluated;
    return std::string("unused");
  };
  NMO_CHECK(1 + 1 == 2, message());
  EXPECT_EQ(evaluated, 0);
}

TEST(CheckDeathTest, FailingCheckPrintsLocationConditionAndMessage) {
  const int replicas = 0;
  EXPECT_DEATH(NMO_CHECK(replicas > 0, "replicas must be positive"),
               "check_test\\.cc:[0-9]+: NMO_CHECK\\(replicas > 0\\) failed: replicas must be "
               "positive");
}

TEST(CheckDeathTest, MessageMayBeBuiltAtRuntime) {
  const std::string name = "node-1";
  EXPECT_DEATH(NMO_CHECK(name.empty(), "unexpected name " + name), "unexpected name node-1");
}

}  // namespace
}  // namespace nmo
