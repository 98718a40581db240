#include "cli/text.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace nmo::cli {
namespace {

using std::chrono::seconds;

TEST(FormatTable, AlignsColumnsLikeKubectl) {
  EXPECT_EQ(format_table({"NAME", "PHASE"}, {{"maintenance-worker-01", "Running"}, {"m2", ""}}),
            "NAME                    PHASE\n"
            "maintenance-worker-01   Running\n"
            "m2\n");
}

TEST(FormatAge, FollowsKubectlHumanDuration) {
  EXPECT_EQ(format_age(seconds(-5)), "0s");
  EXPECT_EQ(format_age(seconds(45)), "45s");
  EXPECT_EQ(format_age(seconds(119)), "119s");
  EXPECT_EQ(format_age(seconds(330)), "5m30s");
  EXPECT_EQ(format_age(seconds(600)), "10m");
  EXPECT_EQ(format_age(seconds(3 * 3600 + 20 * 60)), "3h20m");
  EXPECT_EQ(format_age(seconds(30 * 3600)), "30h");
  EXPECT_EQ(format_age(seconds(5 * 86400 + 3 * 3600)), "5d3h");
  EXPECT_EQ(format_age(seconds(40 * 86400)), "40d");
  EXPECT_EQ(format_age(seconds(800 * 86400)), "2y");
}

TEST(FormatElapsed, KeepsSeconds) {
  EXPECT_EQ(format_elapsed(seconds(7)), "7s");
  EXPECT_EQ(format_elapsed(seconds(65)), "1m05s");
  EXPECT_EQ(format_elapsed(seconds(2 * 3600 + 3 * 60 + 10)), "2h03m10s");
}

TEST(ToYaml, BlockStyleWithQuotingWhereNeeded) {
  const auto value = boost::json::parse(
      R"({"name":"m1","open":true,"count":3,"items":[{"a":"yes"}],"empty":[],"none":null})");
  const std::string yaml = to_yaml(value);
  EXPECT_NE(yaml.find("name: m1\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("open: true\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("count: 3\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("- a: \"yes\"\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("empty: []\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("none: ~\n"), std::string::npos) << yaml;
}

TEST(CutToColumns, CutsCharactersNotBytes) {
  EXPECT_EQ(cut_to_columns("worker-01 Running", 9), "worker-01");
  EXPECT_EQ(cut_to_columns("short", 40), "short");
  EXPECT_EQ(cut_to_columns("short", 5), "short");
  EXPECT_EQ(cut_to_columns("", 0), "");
  // "—" is three bytes, one character: kept whole or left out whole.
  EXPECT_EQ(cut_to_columns("plan: Running — 1 of 2", 15), "plan: Running —");
  EXPECT_EQ(cut_to_columns("plan: Running — 1 of 2", 14), "plan: Running ");
  EXPECT_EQ(cut_to_columns("—", 0), "");
}

TEST(ToPrettyJson, RoundTrips) {
  const auto value = boost::json::parse(R"({"a":[1,{"b":"c"}],"d":{}})");
  const std::string text = to_pretty_json(value);
  EXPECT_EQ(boost::json::parse(text), value);
  EXPECT_NE(text.find("\n  \"a\": [\n    1,"), std::string::npos) << text;
}

}  // namespace
}  // namespace nmo::cli
