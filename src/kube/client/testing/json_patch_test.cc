#include "kube/client/testing/json_patch.h"

#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube::testing {
namespace {

namespace json = boost::json;

json::value parse(const std::string& text) { return json::parse(text); }

// ---- RFC 7386 ----

// The examples of RFC 7386 appendix A.
TEST(MergePatch, FollowsTheRfcExamples) {
  const struct {
    const char* target;
    const char* patch;
    const char* result;
  } cases[] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", "null", "null"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(apply_merge_patch(parse(c.target), parse(c.patch)), parse(c.result))
        << c.target << " + " << c.patch;
  }
}

// ---- RFC 6902 ----

TEST(JsonPatch, AddsRemovesAndReplaces) {
  const json::value target = parse(R"({"metadata":{"finalizers":["a"]},"spec":{"x":1}})");
  ASSERT_OK_AND_ASSIGN(const json::value result, apply_json_patch(target, parse(R"([
    {"op":"add","path":"/metadata/finalizers/-","value":"b"},
    {"op":"add","path":"/metadata/finalizers/0","value":"first"},
    {"op":"add","path":"/metadata/labels","value":{"k":"v"}},
    {"op":"replace","path":"/spec/x","value":2},
    {"op":"remove","path":"/metadata/finalizers/1"}
  ])")));
  EXPECT_EQ(result, parse(R"({"metadata":{"finalizers":["first","b"],"labels":{"k":"v"}},
                              "spec":{"x":2}})"));
}

TEST(JsonPatch, MovesAndCopies) {
  ASSERT_OK_AND_ASSIGN(const json::value result,
                       apply_json_patch(parse(R"({"a":{"b":1},"c":[]})"), parse(R"([
    {"op":"copy","from":"/a/b","path":"/c/-"},
    {"op":"move","from":"/a","path":"/d"}
  ])")));
  EXPECT_EQ(result, parse(R"({"c":[1],"d":{"b":1}})"));
}

TEST(JsonPatch, EscapedPointerTokens) {
  ASSERT_OK_AND_ASSIGN(
      const json::value result,
      apply_json_patch(parse(R"({"metadata":{"annotations":{"a/b":"1","c~d":"2"}}})"), parse(R"([
    {"op":"replace","path":"/metadata/annotations/a~1b","value":"x"},
    {"op":"remove","path":"/metadata/annotations/c~0d"}
  ])")));
  EXPECT_EQ(result, parse(R"({"metadata":{"annotations":{"a/b":"x"}}})"));
}

TEST(JsonPatch, TestPassesOnEqualValuesWhateverTheirNumberType) {
  EXPECT_OK(apply_json_patch(parse(R"({"a":{"x":1,"y":[1.0]}})"),
                             parse(R"([{"op":"test","path":"/a","value":{"y":[1],"x":1.0}}])")));
  // A missing path tests equal to null (evanphx/json-patch).
  EXPECT_OK(apply_json_patch(parse("{}"), parse(R"([{"op":"test","path":"/a","value":null}])")));
}

TEST(JsonPatch, FailedTestIsInvalidAndNothingIsApplied) {
  const json::value target = parse(R"({"metadata":{"resourceVersion":"7"}})");
  const Result<json::value> result = apply_json_patch(target, parse(R"([
    {"op":"add","path":"/x","value":1},
    {"op":"test","path":"/metadata/resourceVersion","value":"6"}
  ])"));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(), Error(ErrorCode::kInvalid,
                                  "testing value /metadata/resourceVersion failed: test failed"));
}

TEST(JsonPatch, OperationsOnMissingPathsAreInvalid) {
  const json::value target = parse(R"({"a":[1]})");
  for (const char* patch : {
           R"([{"op":"remove","path":"/b"}])",
           R"([{"op":"remove","path":"/a/1"}])",
           R"([{"op":"replace","path":"/b","value":1}])",
           R"([{"op":"add","path":"/b/c","value":1}])",
           R"([{"op":"add","path":"/a/2","value":1}])",
           R"([{"op":"add","path":"/a/01","value":1}])",
           R"([{"op":"move","from":"/b","path":"/c"}])",
           R"([{"op":"move","from":"/a","path":"/a/0"}])",
           R"([{"op":"frobnicate","path":"/a"}])",
       }) {
    const Result<json::value> result = apply_json_patch(target, parse(patch));
    ASSERT_FALSE(result.has_value()) << patch;
    EXPECT_EQ(result.error().code, ErrorCode::kInvalid) << patch;
  }
}

TEST(JsonPatch, MalformedPatchesAreBadRequests) {
  for (const char* patch : {
           R"({"op":"add","path":"/a","value":1})",
           R"([{"path":"/a"}])",
           R"([{"op":"add","value":1}])",
           R"([{"op":"add","path":"/a"}])",
           R"([{"op":"copy","path":"/a"}])",
       }) {
    const Result<json::value> result = apply_json_patch(parse("{}"), parse(patch));
    ASSERT_FALSE(result.has_value()) << patch;
    EXPECT_EQ(result.error().code, ErrorCode::kBadRequest) << patch;
  }
}

TEST(JsonPatch, EmptyPathReplacesTheDocument) {
  ASSERT_OK_AND_ASSIGN(
      const json::value result,
      apply_json_patch(parse(R"({"a":1})"), parse(R"([{"op":"add","path":"","value":{"b":2}}])")));
  EXPECT_EQ(result, parse(R"({"b":2})"));
}

// ---- strategic merge patch ----

TEST(StrategicMergePatch, ConditionsMergeByType) {
  const json::value node = parse(R"({"status":{"conditions":[
    {"type":"Ready","status":"True","reason":"KubeletReady"},
    {"type":"MemoryPressure","status":"False"}
  ]}})");
  ASSERT_OK_AND_ASSIGN(const json::value result, apply_strategic_merge_patch(node, parse(R"({
    "status":{"conditions":[
      {"type":"Ready","status":"False","reason":null},
      {"type":"Maintenance","status":"True"}
    ]}})")));
  EXPECT_EQ(result, parse(R"({"status":{"conditions":[
    {"type":"Ready","status":"False"},
    {"type":"MemoryPressure","status":"False"},
    {"type":"Maintenance","status":"True"}
  ]}})"));
}

TEST(StrategicMergePatch, PatchDeleteRemovesTheItemWithThatKey) {
  const json::value node = parse(R"({"status":{"conditions":[
    {"type":"Ready","status":"True"},{"type":"Maintenance","status":"True"}]}})");
  ASSERT_OK_AND_ASSIGN(const json::value result, apply_strategic_merge_patch(node, parse(R"({
    "status":{"conditions":[{"type":"Maintenance","$patch":"delete"},
                            {"type":"Absent","$patch":"delete"}]}})")));
  EXPECT_EQ(result, parse(R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})"));
}

TEST(StrategicMergePatch, ListsWithoutARuleAreReplacedAsInAMergePatch) {
  const json::value node = parse(R"({"spec":{"taints":[{"key":"a","effect":"NoSchedule"}]},
                                     "metadata":{"labels":{"x":"1","y":"2"}}})");
  ASSERT_OK_AND_ASSIGN(const json::value result, apply_strategic_merge_patch(node, parse(R"({
    "spec":{"taints":[{"key":"b","effect":"NoExecute"}]},
    "metadata":{"labels":{"x":null,"z":"3"}}})")));
  EXPECT_EQ(result, parse(R"({"spec":{"taints":[{"key":"b","effect":"NoExecute"}]},
                              "metadata":{"labels":{"y":"2","z":"3"}}})"));
}

TEST(StrategicMergePatch, FinalizersAreASetAndDeleteFromPrimitiveListRemoves) {
  const json::value object = parse(R"({"metadata":{"finalizers":["a","b"]}})");
  ASSERT_OK_AND_ASSIGN(const json::value added, apply_strategic_merge_patch(object, parse(R"({
    "metadata":{"finalizers":["b","c"]}})")));
  EXPECT_EQ(added, parse(R"({"metadata":{"finalizers":["a","b","c"]}})"));
  ASSERT_OK_AND_ASSIGN(const json::value removed, apply_strategic_merge_patch(object, parse(R"({
    "metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})")));
  EXPECT_EQ(removed, parse(R"({"metadata":{"finalizers":["b"]}})"));
}

TEST(StrategicMergePatch, DirectivesReplaceRetainKeysAndSetElementOrder) {
  const json::value object = parse(R"({"spec":{"a":1,"b":2,"c":3},
    "status":{"conditions":[{"type":"A"},{"type":"B"}]}})");
  ASSERT_OK_AND_ASSIGN(const json::value result, apply_strategic_merge_patch(object, parse(R"({
    "spec":{"$retainKeys":["a","d"],"d":4},
    "status":{"$setElementOrder/conditions":[{"type":"B"},{"type":"A"}],
              "conditions":[{"$patch":"replace"},{"type":"C"}]}})")));
  EXPECT_EQ(result, parse(R"({"spec":{"a":1,"d":4},"status":{"conditions":[{"type":"C"}]}})"));
  ASSERT_OK_AND_ASSIGN(const json::value replaced, apply_strategic_merge_patch(object, parse(R"({
    "spec":{"$patch":"replace","z":0}})")));
  EXPECT_EQ(replaced.at("spec"), parse(R"({"z":0})"));
}

TEST(StrategicMergePatch, ItemWithoutItsMergeKeyIsABadRequest) {
  const Result<json::value> result =
      apply_strategic_merge_patch(parse(R"({"status":{"conditions":[]}})"),
                                  parse(R"({"status":{"conditions":[{"status":"True"}]}})"));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ErrorCode::kBadRequest);
  EXPECT_FALSE(apply_strategic_merge_patch(parse("{}"), parse("[]")).has_value());
}

}  // namespace
}  // namespace nmo::kube::testing
