#include "kube/api/lease.h"

#include <chrono>
#include <string>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::sys_days;
using std::chrono::year;

// A leader-election lease held by one replica, with MicroTime timestamps.
constexpr const char* kHeldLease = R"json({
  "apiVersion": "coordination.k8s.io/v1",
  "kind": "Lease",
  "metadata": {"creationTimestamp": "2026-11-30T08:00:00Z", "name": "node-maintenance-operator",
               "namespace": "nmo-system", "resourceVersion": "5521",
               "uid": "fedcba98-7654-4321-8fed-cba987654321"},
  "spec": {
    "acquireTime": "2026-11-30T09:00:00.000001Z",
    "holderIdentity": "nmo-7c9d6b5f4-kq2xv_3f1e",
    "leaseDurationSeconds": 15,
    "leaseTransitions": 4,
    "renewTime": "2026-11-30T10:00:00.123456Z"
  }
})json";

TEST(DecodeLeaseTest, HeldLease) {
  ASSERT_OK_AND_ASSIGN(const Lease lease, decode_lease(boost::json::parse(kHeldLease)));
  EXPECT_EQ(lease.meta.name, "node-maintenance-operator");
  EXPECT_EQ(lease.meta.namespace_, "nmo-system");
  EXPECT_EQ(lease.meta.resource_version, "5521");
  EXPECT_EQ(lease.holder_identity, "nmo-7c9d6b5f4-kq2xv_3f1e");
  EXPECT_EQ(lease.lease_duration_seconds, 15);
  EXPECT_EQ(lease.lease_transitions, 4);
  const Time day = sys_days{year{2026} / 11 / 30};
  EXPECT_EQ(lease.acquire_time, day + hours{9} + microseconds{1});
  EXPECT_EQ(lease.renew_time, day + hours{10} + microseconds{123456});
  EXPECT_EQ(format_micro_time(*lease.renew_time), "2026-11-30T10:00:00.123456Z");
}

TEST(DecodeLeaseTest, ReleasedLeaseHasNoHolder) {
  ASSERT_OK_AND_ASSIGN(const Lease lease, decode_lease(boost::json::parse(R"({
    "kind": "Lease", "metadata": {"name": "l"},
    "spec": {"holderIdentity": null, "leaseDurationSeconds": 1, "leaseTransitions": 5}})")));
  EXPECT_EQ(lease.holder_identity, std::nullopt);
  EXPECT_EQ(lease.lease_duration_seconds, 1);
  EXPECT_EQ(lease.renew_time, std::nullopt);
  EXPECT_EQ(lease.acquire_time, std::nullopt);
  EXPECT_EQ(lease.lease_transitions, 5);
}

TEST(DecodeLeaseTest, EmptyHolderIsPresentButEmpty) {
  ASSERT_OK_AND_ASSIGN(const Lease lease,
                       decode_lease(boost::json::parse(R"({"spec": {"holderIdentity": ""}})")));
  EXPECT_EQ(lease.holder_identity, "");
  EXPECT_EQ(lease.lease_transitions, 0);
}

TEST(DecodeLeaseTest, Errors) {
  const Result<Lease> bad_time =
      decode_lease(boost::json::parse(R"({"spec": {"renewTime": "2026-11-30T10:00:00"}})"));
  ASSERT_FALSE(bad_time.has_value());
  EXPECT_EQ(bad_time.error().message,
            "spec.renewTime: invalid RFC 3339 time \"2026-11-30T10:00:00\": expected 'Z' or a "
            "numeric offset like +02:00 at offset 19");
  const Result<Lease> bad_duration =
      decode_lease(boost::json::parse(R"({"spec": {"leaseDurationSeconds": -2147483649}})"));
  ASSERT_FALSE(bad_duration.has_value());
  EXPECT_EQ(bad_duration.error().message,
            "spec.leaseDurationSeconds: -2147483649 out of range for int32");
}

TEST(LeaseResourceTest, Paths) {
  static_assert(Resource<Lease>);
  EXPECT_EQ(api_version<Lease>(), "coordination.k8s.io/v1");
  EXPECT_EQ(object_path<Lease>("nmo-system", "node-maintenance-operator"),
            "/apis/coordination.k8s.io/v1/namespaces/nmo-system/leases/node-maintenance-operator");
}

TEST(EncodeLeaseTest, WritesWhatIsSetAndDecodesBack) {
  ASSERT_OK_AND_ASSIGN(Lease lease, decode_lease(boost::json::parse(kHeldLease)));
  lease.meta.uid.clear();
  lease.meta.creation_timestamp.reset();
  lease.meta.labels.set("role", "slot");
  lease.meta.annotations.set("nodemaintenance.medik8s.io/max-parallel-maintenances", "2");
  lease.meta.owner_references.push_back(
      OwnerReference{.api_version = "v1", .kind = "Node", .name = "w1", .uid = "u1"});
  const boost::json::value encoded = encode_lease(lease);
  EXPECT_EQ(encoded.at("apiVersion"), "coordination.k8s.io/v1");
  EXPECT_EQ(encoded.at("kind"), "Lease");
  EXPECT_EQ(encoded.at("spec").at("renewTime"), "2026-11-30T10:00:00.123456Z");
  EXPECT_EQ(encoded.at("metadata").at("resourceVersion"), "5521");
  EXPECT_FALSE(
      encoded.at("metadata").at("ownerReferences").at(0).as_object().contains("controller"));
  ASSERT_OK_AND_ASSIGN(const Lease back, decode_lease(encoded));
  EXPECT_EQ(back, lease);

  // Only what is set: a bare Lease has a name and an empty spec.
  Lease bare;
  bare.meta.name = "slot";
  EXPECT_EQ(encode_lease(bare), boost::json::parse(R"({"apiVersion": "coordination.k8s.io/v1",
      "kind": "Lease", "metadata": {"name": "slot"}, "spec": {}})"));
}

TEST(OverlayLeaseSpecTest, WritesTheSetFieldsAndKeepsEverythingElse) {
  boost::json::value object = boost::json::parse(R"({
    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
    "metadata": {"name": "l", "namespace": "ns", "resourceVersion": "7", "uid": "u"},
    "spec": {"holderIdentity": "old", "leaseTransitions": 3, "preferredHolder": "p",
             "strategy": "OldestEmulationVersion"}})");
  Lease lease;
  lease.holder_identity = "new";
  lease.renew_time = Time{std::chrono::sys_days{std::chrono::November / 30 / 2026}};
  lease.lease_transitions = 4;
  overlay_lease_spec(object, lease);
  EXPECT_EQ(object, boost::json::parse(R"({
    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
    "metadata": {"name": "l", "namespace": "ns", "resourceVersion": "7", "uid": "u"},
    "spec": {"holderIdentity": "new", "leaseTransitions": 4, "preferredHolder": "p",
             "strategy": "OldestEmulationVersion",
             "renewTime": "2026-11-30T00:00:00.000000Z"}})"));

  // A missing (or malformed) spec is replaced by the fields that are set.
  boost::json::value bare = boost::json::parse(R"({"kind": "Lease", "spec": 3})");
  overlay_lease_spec(bare, lease);
  ASSERT_OK_AND_ASSIGN(const Lease back, decode_lease(bare));
  EXPECT_EQ(back.holder_identity, "new");
  EXPECT_EQ(back.lease_transitions, 4);
}

}  // namespace
}  // namespace nmo::kube
