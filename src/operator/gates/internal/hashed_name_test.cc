#include "operator/gates/internal/hashed_name.h"

#include <string>

#include <gtest/gtest.h>

namespace nmo::op::internal {
namespace {

TEST(HashedNameTest, FitsOrHashes) {
  EXPECT_EQ(fit_name("p-", "short", 20), "p-short");
  EXPECT_EQ(fit_name("p-", std::string(18, 'x'), 20), "p-" + std::string(18, 'x'));
  const std::string cut = fit_name("p-", "abcde-fghijklmnopqrstuvw", 24);
  EXPECT_EQ(cut.size(), 24U);
  EXPECT_EQ(cut.substr(0, 8), "p-abcde-");
  // Trailing '-' or '.' of the cut part is dropped so the name stays a DNS subdomain.
  const std::string dotted = fit_name("p-", "abcd.efghijklmnopqrstuvw", 24);
  EXPECT_EQ(dotted.substr(0, 7), "p-abcd-");
  EXPECT_EQ(dotted.size(), 23U);
}

}  // namespace
}  // namespace nmo::op::internal
