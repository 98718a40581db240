#include "http/message.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo::http {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(MethodTest, ToStringGivesTheRequestLineVerb) {
  EXPECT_EQ(to_string(Method::kGet), "GET");
  EXPECT_EQ(to_string(Method::kPost), "POST");
  EXPECT_EQ(to_string(Method::kPut), "PUT");
  EXPECT_EQ(to_string(Method::kPatch), "PATCH");
  EXPECT_EQ(to_string(Method::kDelete), "DELETE");
}

TEST(ResponseTest, HeaderIgnoresCaseAndReturnsTheFirstValue) {
  const Response response{.status = 200,
                          .headers = {{"Content-Type", "application/json"},
                                      {"Warning", "299 - \"first\""},
                                      {"warning", "299 - \"second\""}},
                          .body = ""};
  EXPECT_EQ(response.header("content-type"), "application/json");
  EXPECT_EQ(response.header("CONTENT-TYPE"), "application/json");
  EXPECT_EQ(response.header("WARNING"), "299 - \"first\"");
  EXPECT_EQ(response.header("Content-Length"), std::nullopt);
}

TEST(ResponseTest, HeaderValuesReturnsEveryValueInOrder) {
  const Response response{
      .status = 200, .headers = {{"Warning", "a"}, {"X-Other", "b"}, {"WARNING", "c"}}, .body = ""};
  EXPECT_THAT(response.header_values("warning"), ElementsAre("a", "c"));
  EXPECT_THAT(response.header_values("retry-after"), IsEmpty());
}

TEST(ResponseTest, HeaderNamesOfDifferentLengthDoNotMatch) {
  const Headers headers = {{"X-A", "1"}, {"X-AB", "2"}};
  EXPECT_EQ(find_header(headers, "x-ab"), "2");
  EXPECT_EQ(find_header(headers, "x-"), std::nullopt);
}

}  // namespace
}  // namespace nmo::http
