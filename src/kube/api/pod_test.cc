#include "kube/api/pod.h"

#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/api/resource.h"

namespace nmo::kube {
namespace {

// A running, ready Deployment pod as the API server returns it (GET, watch object).
constexpr const char* kRunningPod = R"json({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "creationTimestamp": "2026-11-30T09:58:12Z",
    "generateName": "db-5f7d8c9b4-",
    "labels": {"app": "db", "pod-template-hash": "5f7d8c9b4"},
    "name": "db-5f7d8c9b4-abcde",
    "namespace": "shop",
    "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": true, "controller": true,
                         "kind": "ReplicaSet", "name": "db-5f7d8c9b4",
                         "uid": "11111111-2222-4333-8444-555555555555"}],
    "resourceVersion": "20391",
    "uid": "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
  },
  "spec": {
    "containers": [{"image": "postgres:16", "name": "db",
                    "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m"}},
                    "volumeMounts": [{"mountPath": "/scratch", "name": "scratch"}]}],
    "dnsPolicy": "ClusterFirst",
    "nodeName": "node-worker-02",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler",
    "terminationGracePeriodSeconds": 45,
    "volumes": [
      {"name": "kube-api-access-x1", "projected": {"defaultMode": 420, "sources": []}},
      {"emptyDir": {}, "name": "scratch"}
    ]
  },
  "status": {
    "conditions": [
      {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T09:58:12Z", "status": "True",
       "type": "PodScheduled"},
      {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T09:58:20Z", "status": "True",
       "type": "Initialized"},
      {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T09:58:31Z", "status": "True",
       "type": "ContainersReady"},
      {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T09:58:31Z", "status": "True",
       "type": "Ready"}
    ],
    "containerStatuses": [{"name": "db", "ready": true, "restartCount": 0,
                           "state": {"running": {"startedAt": "2026-11-30T09:58:30Z"}}}],
    "hostIP": "10.0.0.12",
    "phase": "Running",
    "podIP": "10.244.2.17",
    "qosClass": "Burstable",
    "startTime": "2026-11-30T09:58:12Z"
  }
})json";

// A static pod's mirror as the kubelet creates it.
constexpr const char* kMirrorPod = R"json({
  "metadata": {
    "annotations": {"kubernetes.io/config.hash": "9b1c", "kubernetes.io/config.mirror": "9b1c",
                    "kubernetes.io/config.source": "file"},
    "name": "etcd-node-master-01", "namespace": "kube-system",
    "ownerReferences": [{"apiVersion": "v1", "controller": true, "kind": "Node",
                         "name": "node-master-01", "uid": "n-uid"}],
    "uid": "mirror-uid"
  },
  "spec": {"nodeName": "node-master-01", "containers": [{"name": "etcd"}]},
  "status": {"phase": "Running",
             "conditions": [{"type": "Ready", "status": "False"}]}
})json";

std::string decode_error(const char* json) {
  const Result<Pod> pod = decode_pod(boost::json::parse(json));
  if (pod.has_value()) {
    return "decoded";
  }
  EXPECT_EQ(pod.error().code, ErrorCode::kInvalid);
  return pod.error().message;
}

TEST(DecodePodTest, RunningDeploymentPod) {
  ASSERT_OK_AND_ASSIGN(const Pod pod, decode_pod(boost::json::parse(kRunningPod)));
  EXPECT_EQ(pod.meta.name, "db-5f7d8c9b4-abcde");
  EXPECT_EQ(pod.meta.namespace_, "shop");
  EXPECT_EQ(pod.meta.uid, "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee");
  EXPECT_EQ(pod.meta.resource_version, "20391");
  EXPECT_EQ(pod.node_name, "node-worker-02");
  EXPECT_EQ(pod.phase, "Running");
  EXPECT_TRUE(pod.is_ready());
  EXPECT_TRUE(pod.has_empty_dir);
  EXPECT_EQ(pod.termination_grace_period_seconds, 45);
  EXPECT_FALSE(pod.is_mirror());
  ASSERT_NE(pod.controller(), nullptr);
  EXPECT_EQ(pod.controller()->kind, "ReplicaSet");
  EXPECT_EQ(pod.controller()->name, "db-5f7d8c9b4");
  EXPECT_EQ(pod.controller()->uid, "11111111-2222-4333-8444-555555555555");
}

TEST(DecodePodTest, MirrorPod) {
  ASSERT_OK_AND_ASSIGN(const Pod pod, decode_pod(boost::json::parse(kMirrorPod)));
  EXPECT_TRUE(pod.is_mirror());
  EXPECT_FALSE(pod.is_ready());
  EXPECT_FALSE(pod.has_empty_dir);
  EXPECT_EQ(pod.termination_grace_period_seconds, std::nullopt);
  ASSERT_NE(pod.controller(), nullptr);
  EXPECT_EQ(pod.controller()->kind, "Node");
}

TEST(DecodePodTest, PendingPodWithoutNodeOrConditions) {
  ASSERT_OK_AND_ASSIGN(const Pod pod, decode_pod(boost::json::parse(R"({
    "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}})")));
  EXPECT_EQ(pod.node_name, "");
  EXPECT_EQ(pod.phase, "Pending");
  EXPECT_FALSE(pod.is_ready());
  EXPECT_EQ(pod.controller(), nullptr);
}

TEST(DecodePodTest, ReadyConditionMustBeTrue) {
  ASSERT_OK_AND_ASSIGN(
      const Pod unknown,
      decode_pod(boost::json::parse(
          R"({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})")));
  EXPECT_FALSE(unknown.is_ready());
  EXPECT_EQ(unknown.ready_status, "Unknown");  // kept as is: the OpenShift etcd gate reads it
  ASSERT_OK_AND_ASSIGN(
      const Pod ready,
      decode_pod(boost::json::parse(
          R"({"status": {"conditions": [{"type": "PodScheduled", "status": "False"},
                                    {"type": "Ready", "status": "True"}]}})")));
  EXPECT_TRUE(ready.is_ready());
}

TEST(DecodePodTest, NullEmptyDirIsNotAnEmptyDir) {
  ASSERT_OK_AND_ASSIGN(
      const Pod pod,
      decode_pod(boost::json::parse(
          R"({"spec": {"volumes": [{"name": "v", "emptyDir": null, "hostPath": {"path": "/x"}}]}})")));
  EXPECT_FALSE(pod.has_empty_dir);
}

TEST(DecodePodTest, KeepsOnlyTolerationsOfEveryEffectOrPreferNoSchedule) {
  ASSERT_OK_AND_ASSIGN(const Pod pod, decode_pod(boost::json::parse(R"json({"spec": {
    "tolerations": [
      {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
       "tolerationSeconds": 300},
      {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
       "tolerationSeconds": 300},
      {"operator": "Exists"},
      {"key": "dedicated", "operator": "Equal", "value": "cache", "effect": "NoSchedule"},
      {"key": "nodemaintenance.medik8s.io/planned", "effect": "PreferNoSchedule"},
      {"key": "spot", "value": null, "tolerationSeconds": null}
    ]}})json")));
  EXPECT_EQ(pod.tolerations,
            (std::vector<Toleration>{
                {.key = "", .operator_ = "Exists", .value = "", .effect = ""},
                {.key = "nodemaintenance.medik8s.io/planned", .effect = "PreferNoSchedule"},
                {.key = "spot"},
            }));
}

TEST(DecodePodTest, TolerationSecondsAreKept) {
  ASSERT_OK_AND_ASSIGN(const Pod pod, decode_pod(boost::json::parse(
                                          R"({"spec": {"tolerations": [
      {"key": "k", "operator": "Exists", "tolerationSeconds": 60}]}})")));
  ASSERT_EQ(pod.tolerations.size(), 1U);
  EXPECT_EQ(pod.tolerations[0].toleration_seconds, 60);
}

TEST(DecodePodTest, Errors) {
  EXPECT_EQ(decode_error(R"({"kind": "Status", "status": "Failure"})"),
            R"(expected kind "Pod", got "Status")");
  EXPECT_EQ(decode_error(R"({"spec": {"nodeName": 3}})"),
            "spec.nodeName: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"spec": {"terminationGracePeriodSeconds": "30"}})"),
            "spec.terminationGracePeriodSeconds: expected an integer, got string");
  EXPECT_EQ(decode_error(R"({"spec": {"volumes": [{"name": "a"}, "b"]}})"),
            "spec.volumes[1]: expected an object, got string");
  EXPECT_EQ(decode_error(R"({"spec": {"tolerations": {"operator": "Exists"}}})"),
            "spec.tolerations: expected an array, got object");
  EXPECT_EQ(decode_error(R"({"spec": {"tolerations": [{"operator": "Exists"}, "all"]}})"),
            "spec.tolerations[1]: expected an object, got string");
  // A toleration that would not be kept is checked all the same.
  EXPECT_EQ(decode_error(R"({"spec": {"tolerations": [{"effect": "NoExecute", "key": 7}]}})"),
            "spec.tolerations[0].key: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"spec": {"tolerations": [{"operator": true}]}})"),
            "spec.tolerations[0].operator: expected a string, got bool");
  EXPECT_EQ(decode_error(R"({"spec": {"tolerations": [{"key": "k", "value": 1}]}})"),
            "spec.tolerations[0].value: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"spec": {"tolerations": [{"effect": ["NoSchedule"]}]}})"),
            "spec.tolerations[0].effect: expected a string, got array");
  EXPECT_EQ(decode_error(R"({"spec": {"tolerations": [{"tolerationSeconds": "300"}]}})"),
            "spec.tolerations[0].tolerationSeconds: expected an integer, got string");
  EXPECT_EQ(decode_error(R"({"status": {"conditions": [{"type": "Ready", "status": true}]}})"),
            "status.conditions[0].status: expected a string, got bool");
  EXPECT_EQ(decode_error(R"({"status": []})"), "status: expected an object, got array");
  EXPECT_EQ(decode_error("null"), "expected an object, got null");
}

// The steering taint of a MaintenancePlan, as the operator writes it: an empty value.
const Taint kPlanned{.key = "nodemaintenance.medik8s.io/planned", .effect = "PreferNoSchedule"};

TEST(ToleratesTest, ExistsWithoutKeyToleratesEveryTaint) {
  const Toleration every{.operator_ = "Exists"};
  EXPECT_TRUE(tolerates(every, kPlanned));
  EXPECT_TRUE(tolerates(every, Taint{.key = "gpu", .value = "a100", .effect = "NoSchedule"}));
  const Toleration every_soft{.operator_ = "Exists", .effect = "PreferNoSchedule"};
  EXPECT_TRUE(tolerates(every_soft, kPlanned));
  EXPECT_FALSE(tolerates(every_soft, Taint{.key = "gpu", .effect = "NoSchedule"}));
}

TEST(ToleratesTest, ExistsWithKeyMatchesAnyValueOfThatKey) {
  const Toleration planned{.key = "nodemaintenance.medik8s.io/planned", .operator_ = "Exists"};
  EXPECT_TRUE(tolerates(planned, kPlanned));
  EXPECT_TRUE(tolerates(planned, Taint{.key = kPlanned.key, .value = "x", .effect = "NoSchedule"}));
  EXPECT_FALSE(tolerates(
      planned, Taint{.key = "nodemaintenance.medik8s.io/plan", .effect = "PreferNoSchedule"}));
}

TEST(ToleratesTest, EqualComparesValues) {
  const Toleration empty_value{.key = "nodemaintenance.medik8s.io/planned", .operator_ = "Equal"};
  EXPECT_TRUE(tolerates(empty_value, kPlanned));
  const Toleration no_operator{.key = "nodemaintenance.medik8s.io/planned",
                               .effect = "PreferNoSchedule"};
  EXPECT_TRUE(tolerates(no_operator, kPlanned));
  const Toleration other_value{
      .key = "nodemaintenance.medik8s.io/planned", .operator_ = "Equal", .value = "plan-a"};
  EXPECT_FALSE(tolerates(other_value, kPlanned));
  EXPECT_TRUE(tolerates(
      other_value, Taint{.key = kPlanned.key, .value = "plan-a", .effect = "PreferNoSchedule"}));
}

TEST(ToleratesTest, EffectMustMatchUnlessEmpty) {
  const Toleration no_schedule{.operator_ = "Exists", .effect = "NoSchedule"};
  EXPECT_FALSE(tolerates(no_schedule, kPlanned));
  const Toleration any_effect{.key = "nodemaintenance.medik8s.io/planned", .operator_ = "Exists"};
  EXPECT_TRUE(tolerates(any_effect, kPlanned));
}

TEST(ToleratesTest, UnknownOperatorToleratesNothing) {
  EXPECT_FALSE(tolerates(Toleration{.operator_ = "Lt"}, kPlanned));
  EXPECT_FALSE(tolerates(Toleration{.operator_ = "exists"}, kPlanned));
}

TEST(ToleratesTest, PodToleratesWhenOneOfItsTolerationsDoes) {
  ASSERT_OK_AND_ASSIGN(const Pod pod, decode_pod(boost::json::parse(R"({"spec": {"tolerations": [
      {"key": "dedicated", "operator": "Equal", "value": "cache"},
      {"operator": "Exists", "effect": "NoExecute"},
      {"key": "nodemaintenance.medik8s.io/planned", "operator": "Exists"}]}})")));
  EXPECT_TRUE(tolerates(pod, kPlanned));
  EXPECT_TRUE(tolerates(pod, Taint{.key = "dedicated", .value = "cache", .effect = "NoSchedule"}));
  EXPECT_FALSE(tolerates(pod, Taint{.key = "dedicated", .value = "web", .effect = "NoSchedule"}));
  EXPECT_FALSE(tolerates(Pod{}, kPlanned));
}

TEST(PodResourceTest, Paths) {
  static_assert(Resource<Pod>);
  EXPECT_EQ(api_version<Pod>(), "v1");
  EXPECT_EQ(collection_path<Pod>("shop"), "/api/v1/namespaces/shop/pods");
  EXPECT_EQ(collection_path<Pod>(), "/api/v1/pods");
  EXPECT_EQ(object_path<Pod>("shop", "db-0"), "/api/v1/namespaces/shop/pods/db-0");
}

}  // namespace
}  // namespace nmo::kube
