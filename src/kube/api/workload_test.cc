#include "kube/api/workload.h"

#include <optional>
#include <string>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

// `kubectl get replicaset -n shop web-7d4b9c8f6 -o json`, trimmed of managedFields and the pod
// template's containers.
constexpr const char* kReplicaSetJson = R"json({
  "apiVersion": "apps/v1", "kind": "ReplicaSet",
  "metadata": {
    "annotations": {"deployment.kubernetes.io/desired-replicas": "1",
                    "deployment.kubernetes.io/max-replicas": "2",
                    "deployment.kubernetes.io/revision": "1"},
    "creationTimestamp": "2026-12-07T09:12:44Z", "generation": 1,
    "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6"},
    "name": "web-7d4b9c8f6", "namespace": "shop",
    "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": true, "controller": true,
                         "kind": "Deployment", "name": "web",
                         "uid": "3f0c1a52-8d7e-4b61-9a0f-2c5e7b1d9e44"}],
    "resourceVersion": "48211", "uid": "a81c2f3e-5b4d-4e6f-8a9b-0c1d2e3f4a5b"},
  "spec": {"replicas": 1,
           "selector": {"matchLabels": {"app": "web", "pod-template-hash": "7d4b9c8f6"}},
           "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "7d4b9c8f6"}},
                        "spec": {"containers": [{"image": "nginx:1.27", "name": "web"}]}}},
  "status": {"availableReplicas": 1, "fullyLabeledReplicas": 1, "observedGeneration": 1,
             "readyReplicas": 1, "replicas": 1}})json";

// `kubectl get deployment -n shop web -o json`, trimmed likewise.
constexpr const char* kDeploymentJson = R"json({
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {
    "annotations": {"deployment.kubernetes.io/revision": "1",
                    "nodemaintenance.medik8s.io/surge": "false"},
    "creationTimestamp": "2026-12-07T09:12:44Z", "generation": 3,
    "labels": {"app": "web"}, "name": "web", "namespace": "shop",
    "resourceVersion": "48230", "uid": "3f0c1a52-8d7e-4b61-9a0f-2c5e7b1d9e44"},
  "spec": {"progressDeadlineSeconds": 600, "replicas": 1, "revisionHistoryLimit": 10,
           "selector": {"matchLabels": {"app": "web"}},
           "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0},
                        "type": "RollingUpdate"},
           "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"image": "nginx:1.27", "name": "web"}]}}},
  "status": {"availableReplicas": 1,
             "conditions": [{"lastTransitionTime": "2026-12-07T09:12:50Z",
                             "lastUpdateTime": "2026-12-07T09:12:50Z",
                             "message": "Deployment has minimum availability.",
                             "reason": "MinimumReplicasAvailable", "status": "True",
                             "type": "Available"}],
             "observedGeneration": 3, "readyReplicas": 1, "replicas": 2, "updatedReplicas": 1}})json";

// `kubectl get statefulset -n db pg -o json`, trimmed likewise.
constexpr const char* kStatefulSetJson = R"json({
  "apiVersion": "apps/v1", "kind": "StatefulSet",
  "metadata": {"creationTimestamp": "2026-12-07T08:01:10Z", "generation": 1,
               "labels": {"app": "pg"}, "name": "pg", "namespace": "db",
               "resourceVersion": "39120", "uid": "c4d5e6f7-0819-4a2b-9c3d-4e5f60718293"},
  "spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
           "podManagementPolicy": "OrderedReady", "replicas": 3, "revisionHistoryLimit": 10,
           "selector": {"matchLabels": {"app": "pg"}}, "serviceName": "pg",
           "template": {"metadata": {"labels": {"app": "pg"}},
                        "spec": {"containers": [{"image": "postgres:17", "name": "pg"}]}},
           "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"}},
  "status": {"availableReplicas": 2, "collisionCount": 0, "currentReplicas": 3,
             "currentRevision": "pg-6b8f7c9d5", "observedGeneration": 1, "readyReplicas": 2,
             "replicas": 3, "updateRevision": "pg-6b8f7c9d5", "updatedReplicas": 3}})json";

TEST(DecodeReplicaSetTest, OwnerAndScale) {
  ASSERT_OK_AND_ASSIGN(const ReplicaSet rs,
                       decode_replica_set(boost::json::parse(kReplicaSetJson)));
  EXPECT_EQ(rs.meta.namespace_, "shop");
  EXPECT_EQ(rs.meta.name, "web-7d4b9c8f6");
  EXPECT_EQ(rs.replicas, 1);
  const OwnerReference* owner = controller_of(rs.meta);
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(*owner, (OwnerReference{.api_version = "apps/v1",
                                    .kind = "Deployment",
                                    .name = "web",
                                    .uid = "3f0c1a52-8d7e-4b61-9a0f-2c5e7b1d9e44",
                                    .controller = true}));
}

TEST(DecodeReplicaSetTest, AbsentReplicasMeansOne) {
  ASSERT_OK_AND_ASSIGN(
      const ReplicaSet rs,
      decode_replica_set(boost::json::parse(R"({"metadata": {"name": "a"}, "spec": {}})")));
  EXPECT_EQ(rs.replicas, 1);
  ASSERT_OK_AND_ASSIGN(const ReplicaSet zero,
                       decode_replica_set(boost::json::parse(R"({"spec": {"replicas": 0}})")));
  EXPECT_EQ(zero.replicas, 0);
}

TEST(DecodeReplicaSetTest, Errors) {
  const Result<ReplicaSet> wrong_type =
      decode_replica_set(boost::json::parse(R"({"spec": {"replicas": "1"}})"));
  ASSERT_FALSE(wrong_type.has_value());
  EXPECT_EQ(wrong_type.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(wrong_type.error().message, "spec.replicas: expected an integer, got string");

  const Result<ReplicaSet> wrong_kind =
      decode_replica_set(boost::json::parse(R"({"kind": "Deployment"})"));
  ASSERT_FALSE(wrong_kind.has_value());
  EXPECT_EQ(wrong_kind.error().message, R"(expected kind "ReplicaSet", got "Deployment")");
}

TEST(DecodeDeploymentTest, RealisticObject) {
  ASSERT_OK_AND_ASSIGN(const Deployment d, decode_deployment(boost::json::parse(kDeploymentJson)));
  EXPECT_EQ(d.meta.namespace_, "shop");
  EXPECT_EQ(d.meta.name, "web");
  EXPECT_EQ(d.meta.generation, 3);
  const std::string* surge = d.meta.annotations.find("nodemaintenance.medik8s.io/surge");
  ASSERT_NE(surge, nullptr);
  EXPECT_EQ(*surge, "false");
  EXPECT_EQ(d.replicas, 1);
  EXPECT_EQ(d.strategy_type, "RollingUpdate");
  EXPECT_FALSE(d.is_recreate());
  EXPECT_EQ(d.max_surge, IntOrString::from_string("25%"));
  EXPECT_EQ(d.max_unavailable, IntOrString::from_int(0));
  EXPECT_EQ(d.status_replicas, 2);
  EXPECT_EQ(d.ready_replicas, 1);
  EXPECT_EQ(d.available_replicas, 1);
  EXPECT_EQ(d.updated_replicas, 1);
  EXPECT_EQ(d.observed_generation, 3);
  EXPECT_EQ(d.rolling_surge(), 1);  // 25% of 1, rounded up
}

TEST(DecodeDeploymentTest, RecreateAndDefaults) {
  ASSERT_OK_AND_ASSIGN(const Deployment recreate, decode_deployment(boost::json::parse(R"json({
    "kind": "Deployment", "metadata": {"name": "batch", "namespace": "jobs"},
    "spec": {"replicas": 2, "strategy": {"type": "Recreate"}}})json")));
  EXPECT_TRUE(recreate.is_recreate());
  EXPECT_EQ(recreate.max_surge, std::nullopt);
  EXPECT_EQ(recreate.rolling_surge(), 0);

  ASSERT_OK_AND_ASSIGN(const Deployment bare,
                       decode_deployment(boost::json::parse(R"({"metadata": {"name": "x"}})")));
  EXPECT_EQ(bare.replicas, 1);
  EXPECT_EQ(bare.strategy_type, "RollingUpdate");
  EXPECT_EQ(bare.max_unavailable, std::nullopt);
  EXPECT_EQ(bare.status_replicas, 0);
  EXPECT_EQ(bare.observed_generation, 0);
  EXPECT_EQ(bare.rolling_surge(), 0);  // absent maxSurge counts as 0, as in the controller
}

TEST(DecodeDeploymentTest, ErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"spec": {"replicas": true}})", "spec.replicas: expected an integer, got bool"},
      {R"({"spec": {"strategy": "Recreate"}})", "spec.strategy: expected an object, got string"},
      {R"({"spec": {"strategy": {"type": 1}}})",
       "spec.strategy.type: expected a string, got number"},
      {R"({"spec": {"strategy": {"rollingUpdate": {"maxSurge": true}}}})",
       "spec.strategy.rollingUpdate.maxSurge: expected an integer or a string, got bool"},
      {R"({"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": 1.5}}}})",
       "spec.strategy.rollingUpdate.maxUnavailable: expected an integer, got number"},
      {R"({"status": {"readyReplicas": "1"}})",
       "status.readyReplicas: expected an integer, got string"},
      {R"({"status": {"observedGeneration": []}})",
       "status.observedGeneration: expected an integer, got array"},
      {R"({"kind": "StatefulSet"})", R"(expected kind "Deployment", got "StatefulSet")"},
  };
  for (const Case& c : cases) {
    const Result<Deployment> d = decode_deployment(boost::json::parse(c.json));
    ASSERT_FALSE(d.has_value()) << c.json;
    EXPECT_EQ(d.error().code, ErrorCode::kInvalid) << c.json;
    EXPECT_EQ(d.error().message, c.message) << c.json;
  }
}

TEST(DecodeStatefulSetTest, RealisticObject) {
  ASSERT_OK_AND_ASSIGN(const StatefulSet sts,
                       decode_stateful_set(boost::json::parse(kStatefulSetJson)));
  EXPECT_EQ(sts.meta.namespace_, "db");
  EXPECT_EQ(sts.meta.name, "pg");
  EXPECT_EQ(sts.replicas, 3);
  EXPECT_EQ(sts.ready_replicas, 2);
  EXPECT_EQ(sts.available_replicas, 2);
}

TEST(DecodeStatefulSetTest, DefaultsAndErrors) {
  ASSERT_OK_AND_ASSIGN(const StatefulSet sts,
                       decode_stateful_set(boost::json::parse(R"({"spec": {"replicas": null}})")));
  EXPECT_EQ(sts.replicas, 1);

  const Result<StatefulSet> bad =
      decode_stateful_set(boost::json::parse(R"({"status": {"availableReplicas": "2"}})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "status.availableReplicas: expected an integer, got string");
  const Result<StatefulSet> too_big =
      decode_stateful_set(boost::json::parse(R"({"spec": {"replicas": 4294967296}})"));
  ASSERT_FALSE(too_big.has_value());
  EXPECT_EQ(too_big.error().message, "spec.replicas: 4294967296 out of range for int32");
}

TEST(ScaledValueTest, IntegersAndPercentages) {
  EXPECT_EQ(scaled_value(IntOrString::from_int(2), 10, Rounding::kUp), 2);
  EXPECT_EQ(scaled_value(IntOrString::from_string("50%"), 3, Rounding::kUp), 2);
  EXPECT_EQ(scaled_value(IntOrString::from_string("50%"), 3, Rounding::kDown), 1);
  EXPECT_EQ(scaled_value(IntOrString::from_string("25%"), 1, Rounding::kUp), 1);
  EXPECT_EQ(scaled_value(IntOrString::from_string("25%"), 1, Rounding::kDown), 0);
  EXPECT_EQ(scaled_value(IntOrString::from_string("100%"), 7, Rounding::kUp), 7);
  EXPECT_EQ(scaled_value(IntOrString::from_string("0%"), 7, Rounding::kUp), 0);
  EXPECT_EQ(scaled_value(IntOrString::from_string("30%"), 0, Rounding::kUp), 0);
}

TEST(ScaledValueTest, RejectsWhatValidationRejects) {
  for (const char* text : {"", "%", "50", "abc%", "-5%", "+5%", "1.5%", "5 %", "99999999999%"}) {
    EXPECT_EQ(scaled_value(IntOrString::from_string(text), 10, Rounding::kUp), std::nullopt)
        << text;
  }
}

TEST(WorkloadResourceTest, Paths) {
  static_assert(Resource<ReplicaSet> && Resource<Deployment> && Resource<StatefulSet>);
  EXPECT_EQ(api_version<Deployment>(), "apps/v1");
  EXPECT_EQ(object_path<ReplicaSet>("shop", "web-7d4b9c8f6"),
            "/apis/apps/v1/namespaces/shop/replicasets/web-7d4b9c8f6");
  EXPECT_EQ(object_path<Deployment>("shop", "web"),
            "/apis/apps/v1/namespaces/shop/deployments/web");
  EXPECT_EQ(object_path<StatefulSet>("db", "pg"), "/apis/apps/v1/namespaces/db/statefulsets/pg");
}

}  // namespace
}  // namespace nmo::kube
