#include "kube/config/base64.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace nmo::kube {
namespace {

TEST(Base64Test, EncodesRfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(Base64Test, DecodesRfc4648Vectors) {
  EXPECT_EQ(base64_decode(""), std::optional<std::string>(""));
  EXPECT_EQ(base64_decode("Zg=="), std::optional<std::string>("f"));
  EXPECT_EQ(base64_decode("Zm8="), std::optional<std::string>("fo"));
  EXPECT_EQ(base64_decode("Zm9v"), std::optional<std::string>("foo"));
  EXPECT_EQ(base64_decode("Zm9vYmFy"), std::optional<std::string>("foobar"));
}

TEST(Base64Test, DecodesBinaryAndTheWholeAlphabet) {
  const std::string bytes("\x00\xff\xfe+/\x80", 6);
  EXPECT_EQ(base64_encode(bytes), "AP/+Ky+A");
  EXPECT_EQ(base64_decode("AP/+Ky+A"), std::optional<std::string>(bytes));
  EXPECT_EQ(base64_decode("+/+/"), std::optional<std::string>("\xfb\xff\xbf"));
}

TEST(Base64Test, SkipsLineBreaksLikeGo) {
  EXPECT_EQ(base64_decode("Zm9v\nYmFy\r\n"), std::optional<std::string>("foobar"));
  EXPECT_EQ(base64_decode("Z\r\nm8="), std::optional<std::string>("fo"));
  EXPECT_EQ(base64_decode("\n"), std::optional<std::string>(""));
}

TEST(Base64Test, RejectsMissingPadding) {
  EXPECT_EQ(base64_decode("Zg"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm8"), std::nullopt);
  EXPECT_EQ(base64_decode("Z"), std::nullopt);
}

TEST(Base64Test, RejectsMisplacedPadding) {
  EXPECT_EQ(base64_decode("Zg==Zg=="), std::nullopt);
  EXPECT_EQ(base64_decode("Z==="), std::nullopt);
  EXPECT_EQ(base64_decode("===="), std::nullopt);
  EXPECT_EQ(base64_decode("Z=g="), std::nullopt);
  EXPECT_EQ(base64_decode("=Zg="), std::nullopt);
}

TEST(Base64Test, RejectsForeignCharacters) {
  EXPECT_EQ(base64_decode("Zm9v YmFy"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9v\tYmFy"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9-"), std::nullopt);  // URL alphabet
  EXPECT_EQ(base64_decode("Zm9_"), std::nullopt);
  EXPECT_EQ(base64_decode(std::string("Zm9\0", 4)), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9\xc3"), std::nullopt);
}

TEST(Base64Test, RejectsNonCanonicalTrailingBits) {
  EXPECT_EQ(base64_decode("Zh=="), std::nullopt);  // "Zg==" with a stray low bit
  EXPECT_EQ(base64_decode("Zm9="), std::nullopt);  // "Zm8=" with a stray low bit
}

TEST(Base64Test, RoundTripsEveryLength) {
  std::string bytes;
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(base64_decode(base64_encode(bytes)), std::optional<std::string>(bytes)) << i;
    bytes.push_back(static_cast<char>(i * 37 + 11));
  }
}

}  // namespace
}  // namespace nmo::kube
