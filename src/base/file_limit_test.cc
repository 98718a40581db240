#include "base/file_limit.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

namespace nmo {
namespace {

// Restores the process's limit after each test.
class OpenFileLimitTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0); }
  void TearDown() override { EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &saved_), 0); }
  rlimit saved_{};
};

TEST_F(OpenFileLimitTest, RaisesALoweredSoftLimitToTheHardOne) {
  if (saved_.rlim_max < 128) GTEST_SKIP() << "hard limit " << saved_.rlim_max << " too low";
  rlimit lowered = saved_;
  lowered.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);

  const Result<OpenFileLimit> raised = raise_open_file_limit();

  ASSERT_TRUE(raised.has_value()) << raised.error().message;
  EXPECT_EQ(raised->before, 64U);
  EXPECT_EQ(raised->after, saved_.rlim_max);
  rlimit now{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, saved_.rlim_max);
  EXPECT_EQ(now.rlim_max, saved_.rlim_max);
}

TEST_F(OpenFileLimitTest, LeavesASoftLimitAtTheHardOneAlone) {
  rlimit full = saved_;
  full.rlim_cur = full.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &full), 0);

  const Result<OpenFileLimit> raised = raise_open_file_limit();

  ASSERT_TRUE(raised.has_value()) << raised.error().message;
  EXPECT_EQ(raised->before, saved_.rlim_max);
  EXPECT_EQ(raised->after, saved_.rlim_max);
}

}  // namespace
}  // namespace nmo
