#include "kube/api/int_or_string.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

TEST(IntOrStringTest, DecodesBothForms) {
  ASSERT_OK_AND_ASSIGN(const IntOrString number, decode_int_or_string(boost::json::parse("3")));
  EXPECT_TRUE(number.is_int);
  EXPECT_EQ(number.int_value, 3);
  EXPECT_EQ(number.to_string(), "3");
  ASSERT_OK_AND_ASSIGN(const IntOrString percent,
                       decode_int_or_string(boost::json::parse(R"("25%")")));
  EXPECT_FALSE(percent.is_int);
  EXPECT_EQ(percent.str_value, "25%");
  EXPECT_EQ(percent.to_string(), "25%");
  EXPECT_NE(IntOrString::from_int(0), IntOrString::from_string("0"));
}

TEST(IntOrStringTest, RejectsOtherTypes) {
  for (const char* json : {"null", "true", "[]", "{}"}) {
    const Result<IntOrString> value = decode_int_or_string(boost::json::parse(json));
    ASSERT_FALSE(value.has_value()) << json;
    EXPECT_EQ(value.error().code, ErrorCode::kInvalid);
  }
  const Result<IntOrString> fraction = decode_int_or_string(boost::json::parse("0.5"));
  ASSERT_FALSE(fraction.has_value());
  EXPECT_EQ(fraction.error().message, "expected an integer, got number");
  const Result<IntOrString> boolean = decode_int_or_string(boost::json::parse("false"));
  ASSERT_FALSE(boolean.has_value());
  EXPECT_EQ(boolean.error().message, "expected an integer or a string, got bool");
}

}  // namespace
}  // namespace nmo::kube
