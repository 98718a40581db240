#include "operator/budget/published_budget.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace nmo::op {
namespace {

std::optional<int> read(std::string_view annotation) {
  const std::string json =
      R"({"metadata": {"name": "nmo-budget", "annotations": {"nodemaintenance.medik8s.io/max-parallel-maintenances": ")" +
      std::string(annotation) + R"("}}})";
  auto lease = kube::decode_lease(boost::json::parse(json));
  EXPECT_TRUE(lease) << lease.error().describe();
  return lease ? published_max_parallel(*lease) : std::nullopt;
}

TEST(PublishedMaxParallelTest, WholeNumbersOfAtLeastOne) {
  EXPECT_EQ(read("3"), 3);
  EXPECT_EQ(read("1"), 1);
  EXPECT_EQ(read("0"), std::nullopt);
  EXPECT_EQ(read("-2"), std::nullopt);
  EXPECT_EQ(read("2x"), std::nullopt);
  EXPECT_EQ(read(""), std::nullopt);
  auto bare = kube::decode_lease(boost::json::parse(R"({"metadata": {"name": "nmo-budget"}})"));
  ASSERT_TRUE(bare);
  EXPECT_EQ(published_max_parallel(*bare), std::nullopt);
}

}  // namespace
}  // namespace nmo::op
