#include "operator/gates/node_lease.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const kube::Time kNow = std::chrono::sys_days{std::chrono::year{2026} / 11 / 30} + minutes{600};

kube::Lease lease(std::optional<std::string> holder, kube::Time renewed,
                  std::optional<std::int32_t> duration = 3600) {
  kube::Lease l;
  l.meta.name = "node-node-worker-01";
  l.meta.namespace_ = "medik8s-leases";
  l.holder_identity = std::move(holder);
  l.renew_time = renewed;
  l.acquire_time = renewed - minutes{30};
  l.lease_duration_seconds = duration;
  l.lease_transitions = 2;
  return l;
}

TEST(NodeLeaseNameTest, UpstreamNameAndHashedLongNames) {
  EXPECT_EQ(node_lease_name("node-worker-01"), "node-node-worker-01");
  EXPECT_EQ(node_lease_name("Node-Worker-01"), "node-node-worker-01");
  const std::string longest(248, 'n');
  EXPECT_EQ(node_lease_name(longest), "node-" + longest);
  const std::string too_long = std::string(240, 'n') + ".example.com";
  const std::string hashed = node_lease_name(too_long);
  EXPECT_EQ(hashed.size(), 253U);
  EXPECT_TRUE(hashed.starts_with("node-" + std::string(231, 'n') + "-"));
  EXPECT_EQ(hashed, node_lease_name(too_long));
  EXPECT_NE(hashed, node_lease_name(std::string(240, 'n') + ".example.org"));
}

TEST(NodeLeaseNameTest, NodeOfLeaseInvertsTheName) {
  kube::Lease plain;
  plain.meta.name = node_lease_name("node-worker-01");
  EXPECT_EQ(node_of_lease(plain), "node-worker-01");
  // A hashed name does not give its node back; the ownerReference to the Node does.
  const std::string too_long = std::string(240, 'n') + ".example.com";
  kube::Lease hashed;
  hashed.meta.name = node_lease_name(too_long);
  hashed.meta.owner_references.push_back(
      kube::OwnerReference{.api_version = "v1", .kind = "Node", .name = too_long, .uid = "u"});
  EXPECT_EQ(node_of_lease(hashed), too_long);
  kube::Lease other;
  other.meta.name = "135b1886.medik8s.io";
  EXPECT_EQ(node_of_lease(other), std::nullopt);
}

TEST(ClassifyNodeLeaseTest, States) {
  EXPECT_EQ(classify_node_lease(std::nullopt, kNow), NodeLeaseState::kFree);
  EXPECT_EQ(classify_node_lease(lease(std::nullopt, kNow), kNow), NodeLeaseState::kFree);
  EXPECT_EQ(classify_node_lease(lease("", kNow), kNow), NodeLeaseState::kFree);
  EXPECT_EQ(classify_node_lease(lease("node-maintenance", kNow - minutes{600}), kNow),
            NodeLeaseState::kOurs);  // ours even when expired
  EXPECT_EQ(classify_node_lease(lease("NodeHealthCheck-x", kNow - minutes{5}), kNow),
            NodeLeaseState::kHeldByOther);
  EXPECT_EQ(classify_node_lease(lease("NodeHealthCheck-x", kNow - minutes{61}), kNow),
            NodeLeaseState::kExpiredForeign);
  // Exactly at expiry it is still valid (renewTime + duration >= now).
  EXPECT_EQ(classify_node_lease(lease("NodeHealthCheck-x", kNow - minutes{60}), kNow),
            NodeLeaseState::kHeldByOther);
  // No duration or renew time: invalid, may be taken over.
  EXPECT_EQ(classify_node_lease(lease("NodeHealthCheck-x", kNow, std::nullopt), kNow),
            NodeLeaseState::kExpiredForeign);
  kube::Lease no_renew = lease("NodeHealthCheck-x", kNow);
  no_renew.renew_time.reset();
  EXPECT_EQ(classify_node_lease(no_renew, kNow), NodeLeaseState::kExpiredForeign);
  // A renew time slightly ahead (clock skew) is valid; far ahead it is not (upstream).
  EXPECT_EQ(classify_node_lease(lease("NodeHealthCheck-x", kNow + seconds{30}), kNow),
            NodeLeaseState::kHeldByOther);
  EXPECT_EQ(classify_node_lease(lease("NodeHealthCheck-x", kNow + minutes{10}), kNow),
            NodeLeaseState::kExpiredForeign);
  EXPECT_TRUE(node_lease_available(NodeLeaseState::kExpiredForeign));
  EXPECT_FALSE(node_lease_available(NodeLeaseState::kHeldByOther));
  EXPECT_EQ(to_string(NodeLeaseState::kHeldByOther), "HeldByOther");
}

TEST(NodeLeaseSpecTest, CreateRenewTakeOver) {
  EXPECT_EQ(node_lease_spec(std::nullopt, kNow),
            (NodeLeaseSpec{.holder_identity = "node-maintenance",
                           .lease_duration_seconds = 3600,
                           .acquire_time = kNow,
                           .renew_time = kNow,
                           .lease_transitions = 0}));
  const kube::Lease ours = lease("node-maintenance", kNow - minutes{15});
  const NodeLeaseSpec renewed = node_lease_spec(ours, kNow);
  EXPECT_EQ(renewed.acquire_time, *ours.acquire_time);
  EXPECT_EQ(renewed.renew_time, kNow);
  EXPECT_EQ(renewed.lease_transitions, 2);
  const NodeLeaseSpec taken = node_lease_spec(lease("NodeHealthCheck-x", kNow - minutes{90}), kNow);
  EXPECT_EQ(taken.holder_identity, "node-maintenance");
  EXPECT_EQ(taken.acquire_time, kNow);
  EXPECT_EQ(taken.lease_transitions, 3);
}

TEST(NodeLeaseRenewalTest, EveryFifteenMinutes) {
  const kube::Lease ours = lease("node-maintenance", kNow - minutes{10});
  EXPECT_FALSE(should_renew_node_lease(ours, kNow));
  EXPECT_EQ(next_node_lease_renewal(ours, kNow), kNow + minutes{5});
  EXPECT_TRUE(should_renew_node_lease(ours, kNow + minutes{5}));
  // Not in our shape: renew at once.
  EXPECT_TRUE(should_renew_node_lease(lease("node-maintenance", kNow, 15), kNow));
  EXPECT_EQ(next_node_lease_renewal(lease("node-maintenance", kNow, 15), kNow), kNow);
  // The renewal interval leaves room for several failures within the lease duration.
  EXPECT_LT(kNodeLeaseRenewInterval * 3, kNodeLeaseDuration);
}

TEST(ErrorOnLeaseCountTest, UpstreamRule) {
  EXPECT_EQ(next_error_on_lease_count(0, LeaseCheck::kHeldByOther, false), 0);
  EXPECT_EQ(next_error_on_lease_count(0, LeaseCheck::kHeldByOther, true), 1);
  EXPECT_EQ(next_error_on_lease_count(2, LeaseCheck::kTransientError, true), 2);
  EXPECT_EQ(next_error_on_lease_count(3, LeaseCheck::kAcquired, true), 0);
  int count = 0;
  for (int i = 0; i < 3; ++i)
    count = next_error_on_lease_count(count, LeaseCheck::kHeldByOther, true);
  EXPECT_FALSE(lease_errors_exceeded(count));
  count = next_error_on_lease_count(count, LeaseCheck::kHeldByOther, true);
  EXPECT_TRUE(lease_errors_exceeded(count));
  EXPECT_EQ(lease_failure_message(count),
            "maintenance failed: lease could not be extended after 4 attempts");
}

}  // namespace
}  // namespace nmo::op
