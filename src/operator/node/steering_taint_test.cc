#include "operator/node/steering_taint.h"

#include <optional>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/client/testing/json_patch.h"

namespace nmo::op {
namespace {

namespace json = boost::json;

// node-worker-05 as the API server returns it, with another tool's PreferNoSchedule taint and a
// NoExecute taint of someone else.
constexpr const char* kTainted = R"json({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "node-worker-05", "resourceVersion": "4242"},
  "spec": {"taints": [
    {"key": "kured.dev/reboot", "effect": "PreferNoSchedule"},
    {"key": "dedicated", "value": "gpu", "effect": "NoExecute", "timeAdded": "2026-11-30T08:00:00Z"}
  ]}
})json";

constexpr const char* kUntainted = R"json({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "node-worker-06", "resourceVersion": "77"},
  "spec": {}
})json";

kube::Node project(const json::value& document) {
  Result<kube::Node> node = kube::decode_node(document);
  EXPECT_TRUE(node.has_value()) << node.error().describe();
  return node.has_value() ? std::move(node).value() : kube::Node{};
}

// The node's taints as key[=value]:effect.
std::vector<std::string> taint_texts(const json::value& document) {
  std::vector<std::string> texts;
  for (const kube::Taint& taint : project(document).taints) {
    texts.push_back(taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" +
                    taint.effect);
  }
  return texts;
}

// `document` with `patch` applied as the API server applies a JSON Patch.
json::value applied(const json::value& document, const json::array& patch) {
  Result<json::value> result = kube::testing::apply_json_patch(document, patch);
  EXPECT_OK(result);
  return result.has_value() ? std::move(result).value() : json::value();
}

TEST(SteeringPatchTest, AddsTheTaintBehindTheTestOfTheTaintsAsRead) {
  const json::value document = json::parse(kTainted);
  const std::optional<json::array> patch = steering_patch(project(document), true);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(json::serialize(*patch),
            R"([{"op":"test","path":"/spec/taints","value":[)"
            R"({"key":"kured.dev/reboot","effect":"PreferNoSchedule"},)"
            R"({"key":"dedicated","value":"gpu","effect":"NoExecute",)"
            R"("timeAdded":"2026-11-30T08:00:00Z"}]},)"
            R"({"op":"replace","path":"/spec/taints","value":[)"
            R"({"key":"kured.dev/reboot","effect":"PreferNoSchedule"},)"
            R"({"key":"dedicated","value":"gpu","effect":"NoExecute",)"
            R"("timeAdded":"2026-11-30T08:00:00Z"},)"
            R"({"key":"nodemaintenance.medik8s.io/planned","effect":"PreferNoSchedule"}]}])");
  EXPECT_EQ(
      taint_texts(applied(document, *patch)),
      (std::vector<std::string>{"kured.dev/reboot:PreferNoSchedule", "dedicated=gpu:NoExecute",
                                "nodemaintenance.medik8s.io/planned:PreferNoSchedule"}));
}

TEST(SteeringPatchTest, AddsTheTaintToANodeWithoutTaintsBehindTheResourceVersion) {
  const json::value document = json::parse(kUntainted);
  const std::optional<json::array> patch = steering_patch(project(document), true);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(json::serialize(*patch),
            R"([{"op":"test","path":"/metadata/resourceVersion","value":"77"},)"
            R"({"op":"add","path":"/spec/taints","value":[)"
            R"({"key":"nodemaintenance.medik8s.io/planned","effect":"PreferNoSchedule"}]}])");
  EXPECT_EQ(taint_texts(applied(document, *patch)),
            std::vector<std::string>{"nodemaintenance.medik8s.io/planned:PreferNoSchedule"});
}

TEST(SteeringPatchTest, RemovesOnlyOursLeavingEveryOtherTaint) {
  const json::value tainted =
      applied(json::parse(kTainted), *steering_patch(project(json::parse(kTainted)), true));
  const std::optional<json::array> patch = steering_patch(project(tainted), false);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(
      taint_texts(applied(tainted, *patch)),
      (std::vector<std::string>{"kured.dev/reboot:PreferNoSchedule", "dedicated=gpu:NoExecute"}));
}

TEST(SteeringPatchTest, NeverAddsASecondTaintOfOurs) {
  // Ours with a value somebody gave it is still ours: nothing is added beside it.
  json::value document = json::parse(kUntainted);
  document.as_object()["spec"] =
      json::parse(R"({"taints":[{"key":"nodemaintenance.medik8s.io/planned","value":"x",)"
                  R"("effect":"PreferNoSchedule"}]})");
  EXPECT_EQ(steering_patch(project(document), true), std::nullopt);
  // The same key with another effect is not ours: ours is added beside it, and it stays.
  document.as_object()["spec"] = json::parse(
      R"({"taints":[{"key":"nodemaintenance.medik8s.io/planned","effect":"NoSchedule"}]})");
  const std::optional<json::array> patch = steering_patch(project(document), true);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(taint_texts(applied(document, *patch)),
            (std::vector<std::string>{"nodemaintenance.medik8s.io/planned:NoSchedule",
                                      "nodemaintenance.medik8s.io/planned:PreferNoSchedule"}));
  EXPECT_EQ(steering_patch(project(applied(document, *patch)), true), std::nullopt);
}

TEST(SteeringPatchTest, NothingWhenTheNodeIsAlreadyAsWanted) {
  EXPECT_EQ(steering_patch(project(json::parse(kTainted)), false), std::nullopt);
  EXPECT_EQ(steering_patch(project(json::parse(kUntainted)), false), std::nullopt);
  const kube::Node node = project(json::parse(kTainted));
  EXPECT_FALSE(has_steering_taint(node));
}

TEST(SteeringPatchTest, AConcurrentTaintChangeFailsTheTest) {
  const json::value document = json::parse(kTainted);
  const std::optional<json::array> patch = steering_patch(project(document), true);
  ASSERT_TRUE(patch.has_value());
  // The NodeMaintenance controller cordons the node between our read and our write.
  json::value cordoned = document;
  cordoned.at("spec").at("taints").as_array().push_back(
      json::parse(R"({"key":"medik8s.io/drain","value":"draining","effect":"NoSchedule"})"));
  const Result<json::value> result = kube::testing::apply_json_patch(cordoned, *patch);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalid);
}

}  // namespace
}  // namespace nmo::op
