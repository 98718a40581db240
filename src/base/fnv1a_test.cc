#include "base/fnv1a.h"

#include <gtest/gtest.h>

namespace nmo {
namespace {

TEST(Fnv1aTest, ReferenceValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(Fnv1aTest, HexKeepsLeadingZerosAndLowerCase) {
  EXPECT_EQ(fnv1a64_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a64_hex("foobar"), "85944171f73967e8");
  // Its hash is below 2^60: the leading zero stays.
  EXPECT_EQ(fnv1a64_hex("node-100"), "0a1010d2fb53e5bb");
}

}  // namespace
}  // namespace nmo
