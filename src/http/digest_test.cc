#include "http/digest.h"

#include <string>

#include <gtest/gtest.h>

namespace nmo::http {
namespace {

std::string hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    out.push_back(kDigits[byte >> 4U]);
    out.push_back(kDigits[byte & 0xfU]);
  }
  return out;
}

TEST(Sha256Test, MatchesTheStandardTestVectors) {
  // FIPS 180-2, appendix B.1, and the digest of nothing.
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256("abc").size(), 32U);
}

}  // namespace
}  // namespace nmo::http
