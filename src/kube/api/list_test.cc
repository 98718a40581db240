#include "kube/api/list.h"

#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"

namespace nmo::kube {
namespace {

// The first page of `GET /api/v1/namespaces/shop/pods?limit=2`.
constexpr const char* kPodPage = R"json({
  "kind": "PodList",
  "apiVersion": "v1",
  "metadata": {
    "resourceVersion": "20391",
    "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjAzOTEsInN0YXJ0Ijoid2ViLTFcdTAwMDAifQ",
    "remainingItemCount": 3
  },
  "items": [
    {"metadata": {"name": "web-0", "namespace": "shop", "uid": "u-0", "resourceVersion": "20001"},
     "spec": {"nodeName": "node-worker-01", "containers": [{"name": "web"}]},
     "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
    {"metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "20002"},
     "spec": {"nodeName": "node-worker-02", "containers": [{"name": "web"}]},
     "status": {"phase": "Pending"}}
  ]
})json";

std::string pod_list_error(std::string_view body) {
  const Result<ListPage<Pod>> page = decode_list<Pod>(body);
  if (page.has_value()) {
    return "decoded";
  }
  return page.error().message;
}

TEST(DecodeListTest, PodPageWithContinue) {
  ASSERT_OK_AND_ASSIGN(const ListPage<Pod> page, decode_list<Pod>(kPodPage));
  EXPECT_EQ(page.resource_version, "20391");
  EXPECT_EQ(page.continue_token,
            "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjAzOTEsInN0YXJ0Ijoid2ViLTFcdTAwMDAifQ");
  EXPECT_EQ(page.remaining_item_count, 3);
  ASSERT_EQ(page.items.size(), 2U);
  EXPECT_EQ(page.items[0].meta.name, "web-0");
  EXPECT_EQ(page.items[0].node_name, "node-worker-01");
  EXPECT_TRUE(page.items[0].is_ready());
  EXPECT_EQ(page.items[1].meta.name, "web-1");
  EXPECT_EQ(page.items[1].phase, "Pending");
  EXPECT_FALSE(page.items[1].is_ready());
}

TEST(DecodeListTest, LastPageOfNodes) {
  ASSERT_OK_AND_ASSIGN(const ListPage<Node> page, decode_list<Node>(R"json({
    "kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "99000"},
    "items": [{"metadata": {"name": "node-master-01"}, "spec": {"unschedulable": true}}]})json"));
  EXPECT_EQ(page.resource_version, "99000");
  EXPECT_EQ(page.continue_token, "");
  EXPECT_EQ(page.remaining_item_count, std::nullopt);
  ASSERT_EQ(page.items.size(), 1U);
  EXPECT_TRUE(page.items[0].unschedulable);
}

TEST(DecodeListTest, EmptyAndNullItems) {
  ASSERT_OK_AND_ASSIGN(
      const ListPage<Pod> empty,
      decode_list<Pod>(
          R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]})"));
  EXPECT_TRUE(empty.items.empty());
  EXPECT_EQ(empty.resource_version, "5");
  ASSERT_OK_AND_ASSIGN(
      const ListPage<Pod> null,
      decode_list<Pod>(R"({"kind":"PodList","metadata":{"resourceVersion":"6"},"items":null})"));
  EXPECT_TRUE(null.items.empty());
}

TEST(DecodeListTest, BadItemNamesIndexAndName) {
  const Result<ListPage<Pod>> page = decode_list<Pod>(R"json({"kind": "PodList", "items": [
    {"metadata": {"name": "ok", "namespace": "shop"}},
    {"metadata": {"name": "ok-too"}},
    {"metadata": {"name": "web-1", "namespace": "shop"}, "spec": {"nodeName": 7}}]})json");
  ASSERT_FALSE(page.has_value());
  EXPECT_EQ(page.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(page.error().message,
            "items[2] (shop/web-1): spec.nodeName: expected a string, got number");
  EXPECT_EQ(pod_list_error(R"({"items": [{"metadata": {"namespace": 5}}]})"),
            "items[0]: metadata.namespace: expected a string, got number");
  EXPECT_EQ(pod_list_error(R"({"items": [{}, 3]})"), "items[1]: expected an object, got number");
}

TEST(DecodeListTest, BadEnvelope) {
  EXPECT_EQ(pod_list_error(R"({"kind": "PodList", "items": [)"),
            "malformed list (incomplete JSON at byte 30)");
  EXPECT_EQ(pod_list_error(R"({"kind":"Status","status":"Failure","code":500})"),
            R"(expected kind "PodList", got "Status")");
  EXPECT_EQ(pod_list_error(R"({"kind": "NodeList", "items": []})"),
            R"(expected kind "PodList", got "NodeList")");
  EXPECT_EQ(pod_list_error(R"({"items": {}})"), "items: expected an array, got object");
  EXPECT_EQ(pod_list_error(R"({"metadata": {"continue": 1}})"),
            "metadata.continue: expected a string, got number");
  EXPECT_EQ(pod_list_error("[]"), "expected an object, got array");
}

}  // namespace
}  // namespace nmo::kube
