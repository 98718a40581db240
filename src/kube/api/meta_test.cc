#include "kube/api/meta.h"

#include <chrono>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::sys_days;
using std::chrono::year;

// metadata of a ReplicaSet-owned pod as `kubectl get pod -o json` prints it, managedFields and
// the last-applied annotation included.
constexpr const char* kPod = R"json({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "annotations": {
      "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}\n",
      "kubectl.kubernetes.io/restartedAt": "2026-11-29T08:00:00Z",
      "prometheus.io/scrape": "true"
    },
    "creationTimestamp": "2026-11-30T09:58:12Z",
    "deletionGracePeriodSeconds": 30,
    "deletionTimestamp": "2026-11-30T10:05:00Z",
    "finalizers": ["example.com/cleanup"],
    "generateName": "web-7d4b9c8f6d-",
    "generation": 2,
    "labels": {
      "app": "web",
      "pod-template-hash": "7d4b9c8f6d"
    },
    "managedFields": [
      {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}}}},
        "manager": "kube-controller-manager",
        "operation": "Update",
        "time": "2026-11-30T09:58:12Z"
      }
    ],
    "name": "web-7d4b9c8f6d-x2x9q",
    "namespace": "shop",
    "ownerReferences": [
      {
        "apiVersion": "apps/v1",
        "blockOwnerDeletion": true,
        "controller": true,
        "kind": "ReplicaSet",
        "name": "web-7d4b9c8f6d",
        "uid": "8a1f2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b"
      }
    ],
    "resourceVersion": "184467",
    "uid": "0f6c3e1a-5b2d-4c8e-9f7a-1b2c3d4e5f60"
  },
  "spec": {"nodeName": "node-worker-01"}
})json";

std::string decode_error(const char* json) {
  const Result<ObjectMeta> meta = decode_meta(boost::json::parse(json));
  if (meta.has_value()) {
    return "decoded";
  }
  EXPECT_EQ(meta.error().code, ErrorCode::kInvalid);
  return meta.error().message;
}

TEST(DecodeMetaTest, RealisticPodMetadata) {
  ASSERT_OK_AND_ASSIGN(const ObjectMeta meta, decode_meta(boost::json::parse(kPod)));
  EXPECT_EQ(meta.name, "web-7d4b9c8f6d-x2x9q");
  EXPECT_EQ(meta.namespace_, "shop");
  EXPECT_EQ(meta.uid, "0f6c3e1a-5b2d-4c8e-9f7a-1b2c3d4e5f60");
  EXPECT_EQ(meta.resource_version, "184467");
  EXPECT_EQ(meta.generation, 2);
  EXPECT_EQ(meta.creation_timestamp, Time{sys_days{year{2026} / 11 / 30} + hours{9} + minutes{58} +
                                          std::chrono::seconds{12}});
  EXPECT_EQ(meta.deletion_timestamp, Time{sys_days{year{2026} / 11 / 30} + hours{10} + minutes{5}});
  EXPECT_EQ(meta.deletion_grace_period_seconds, 30);
  EXPECT_EQ(meta.labels, (Labels{{"app", "web"}, {"pod-template-hash", "7d4b9c8f6d"}}));
  // The last-applied copy of the object is dropped; other annotations are kept.
  EXPECT_EQ(meta.annotations, (Labels{{"kubectl.kubernetes.io/restartedAt", "2026-11-29T08:00:00Z"},
                                      {"prometheus.io/scrape", "true"}}));
  EXPECT_EQ(meta.finalizers, std::vector<std::string>{"example.com/cleanup"});
  ASSERT_EQ(meta.owner_references.size(), 1U);
  EXPECT_EQ(meta.owner_references[0],
            (OwnerReference{"apps/v1", "ReplicaSet", "web-7d4b9c8f6d",
                            "8a1f2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b", true}));
  EXPECT_EQ(controller_of(meta), &meta.owner_references[0]);
}

TEST(DecodeMetaTest, MinimalAndNullFieldsGiveDefaults) {
  ASSERT_OK_AND_ASSIGN(const ObjectMeta meta, decode_meta(boost::json::parse(R"({
    "metadata": {"name": "n1", "labels": null, "deletionTimestamp": null,
                 "ownerReferences": null, "finalizers": null}})")));
  EXPECT_EQ(meta, (ObjectMeta{.name = "n1"}));
  EXPECT_EQ(controller_of(meta), nullptr);
}

TEST(DecodeMetaTest, MissingMetadataIsEmpty) {
  ASSERT_OK_AND_ASSIGN(const ObjectMeta meta, decode_meta(boost::json::parse(R"({"kind":"Pod"})")));
  EXPECT_EQ(meta, ObjectMeta{});
}

TEST(DecodeMetaTest, ControllerOfSkipsNonControllerOwners) {
  ASSERT_OK_AND_ASSIGN(const ObjectMeta meta, decode_meta(boost::json::parse(R"({"metadata": {
    "ownerReferences": [
      {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "uid": "u1"},
      {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u2",
       "controller": true}]}})")));
  ASSERT_NE(controller_of(meta), nullptr);
  EXPECT_EQ(controller_of(meta)->kind, "DaemonSet");
  EXPECT_EQ(controller_of(meta)->name, "agent");
  EXPECT_FALSE(meta.owner_references[0].controller);
}

TEST(DecodeMetaTest, ErrorsNameTheField) {
  EXPECT_EQ(decode_error("[]"), "expected an object, got array");
  EXPECT_EQ(decode_error(R"({"metadata": "x"})"), "metadata: expected an object, got string");
  EXPECT_EQ(decode_error(R"({"metadata": {"name": 5}})"),
            "metadata.name: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"metadata": {"labels": {"app": 1}}})"),
            "metadata.labels.app: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"metadata": {"generation": 1.5}})"),
            "metadata.generation: expected an integer, got number");
  EXPECT_EQ(decode_error(R"({"metadata": {"generation": 18446744073709551615}})"),
            "metadata.generation: 18446744073709551615 out of range for int64");
  EXPECT_EQ(decode_error(R"({"metadata": {"creationTimestamp": "yesterday"}})"),
            "metadata.creationTimestamp: invalid RFC 3339 time \"yesterday\": expected a digit "
            "at offset 0");
  EXPECT_EQ(decode_error(R"({"metadata": {"finalizers": ["a", 2]}})"),
            "metadata.finalizers[1]: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"metadata": {"ownerReferences": [{"controller": "yes"}]}})"),
            "metadata.ownerReferences[0].controller: expected a bool, got string");
  EXPECT_EQ(decode_error(R"({"metadata": {"ownerReferences": [{}, 7]}})"),
            "metadata.ownerReferences[1]: expected an object, got number");
}

}  // namespace
}  // namespace nmo::kube
