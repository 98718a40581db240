#include <string>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"
#include "kube/api/internal/json_parse.h"

namespace nmo::kube::internal {
namespace {

TEST(FieldPathTest, Text) {
  const FieldPath root;
  EXPECT_EQ(root.str(), "");
  const FieldPath spec = root.field("spec");
  const FieldPath taints = spec.field("taints");
  const FieldPath second = taints.element(2);
  EXPECT_EQ(second.field("key").str(), "spec.taints[2].key");
  const FieldPath items = root.field("items");
  EXPECT_EQ(items.element(0).str(), "items[0]");
  EXPECT_EQ(root.element(4).str(), "[4]");
}

TEST(ParseJsonTest, ParsesIntoTheGivenStorage) {
  boost::json::monotonic_resource arena;
  ASSERT_OK_AND_ASSIGN(const boost::json::value value,
                       parse_json(" {\"a\": [1, 2]}\n", boost::json::storage_ptr(&arena)));
  EXPECT_EQ(value.storage().get(), &arena);
  EXPECT_EQ(value.at("a").as_array().size(), 2U);
}

TEST(ParseJsonTest, ErrorsCarryTheOffset) {
  const auto error_of = [](std::string_view text) {
    const Result<boost::json::value> value = parse_json(text, {});
    EXPECT_FALSE(value.has_value()) << text;
    return value.has_value() ? std::string() : value.error().message;
  };
  EXPECT_EQ(error_of(R"({"a":x})"), "syntax error at byte 5");
  EXPECT_EQ(error_of(R"({"a":1)"), "incomplete JSON at byte 6");
  EXPECT_EQ(error_of(""), "incomplete JSON at byte 0");
  EXPECT_EQ(error_of("{} {}"), "extra data at byte 3");
  EXPECT_EQ(error_of(std::string(65, '[') + std::string(65, ']')), "too deep at byte 64");
}

TEST(FindConditionEntryTest, TheEntryOfTheTypeWithItsReasonAndMessage) {
  const boost::json::value status = boost::json::parse(R"({"conditions": [
      {"type": "Ready", "status": "True"},
      {"type": 7},
      {"type": "LiveMigratable", "status": "False", "reason": "DisksNotLiveMigratable",
       "message": "PVC is not shared"}]})");
  const FieldPath root;
  const FieldPath at = root.field("status");
  const auto found = find_condition_entry(status.get_object(), "LiveMigratable", at);
  ASSERT_TRUE(found);
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->status, "False");
  EXPECT_EQ((*found)->reason, "DisksNotLiveMigratable");
  EXPECT_EQ((*found)->message, "PVC is not shared");
  const auto ready = find_condition_entry(status.get_object(), "Ready", at);
  ASSERT_TRUE(ready && ready->has_value());
  EXPECT_EQ((*ready)->reason, "");
  EXPECT_EQ(*condition_status(status.get_object(), "Ready", at), "True");
  const auto missing = find_condition_entry(status.get_object(), "Other", at);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(*condition_status(status.get_object(), "Other", at), "");

  const boost::json::value bad =
      boost::json::parse(R"({"conditions": [{"type": "Ready", "status": "True", "message": 1}]})");
  const auto error = find_condition_entry(bad.get_object(), "Ready", at);
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("status.conditions[0].message"), std::string::npos)
      << error.error().message;
}

}  // namespace
}  // namespace nmo::kube::internal
