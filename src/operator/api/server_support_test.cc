#include "operator/api/server_support.h"

#include <gtest/gtest.h>

namespace nmo::op {
namespace {

std::vector<std::string> features(int minor) {
  std::vector<std::string> names;
  for (const MissingFeature& missing : missing_features({.major = 1, .minor = minor})) {
    names.push_back(missing.since + " " + missing.feature);
  }
  return names;
}

TEST(MissingFeaturesTest, ByVersion) {
  EXPECT_EQ(features(kNewestTestedMinor), std::vector<std::string>{});
  EXPECT_EQ(features(31), std::vector<std::string>{});
  EXPECT_EQ(features(30), std::vector<std::string>{
                              "1.31 field selectors on custom resources (CRD selectableFields)"});
  EXPECT_EQ(features(kOldestTestedMinor),
            (std::vector<std::string>{
                "1.28 matchConditions in admission webhooks",
                "1.31 field selectors on custom resources (CRD selectableFields)"}));
}

TEST(MissingFeaturesTest, SaysWhatTheOperatorDoesInstead) {
  const std::vector<MissingFeature> missing = missing_features({.major = 1, .minor = 30});
  ASSERT_EQ(missing.size(), 1U);
  EXPECT_EQ(missing[0].instead,
            "install the CRD without selectableFields (deploy/before-1.31); the webhook finds a "
            "node's NodeMaintenances in a watched cache instead of a filtered list");
}

TEST(TestedRangeTest, NamesBothEnds) { EXPECT_EQ(tested_range(), "1.27 to 1.37"); }

TEST(UntestedVersionWarningTest, OnlyBelowTheOldestTested) {
  EXPECT_EQ(untested_version_warning({.major = 1, .minor = kOldestTestedMinor}), "");
  EXPECT_EQ(untested_version_warning({.major = 1, .minor = 40}), "");
  EXPECT_EQ(untested_version_warning({.major = 1, .minor = 25, .git_version = "v1.25.3"}),
            "Kubernetes v1.25.3 is older than 1.27, the oldest version this operator is tested "
            "on; it works as far as the server's API allows");
  EXPECT_EQ(untested_version_warning({.major = 1, .minor = 26}),
            "Kubernetes 1.26 is older than 1.27, the oldest version this operator is tested on; "
            "it works as far as the server's API allows");
}

}  // namespace
}  // namespace nmo::op
