// The admission rules of docs/design.md §4 with their exact messages, the per-node reservation
// (twenty simultaneous creates for one node: one admitted) that refuses only its own requester
// (a forged review does not lock the admin out), and failing lookups.
#include "operator/webhook/validator.h"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/post.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "http/testing/run.h"

namespace nmo::op::webhook {
namespace {

using std::chrono::seconds;

// A cluster in memory. Each lookup yields to the executor once, so that concurrent validations
// interleave at their awaits as they would against an API server.
class FakeLookup final : public ClusterLookup {
 public:
  asio::awaitable<Result<bool>> node_exists(std::string node) override {
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    ++node_lookups;
    if (node_error) co_return *node_error;
    co_return nodes.contains(node);
  }
  asio::awaitable<Result<std::vector<ExistingMaintenance>>> maintenances_for_node(
      std::string node) override {
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    if (list_error) co_return *list_error;
    co_return maintenances[node];
  }
  asio::awaitable<Result<bool>> etcd_quorum_safe(std::string node) override {
    ++quorum_lookups;
    if (quorum_error) co_return *quorum_error;
    co_return !unsafe_nodes.contains(node);
  }

  std::set<std::string> nodes = {"node-worker-01", "node-worker-02"};
  std::map<std::string, std::vector<ExistingMaintenance>> maintenances;
  std::optional<Error> node_error;
  std::optional<Error> list_error;
  std::set<std::string> unsafe_nodes;  // control-plane nodes whose loss breaks etcd quorum
  std::optional<Error> quorum_error;
  int node_lookups = 0;
  int quorum_lookups = 0;
};

AdmissionRequest create(const std::string& name, const std::string& node, bool dry_run = false) {
  return {.api_version = std::string(kAdmissionV1),
          .uid = "uid-" + name,
          .operation = Operation::kCreate,
          .name = name,
          .dry_run = dry_run,
          .object = ReviewedObject{.name = name, .node_name = node}};
}

// A create by `username` (userInfo), as a forged review or a real API server sends it.
AdmissionRequest create_by(const std::string& username, const std::string& name,
                           const std::string& node, const std::string& user_uid = "") {
  AdmissionRequest request = create(name, node);
  request.username = username;
  request.user_uid = user_uid;
  return request;
}

AdmissionRequest update(const std::string& old_node, const std::string& new_node,
                        bool deleting = false) {
  return {.api_version = std::string(kAdmissionV1),
          .uid = "uid-update",
          .operation = Operation::kUpdate,
          .name = "maintenance-worker-01",
          .object =
              ReviewedObject{
                  .name = "maintenance-worker-01", .node_name = new_node, .deleting = deleting},
          .old_object = ReviewedObject{.name = "maintenance-worker-01", .node_name = old_node}};
}

kube::Time at(int second) { return kube::Time(std::chrono::seconds(1'800'000'000 + second)); }

class ValidatorTest : public ::testing::Test {
 protected:
  AdmissionVerdict validate(AdmissionRequest request) {
    return http::test::run(context_, validator_.validate(std::move(request)));
  }

  asio::io_context context_;
  FakeLookup lookup_;
  FakeClock clock_;
  Validator validator_{lookup_, {.reservation_ttl = seconds(10), .clock = &clock_}};
};

// Our words first (docs/design.md §4), then upstream NMO's exact words for the same refusal.
TEST_F(ValidatorTest, MessagesAreTheStorysWordsThenUpstreams) {
  EXPECT_EQ(kNodeNameImmutableMessage,
            "nodeName is immutable and cannot be changed after creation; updating spec.NodeName "
            "isn't allowed");
  EXPECT_EQ(unknown_node_message("node-that-does-not-exist"),
            "node \"node-that-does-not-exist\" not found in cluster; invalid nodeName, no node "
            "with name node-that-does-not-exist found");
  EXPECT_EQ(
      already_under_maintenance_message("node-worker-01", "maintenance-worker-01"),
      "node \"node-worker-01\" is already under maintenance by NodeMaintenance "
      "\"maintenance-worker-01\"; invalid nodeName, a NodeMaintenance for node node-worker-01 "
      "already exists");
}

TEST_F(ValidatorTest, CreateForAnExistingNodeIsAllowed) {
  EXPECT_EQ(validate(create("maintenance-worker-01", "node-worker-01")), AdmissionVerdict::allow());
}

TEST_F(ValidatorTest, CreateForAMissingNodeIsDenied) {
  EXPECT_EQ(validate(create("m", "node-that-does-not-exist")),
            AdmissionVerdict::deny(unknown_node_message("node-that-does-not-exist")));
  EXPECT_EQ(validator_.reservation_count(), 0U);
}

TEST_F(ValidatorTest, NodeNameThatCannotNameANodeIsNotLookedUp) {
  EXPECT_EQ(validate(create("m", "nodes/x?watch=true")),
            AdmissionVerdict::deny(unknown_node_message("nodes/x?watch=true")));
  EXPECT_EQ(validate(create("m", "Node-Worker-01")),
            AdmissionVerdict::deny(unknown_node_message("Node-Worker-01")));
  EXPECT_EQ(lookup_.node_lookups, 0);
}

TEST_F(ValidatorTest, CreateWithoutNodeNameIsDenied) {
  EXPECT_EQ(validate(create("m", "")), AdmissionVerdict::deny("spec.nodeName is required"));
}

TEST_F(ValidatorTest, SecondMaintenanceForANodeIsDeniedNamingTheFirst) {
  lookup_.maintenances["node-worker-01"] = {
      {.name = "maintenance-worker-01", .created = at(0), .deleting = false}};
  EXPECT_EQ(validate(create("maintenance-worker-01-again", "node-worker-01")),
            AdmissionVerdict::deny(
                already_under_maintenance_message("node-worker-01", "maintenance-worker-01")));
}

TEST_F(ValidatorTest, MaintenanceBeingDeletedStillBlocksTheNode) {
  lookup_.maintenances["node-worker-01"] = {
      {.name = "leaving", .created = at(0), .deleting = true}};
  EXPECT_EQ(validate(create("next", "node-worker-01")),
            AdmissionVerdict::deny(already_under_maintenance_message("node-worker-01", "leaving")));
}

TEST_F(ValidatorTest, DuplicateMessageNamesTheOldestMaintenance) {
  lookup_.maintenances["node-worker-01"] = {{.name = "b-younger", .created = at(5)},
                                            {.name = "z-oldest", .created = at(1)},
                                            {.name = "a-same-age", .created = at(5)}};
  EXPECT_EQ(
      validate(create("new", "node-worker-01")),
      AdmissionVerdict::deny(already_under_maintenance_message("node-worker-01", "z-oldest")));
}

TEST_F(ValidatorTest, OtherNodesAreNotAffected) {
  lookup_.maintenances["node-worker-01"] = {{.name = "maintenance-worker-01", .created = at(0)}};
  EXPECT_EQ(validate(create("maintenance-worker-02", "node-worker-02")), AdmissionVerdict::allow());
}

TEST_F(ValidatorTest, ChangingNodeNameIsDenied) {
  EXPECT_EQ(validate(update("node-worker-01", "node-worker-05")),
            AdmissionVerdict::deny(std::string(kNodeNameImmutableMessage)));
}

TEST_F(ValidatorTest, ChangingNodeNameIsDeniedWhileTheObjectIsBeingDeleted) {
  EXPECT_EQ(validate(update("node-worker-01", "node-worker-05", /*deleting=*/true)),
            AdmissionVerdict::deny(std::string(kNodeNameImmutableMessage)));
}

TEST_F(ValidatorTest, UpdatesKeepingNodeNameAreAllowedWithoutLookups) {
  EXPECT_EQ(validate(update("node-worker-01", "node-worker-01")), AdmissionVerdict::allow());
  EXPECT_EQ(validate(update("node-worker-01", "node-worker-01", /*deleting=*/true)),
            AdmissionVerdict::allow());
  EXPECT_EQ(lookup_.node_lookups, 0);
}

TEST_F(ValidatorTest, DeleteAndConnectAreAllowed) {
  AdmissionRequest remove{.uid = "u", .operation = Operation::kDelete, .name = "m"};
  EXPECT_EQ(validate(remove), AdmissionVerdict::allow());
  AdmissionRequest connect{.uid = "u", .operation = Operation::kConnect, .name = "m"};
  EXPECT_EQ(validate(connect), AdmissionVerdict::allow());
}

TEST_F(ValidatorTest, AdmittedCreateReservesTheNodeUntilItExpires) {
  EXPECT_EQ(validate(create("first", "node-worker-01")), AdmissionVerdict::allow());
  EXPECT_EQ(validator_.reservation_count(), 1U);
  // Not stored yet (the lookup does not show it): the node is still reserved.
  EXPECT_EQ(validate(create("second", "node-worker-01")),
            AdmissionVerdict::deny(already_under_maintenance_message("node-worker-01", "first")));
  clock_.advance(seconds(9));
  EXPECT_EQ(validate(create("second", "node-worker-01")).allowed, false);
  clock_.advance(seconds(1));  // "first" never showed up (its create failed further down)
  EXPECT_EQ(validate(create("second", "node-worker-01")), AdmissionVerdict::allow());
}

TEST_F(ValidatorTest, ReservationEndsWhenTheLookupShowsTheMaintenance) {
  EXPECT_EQ(validate(create("first", "node-worker-01")), AdmissionVerdict::allow());
  lookup_.maintenances["node-worker-01"] = {{.name = "first", .created = at(0)}};
  EXPECT_EQ(validate(create("second", "node-worker-01")),
            AdmissionVerdict::deny(already_under_maintenance_message("node-worker-01", "first")));
  EXPECT_EQ(validator_.reservation_count(), 0U);
  // "first" is deleted: the next create is admitted at once, not after the reservation's ttl.
  lookup_.maintenances["node-worker-01"].clear();
  EXPECT_EQ(validate(create("third", "node-worker-01")), AdmissionVerdict::allow());
}

TEST_F(ValidatorTest, RetriedCreateOfTheSameObjectIsNotItsOwnDuplicate) {
  EXPECT_EQ(validate(create("first", "node-worker-01")), AdmissionVerdict::allow());
  EXPECT_EQ(validate(create("first", "node-worker-01")), AdmissionVerdict::allow());
  lookup_.maintenances["node-worker-01"] = {{.name = "first", .created = at(0)}};
  EXPECT_EQ(validate(create("first", "node-worker-01")), AdmissionVerdict::allow());
}

TEST_F(ValidatorTest, DryRunReservesNothing) {
  EXPECT_EQ(validate(create("probe", "node-worker-01", /*dry_run=*/true)),
            AdmissionVerdict::allow());
  EXPECT_EQ(validator_.reservation_count(), 0U);
  EXPECT_EQ(validate(create("real", "node-worker-01")), AdmissionVerdict::allow());
}

TEST_F(ValidatorTest, DryRunSeesReservations) {
  EXPECT_EQ(validate(create("real", "node-worker-01")), AdmissionVerdict::allow());
  EXPECT_EQ(validate(create("probe", "node-worker-01", /*dry_run=*/true)),
            AdmissionVerdict::deny(already_under_maintenance_message("node-worker-01", "real")));
}

TEST_F(ValidatorTest, TwentySimultaneousCreatesForOneNodeAdmitOne) {
  std::vector<AdmissionVerdict> verdicts(20);
  int finished = 0;
  for (int i = 0; i < 20; ++i) {
    asio::co_spawn(context_,
                   validator_.validate(create("racer-" + std::to_string(i), "node-worker-01")),
                   [&, i](std::exception_ptr error, AdmissionVerdict verdict) {
                     ASSERT_FALSE(error);
                     verdicts[static_cast<std::size_t>(i)] = std::move(verdict);
                     ++finished;
                   });
  }
  context_.run();
  ASSERT_EQ(finished, 20);
  int allowed = 0;
  std::string winner;
  for (int i = 0; i < 20; ++i) {
    if (verdicts[static_cast<std::size_t>(i)].allowed) {
      ++allowed;
      winner = "racer-" + std::to_string(i);
    }
  }
  ASSERT_EQ(allowed, 1);
  for (const AdmissionVerdict& verdict : verdicts) {
    if (!verdict.allowed) {
      EXPECT_EQ(verdict, AdmissionVerdict::deny(
                             already_under_maintenance_message("node-worker-01", winner)));
    }
  }
}

TEST_F(ValidatorTest, ForgedCreateOfAnotherRequesterDoesNotDenyTheAdmin) {
  // Anyone reaching the port can post this; the object is never stored.
  EXPECT_EQ(validate(create_by("mallory", "forged", "node-worker-01")), AdmissionVerdict::allow());
  EXPECT_EQ(validate(create_by("kubernetes-admin", "maintenance-worker-01", "node-worker-01")),
            AdmissionVerdict::allow());
  EXPECT_EQ(validator_.reservation_count(), 2U);
  // The admin's own second create still is a duplicate of its first.
  EXPECT_EQ(validate(create_by("kubernetes-admin", "again", "node-worker-01")),
            AdmissionVerdict::deny(
                already_under_maintenance_message("node-worker-01", "maintenance-worker-01")));
  // Once the admin's is stored, it refuses everyone, the forger included.
  lookup_.maintenances["node-worker-01"] = {{.name = "maintenance-worker-01", .created = at(0)}};
  EXPECT_EQ(validate(create_by("mallory", "forged-2", "node-worker-01")),
            AdmissionVerdict::deny(
                already_under_maintenance_message("node-worker-01", "maintenance-worker-01")));
}

TEST_F(ValidatorTest, ReservationBelongsToTheUsernameAndUid) {
  EXPECT_EQ(validate(create_by("alice", "first", "node-worker-01", "uid-1")),
            AdmissionVerdict::allow());
  // The same name with another uid is another user (deleted and re-created, or a forger).
  EXPECT_EQ(validate(create_by("alice", "second", "node-worker-01", "uid-2")),
            AdmissionVerdict::allow());
  EXPECT_EQ(validate(create_by("alice", "third", "node-worker-01", "uid-1")).allowed, false);
  clock_.advance(seconds(10));  // both expired
  EXPECT_EQ(validate(create_by("alice", "third", "node-worker-01", "uid-1")),
            AdmissionVerdict::allow());
  EXPECT_EQ(validator_.reservation_count(), 1U);
}

TEST_F(ValidatorTest, SimultaneousCreatesOfOneScriptAdmitOneWhateverOthersDo) {
  std::vector<AdmissionVerdict> verdicts(11);
  int finished = 0;
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    // The last one comes from someone else (a forged review, or another admin).
    AdmissionRequest request =
        i + 1 < verdicts.size()
            ? create_by("script", "racer-" + std::to_string(i), "node-worker-01")
            : create_by("mallory", "forged", "node-worker-01");
    asio::co_spawn(context_, validator_.validate(std::move(request)),
                   [&, i](std::exception_ptr error, AdmissionVerdict verdict) {
                     ASSERT_FALSE(error);
                     verdicts[i] = std::move(verdict);
                     ++finished;
                   });
  }
  context_.run();
  ASSERT_EQ(finished, 11);
  int script_allowed = 0;
  for (std::size_t i = 0; i + 1 < verdicts.size(); ++i) script_allowed += verdicts[i].allowed;
  EXPECT_EQ(script_allowed, 1);
  EXPECT_TRUE(verdicts.back().allowed);
}

TEST_F(ValidatorTest, FailedNodeLookupRefusesWithTheReason) {
  lookup_.node_error = Error(ErrorCode::kUnavailable, "connect to 127.0.0.1:6443: refused");
  EXPECT_EQ(validate(create("m", "node-worker-01")),
            AdmissionVerdict::internal_error(
                "cannot check whether node \"node-worker-01\" exists: ServiceUnavailable: connect "
                "to 127.0.0.1:6443: refused"));
  EXPECT_EQ(validator_.reservation_count(), 0U);
}

TEST_F(ValidatorTest, FailedListRefusesWithTheReason) {
  lookup_.list_error = Error(ErrorCode::kTimeout, "timed out", 504);
  EXPECT_EQ(validate(create("m", "node-worker-01")),
            AdmissionVerdict::internal_error(
                "cannot list the NodeMaintenances of node \"node-worker-01\": Timeout (504): "
                "timed out"));
  EXPECT_EQ(validator_.reservation_count(), 0U);
}

TEST_F(ValidatorTest, UnsafeControlPlaneIsAdmittedByDefaultAndWaitsInPending) {
  lookup_.unsafe_nodes = {"node-worker-01"};
  EXPECT_EQ(validate(create("maintenance-master", "node-worker-01")), AdmissionVerdict::allow());
  EXPECT_EQ(lookup_.quorum_lookups, 0);
}

TEST_F(ValidatorTest, RejectUnsafeControlPlaneDeniesWithUpstreamsMessage) {
  Validator strict{
      lookup_,
      {.reservation_ttl = seconds(10), .clock = &clock_, .reject_unsafe_control_plane = true}};
  lookup_.unsafe_nodes = {"node-worker-01"};
  EXPECT_EQ(http::test::run(context_, strict.validate(create("m1", "node-worker-01"))),
            AdmissionVerdict::deny("can not put master/control-plane node into maintenance at "
                                   "this moment, disrupting node node-worker-01 will violate etcd "
                                   "quorum"));
  EXPECT_EQ(strict.reservation_count(), 0U);
  EXPECT_EQ(http::test::run(context_, strict.validate(create("m2", "node-worker-02"))),
            AdmissionVerdict::allow());
  lookup_.quorum_error = Error(ErrorCode::kUnavailable, "connection refused");
  const AdmissionVerdict failed =
      http::test::run(context_, strict.validate(create("m3", "node-worker-02")));
  EXPECT_FALSE(failed.allowed);
  EXPECT_EQ(failed.code, 500);
}

}  // namespace
}  // namespace nmo::op::webhook
