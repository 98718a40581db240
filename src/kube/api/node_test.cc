#include "kube/api/node.h"

#include <chrono>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::year;

// A cordoned control-plane node that lost its kubelet, as `kubectl get node -o json` prints it.
constexpr const char* kCordonedNode = R"json({
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {
    "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
    "creationTimestamp": "2026-11-01T00:00:00Z",
    "labels": {"kubernetes.io/hostname": "node-master-01", "kubernetes.io/os": "linux",
               "node-role.kubernetes.io/control-plane": ""},
    "name": "node-master-01",
    "resourceVersion": "99120",
    "uid": "5c0c1d2e-3f40-4152-8637-48596a7b8c9d"
  },
  "spec": {
    "podCIDR": "10.244.0.0/24",
    "taints": [
      {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"},
      {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable",
       "timeAdded": "2026-11-30T10:00:00Z"},
      {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable",
       "timeAdded": "2026-11-30T10:01:30Z"},
      {"effect": "NoSchedule", "key": "maintenance", "value": "planned"}
    ],
    "unschedulable": true
  },
  "status": {
    "addresses": [{"address": "10.0.0.1", "type": "InternalIP"}],
    "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
    "conditions": [
      {"lastHeartbeatTime": "2026-11-30T09:59:00Z", "lastTransitionTime": "2026-11-01T00:00:10Z",
       "message": "kubelet has sufficient memory available", "reason": "KubeletHasSufficientMemory",
       "status": "False", "type": "MemoryPressure"},
      {"lastHeartbeatTime": "2026-11-30T09:59:00Z", "lastTransitionTime": "2026-11-30T10:01:00Z",
       "message": "Kubelet stopped posting node status.", "reason": "NodeStatusUnknown",
       "status": "Unknown", "type": "Ready"}
    ],
    "nodeInfo": {"kubeletVersion": "v1.34.4"}
  }
})json";

std::string decode_error(const char* json) {
  const Result<Node> node = decode_node(boost::json::parse(json));
  if (node.has_value()) {
    return "decoded";
  }
  EXPECT_EQ(node.error().code, ErrorCode::kInvalid);
  return node.error().message;
}

TEST(DecodeNodeTest, CordonedUnreachableControlPlaneNode) {
  ASSERT_OK_AND_ASSIGN(const Node node, decode_node(boost::json::parse(kCordonedNode)));
  EXPECT_EQ(node.meta.name, "node-master-01");
  EXPECT_EQ(node.meta.namespace_, "");
  EXPECT_TRUE(node.meta.labels.contains("node-role.kubernetes.io/control-plane"));
  EXPECT_TRUE(node.unschedulable);
  const Time t0 = sys_days{year{2026} / 11 / 30} + hours{10};
  EXPECT_EQ(
      node.taints,
      (std::vector<Taint>{{"node-role.kubernetes.io/control-plane", "", "NoSchedule", std::nullopt},
                          {"node.kubernetes.io/unschedulable", "", "NoSchedule", t0},
                          {"node.kubernetes.io/unreachable", "", "NoExecute",
                           t0 + minutes{1} + std::chrono::seconds{30}},
                          {"maintenance", "planned", "NoSchedule", std::nullopt}}));
  EXPECT_EQ(node.ready_status(), "Unknown");
  EXPECT_FALSE(node.is_ready());
  ASSERT_EQ(node.conditions.size(), 2U);
  EXPECT_EQ(node.conditions[0],
            (NodeCondition{.type = "MemoryPressure",
                           .status = "False",
                           .reason = "KubeletHasSufficientMemory",
                           .message = "kubelet has sufficient memory available",
                           .last_transition_time = sys_days{year{2026} / 11 / 1} + seconds{10}}));
  ASSERT_NE(node.condition("Ready"), nullptr);
  EXPECT_EQ(node.condition("Ready")->reason, "NodeStatusUnknown");
  EXPECT_EQ(node.condition("Drained"), nullptr);
}

TEST(DecodeNodeTest, ReadyWorker) {
  ASSERT_OK_AND_ASSIGN(const Node node, decode_node(boost::json::parse(R"({
    "kind": "Node", "metadata": {"name": "node-worker-01"}, "spec": {},
    "status": {"conditions": [{"type": "Ready", "status": "True"}],
               "nodeInfo": {"bootID": "6a1f-77"}}})")));
  EXPECT_FALSE(node.unschedulable);
  EXPECT_TRUE(node.taints.empty());
  EXPECT_EQ(node.ready_status(), "True");
  EXPECT_TRUE(node.is_ready());
  EXPECT_EQ(node.boot_id, "6a1f-77");
}

TEST(DecodeNodeTest, NoReadyConditionIsEmptyStatus) {
  ASSERT_OK_AND_ASSIGN(const Node node,
                       decode_node(boost::json::parse(R"({"metadata": {"name": "new"}})")));
  EXPECT_EQ(node.ready_status(), "");
  EXPECT_FALSE(node.is_ready());
}

TEST(DecodeNodeTest, Errors) {
  EXPECT_EQ(decode_error(R"({"kind": "Pod"})"), R"(expected kind "Node", got "Pod")");
  EXPECT_EQ(decode_error(R"({"spec": {"unschedulable": "true"}})"),
            "spec.unschedulable: expected a bool, got string");
  EXPECT_EQ(decode_error(R"({"spec": {"taints": {"key": "a"}}})"),
            "spec.taints: expected an array, got object");
  EXPECT_EQ(decode_error(R"({"spec": {"taints": [{"key": "a", "timeAdded": "2026-11-30"}]}})"),
            "spec.taints[0].timeAdded: invalid RFC 3339 time \"2026-11-30\": expected 'T' at "
            "offset 10");
  EXPECT_EQ(decode_error(R"({"status": {"conditions": [null]}})"),
            "status.conditions[0]: expected an object, got null");
  EXPECT_EQ(decode_error(R"({"status": {"conditions": [{"type": "Ready", "reason": 1}]}})"),
            "status.conditions[0].reason: expected a string, got number");
  EXPECT_EQ(
      decode_error(R"({"status": {"conditions": [{"type": "X", "lastTransitionTime": "1"}]}})"),
      "status.conditions[0].lastTransitionTime: invalid RFC 3339 time \"1\": expected a digit at "
      "offset 1");
  EXPECT_EQ(decode_error(R"({"status": {"nodeInfo": {"bootID": 7}}})"),
            "status.nodeInfo.bootID: expected a string, got number");
}

TEST(NodeResourceTest, ClusterScopedPaths) {
  static_assert(Resource<Node>);
  EXPECT_EQ(collection_path<Node>(), "/api/v1/nodes");
  EXPECT_EQ(object_path<Node>("", "node-worker-01"), "/api/v1/nodes/node-worker-01");
}

}  // namespace
}  // namespace nmo::kube
