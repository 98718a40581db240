#include "runtime/internal/leader_election_record.h"

#include <chrono>
#include <optional>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/testing/status_matchers.h"
#include "kube/api/lease.h"

namespace nmo::runtime::internal {
namespace {

using namespace std::chrono_literals;

// 2026-11-30T10:00:00.123456Z
const kube::Time kNow = std::chrono::sys_days{std::chrono::year{2026} / 11 / 30} + 10h +
                        std::chrono::microseconds{123456};
const kube::Time kEarlier = kNow - 1h;

kube::Lease held_lease(std::string holder, std::string resource_version) {
  kube::Lease lease;
  lease.meta.name = "135b1886.medik8s.io";
  lease.meta.namespace_ = "nmo-system";
  lease.meta.resource_version = std::move(resource_version);
  lease.holder_identity = std::move(holder);
  lease.lease_duration_seconds = 15;
  lease.acquire_time = kEarlier;
  lease.renew_time = kEarlier + 30min;
  lease.lease_transitions = 4;
  return lease;
}

TEST(ShouldTakeOverTest, EmptyHolderIsFreeAtOnce) {
  FakeClock clock;
  const LeaseObservation released{
      .holder_identity = "", .renew_time = kNow, .resource_version = "7"};
  EXPECT_TRUE(should_take_over(released, clock.now(), clock.now(), 15s));
}

TEST(ShouldTakeOverTest, HeldLeaseExpiresOnlyAfterLeaseDurationUnchanged) {
  FakeClock clock;
  const Clock::time_point seen = clock.now();
  const LeaseObservation held{.holder_identity = "a", .renew_time = kNow, .resource_version = "7"};
  clock.advance(15s - 1ns);
  EXPECT_FALSE(should_take_over(held, seen, clock.now(), 15s));
  clock.advance(1ns);
  EXPECT_TRUE(should_take_over(held, seen, clock.now(), 15s));
}

TEST(ShouldTakeOverTest, IgnoresTheHoldersWallClock) {
  // A renewTime an hour in the past (the holder's clock is behind ours) does not expire a lease
  // we saw change a moment ago.
  FakeClock clock;
  const LeaseObservation held{
      .holder_identity = "a", .renew_time = kNow - 1h, .resource_version = "7"};
  const Clock::time_point seen = clock.now();
  clock.advance(1s);
  EXPECT_FALSE(should_take_over(held, seen, clock.now(), 15s));
}

TEST(LeaseObserverTest, ChangeTimeMovesOnlyWhenTheLeaseChanges) {
  FakeClock clock;
  LeaseObserver observer;
  EXPECT_EQ(observer.last(), std::nullopt);
  const LeaseObservation first{.holder_identity = "a", .renew_time = kNow, .resource_version = "7"};
  EXPECT_TRUE(observer.observe(first, clock.now()));
  const Clock::time_point first_seen = clock.now();

  clock.advance(10s);
  EXPECT_FALSE(observer.observe(first, clock.now()));
  EXPECT_EQ(observer.last_change(), first_seen);
  EXPECT_TRUE(should_take_over(*observer.last(), observer.last_change(), clock.now() + 5s, 15s));

  // A renewal (new renewTime and resourceVersion) restarts the expiry countdown.
  clock.advance(1s);
  const LeaseObservation renewed{
      .holder_identity = "a", .renew_time = kNow + 11s, .resource_version = "8"};
  EXPECT_TRUE(observer.observe(renewed, clock.now()));
  EXPECT_EQ(observer.last_change(), first_seen + 11s);
  EXPECT_FALSE(should_take_over(*observer.last(), observer.last_change(), clock.now() + 5s, 15s));
  EXPECT_EQ(observer.last(), renewed);
}

TEST(LeaseObserverTest, AnyFieldChangeCounts) {
  FakeClock clock;
  LeaseObserver observer;
  const LeaseObservation base{.holder_identity = "a", .renew_time = kNow, .resource_version = "7"};
  ASSERT_TRUE(observer.observe(base, clock.now()));
  LeaseObservation other_holder = base;
  other_holder.holder_identity = "b";
  EXPECT_TRUE(observer.observe(other_holder, clock.now()));
  LeaseObservation other_version = other_holder;
  other_version.resource_version = "9";
  EXPECT_TRUE(observer.observe(other_version, clock.now()));
  LeaseObservation no_renew_time = other_version;
  no_renew_time.renew_time = std::nullopt;
  EXPECT_TRUE(observer.observe(no_renew_time, clock.now()));
}

TEST(ObserveLeaseTest, MissingHolderReadsAsEmpty) {
  kube::Lease lease = held_lease("a", "42");
  EXPECT_EQ(observe_lease(lease),
            (LeaseObservation{
                .holder_identity = "a", .renew_time = kEarlier + 30min, .resource_version = "42"}));
  lease.holder_identity = std::nullopt;
  EXPECT_EQ(observe_lease(lease).holder_identity, "");
}

TEST(EffectiveLeaseDurationTest, PrefersTheLeasesOwnDuration) {
  kube::Lease lease = held_lease("a", "1");
  EXPECT_EQ(effective_lease_duration(lease, 4s), Clock::duration(15s));
  lease.lease_duration_seconds = 0;
  EXPECT_EQ(effective_lease_duration(lease, 4s), Clock::duration(4s));
  lease.lease_duration_seconds = std::nullopt;
  EXPECT_EQ(effective_lease_duration(lease, 4s), Clock::duration(4s));
}

TEST(AcquireRecordTest, NewLeaseStartsWithZeroTransitions) {
  EXPECT_EQ(acquire_record(std::nullopt, "me", 15, kNow),
            (LeaderElectionRecord{.holder_identity = "me",
                                  .lease_duration_seconds = 15,
                                  .acquire_time = kNow,
                                  .renew_time = kNow,
                                  .lease_transitions = 0}));
}

TEST(AcquireRecordTest, RenewalKeepsAcquireTimeAndTransitions) {
  EXPECT_EQ(acquire_record(held_lease("me", "1"), "me", 4, kNow),
            (LeaderElectionRecord{.holder_identity = "me",
                                  .lease_duration_seconds = 4,
                                  .acquire_time = kEarlier,
                                  .renew_time = kNow,
                                  .lease_transitions = 4}));
}

TEST(AcquireRecordTest, TakeoverCountsATransition) {
  EXPECT_EQ(acquire_record(held_lease("other", "1"), "me", 15, kNow),
            (LeaderElectionRecord{.holder_identity = "me",
                                  .lease_duration_seconds = 15,
                                  .acquire_time = kNow,
                                  .renew_time = kNow,
                                  .lease_transitions = 5}));
  // Taking a released lease is a transition too (client-go counts any change of holder).
  EXPECT_EQ(acquire_record(held_lease("", "1"), "me", 15, kNow).lease_transitions, 5);
}

TEST(ReleaseRecordTest, ClearsHolderLikeClientGo) {
  EXPECT_EQ(release_record(held_lease("me", "1"), kNow),
            (LeaderElectionRecord{.holder_identity = "",
                                  .lease_duration_seconds = 1,
                                  .acquire_time = kNow,
                                  .renew_time = kNow,
                                  .lease_transitions = 4}));
}

TEST(LeaseJsonTest, NewLeaseObjectDecodesBack) {
  const LeaderElectionRecord record = acquire_record(std::nullopt, "host_1234", 15, kNow);
  const boost::json::value object = new_lease_object("nmo-system", "135b1886.medik8s.io", record);
  EXPECT_EQ(boost::json::serialize(object),
            R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",)"
            R"("metadata":{"name":"135b1886.medik8s.io","namespace":"nmo-system"},)"
            R"("spec":{"holderIdentity":"host_1234","leaseDurationSeconds":15,)"
            R"("acquireTime":"2026-11-30T10:00:00.123456Z",)"
            R"("renewTime":"2026-11-30T10:00:00.123456Z"}})");
  ASSERT_OK_AND_ASSIGN(const kube::Lease lease, kube::decode_lease(object));
  EXPECT_EQ(lease.holder_identity, "host_1234");
  EXPECT_EQ(lease.renew_time, kNow);
}

TEST(LeaseJsonTest, SetLeaseSpecKeepsMetadataAndOtherFields) {
  boost::json::value object = boost::json::parse(R"({
    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
    "metadata": {"name": "l", "namespace": "ns", "resourceVersion": "5521"},
    "spec": {"holderIdentity": "other", "leaseDurationSeconds": 15, "leaseTransitions": 4,
             "preferredHolder": "x"}})");
  set_lease_spec(object, release_record(held_lease("other", "5521"), kNow));
  EXPECT_EQ(boost::json::serialize(object.at("metadata")),
            R"({"name":"l","namespace":"ns","resourceVersion":"5521"})");
  EXPECT_EQ(boost::json::serialize(object.at("spec")),
            R"({"holderIdentity":"","leaseDurationSeconds":1,"leaseTransitions":4,)"
            R"("preferredHolder":"x","acquireTime":"2026-11-30T10:00:00.123456Z",)"
            R"("renewTime":"2026-11-30T10:00:00.123456Z"})");
}

TEST(LeaseJsonTest, SetLeaseSpecCreatesAMissingSpec) {
  boost::json::value object = boost::json::parse(R"({"kind": "Lease", "metadata": {"name": "l"}})");
  set_lease_spec(object, acquire_record(std::nullopt, "me", 4, kNow));
  ASSERT_OK_AND_ASSIGN(const kube::Lease lease, kube::decode_lease(object));
  EXPECT_EQ(lease.holder_identity, "me");
  EXPECT_EQ(lease.lease_duration_seconds, 4);
  EXPECT_EQ(lease.acquire_time, kNow);
}

}  // namespace
}  // namespace nmo::runtime::internal
