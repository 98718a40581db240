// `kubectl maintenance diagnose`'s reads (diagnosis_gather.h over cluster_reader.h) against the
// in-memory API server. Coroutine arguments are named values: GCC 12 may destroy a temporary
// passed to a coroutine twice.
#include "cli/diagnosis_gather.h"

#include <string>
#include <utility>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "http/testing/run.h"
#include "kube/client/testing/fake_api_server.h"
#include "operator/gates/budget.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;
using kube::testing::FakeApiServer;

constexpr const char* kOperatorNamespace = "node-maintenance-operator-system";
constexpr const char* kLeaseNamespace = "medik8s-leases";

json::value event(const std::string& name, const std::string& kind, const std::string& about,
                  const std::string& reason) {
  return json::value{{"apiVersion", "v1"},
                     {"kind", "Event"},
                     {"metadata", {{"name", name}, {"namespace", "default"}}},
                     {"involvedObject", {{"kind", kind}, {"name", about}}},
                     {"reason", reason},
                     {"message", reason + " of " + about},
                     {"type", "Normal"},
                     {"lastTimestamp", "2026-12-07T10:00:00Z"}};
}

class DiagnosisGatherTest : public ::testing::Test {
 protected:
  DiagnosisGatherTest() : api_(context_.get_executor()), reader_(api_, "https://127.0.0.1:6443") {
    api_.put(json::value{{"apiVersion", "v1"},
                         {"kind", "Node"},
                         {"metadata", {{"name", "worker-1"}}},
                         {"spec", {{"unschedulable", true}}}});
    api_.put(json::value{
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", "db-0"}, {"namespace", "shop"}, {"labels", {{"app", "db"}}}}},
        {"spec", {{"nodeName", "worker-1"}}}});
    api_.put(json::value{{"apiVersion", "policy/v1"},
                         {"kind", "PodDisruptionBudget"},
                         {"metadata", {{"name", "db-pdb"}, {"namespace", "shop"}}},
                         {"spec", {{"selector", {{"matchLabels", {{"app", "db"}}}}}}},
                         {"status", {{"disruptionsAllowed", 0}}}});
    api_.put(json::value{{"apiVersion", "policy/v1"},
                         {"kind", "PodDisruptionBudget"},
                         {"metadata", {{"name", "web-pdb"}, {"namespace", "shop"}}},
                         {"spec", {{"selector", {{"matchLabels", {{"app", "web"}}}}}}}});
    api_.put(json::value{{"apiVersion", "coordination.k8s.io/v1"},
                         {"kind", "Lease"},
                         {"metadata",
                          {{"name", op::slot_lease_name("maintenance-worker-1")},
                           {"namespace", kOperatorNamespace}}},
                         {"spec", {{"holderIdentity", "maintenance-worker-1 (node worker-1)"}}}});
    api_.put(json::value{{"apiVersion", "coordination.k8s.io/v1"},
                         {"kind", "Lease"},
                         {"metadata", {{"name", "leader"}, {"namespace", kOperatorNamespace}}},
                         {"spec", {{"holderIdentity", "nmo-1"}}}});
    api_.put(event("e1", "NodeMaintenance", "maintenance-worker-1", "BeginMaintenance"));
    api_.put(event("e2", "NodeMaintenance", "maintenance-other", "BeginMaintenance"));
    api_.put(event("e3", "MaintenancePlan", "kernel", "NodeStarted"));
  }

  static json::value maintenance_json() {
    return json::value{
        {"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
        {"kind", "NodeMaintenance"},
        {"metadata", {{"name", "maintenance-worker-1"}}},
        {"spec", {{"nodeName", "worker-1"}}},
        {"status",
         {{"phase", "Running"},
          {"pendingPodsRefs",
           json::array{{{"namespace", "shop"}, {"name", "db-0"}, {"reason", "BlockedByPDB"}},
                       {{"namespace", "shop"}, {"name", "gone-0"}}}}}}};
  }

  op::NodeMaintenance maintenance() {
    auto nm = op::decode_node_maintenance(maintenance_json());
    EXPECT_TRUE(nm.has_value());
    return *nm;
  }

  DiagnosisRequest request() {
    return DiagnosisRequest{.operator_namespace = kOperatorNamespace,
                            .lease_namespace = kLeaseNamespace};
  }

  asio::io_context context_;
  FakeApiServer api_;
  ApiClusterReader reader_;
};

TEST_F(DiagnosisGatherTest, ReadsWhatTheVerdictNeeds) {
  op::NodeMaintenance nm = maintenance();
  DiagnosisRequest asked = request();
  auto input =
      http::test::run(context_, gather_diagnosis(reader_, std::move(nm), std::move(asked)));
  ASSERT_TRUE(input) << input.failure().message;
  ASSERT_EQ(input->events.size(), 1U);
  EXPECT_EQ(input->events[0].message, "BeginMaintenance of maintenance-worker-1");
  ASSERT_TRUE(input->node.has_value());
  EXPECT_TRUE(input->node->unschedulable);
  EXPECT_EQ(input->lease_ref, "medik8s-leases/node-worker-1");
  EXPECT_FALSE(input->node_lease.has_value());
  // Only slot Leases are slot holders (not the leader Lease beside them).
  EXPECT_EQ(input->slot_holders, std::vector<std::string>{"maintenance-worker-1 (node worker-1)"});
  EXPECT_EQ(input->max_parallel, 1);
  ASSERT_EQ(input->pods.size(), 2U);
  EXPECT_TRUE(input->pods[0].exists);
  ASSERT_EQ(input->pods[0].pdbs.size(), 1U);
  EXPECT_EQ(input->pods[0].pdbs[0].meta.name, "db-pdb");
  EXPECT_FALSE(input->pods[1].exists);
  EXPECT_NE(diagnosis_verdict(*input).find("shop/db-0"), std::string::npos)
      << diagnosis_verdict(*input);
}

TEST_F(DiagnosisGatherTest, APlanGetsTheVerdictOfEachDrainingNode) {
  api_.put(maintenance_json());
  auto plan = op::decode_maintenance_plan(json::value{
      {"metadata", {{"name", "kernel"}}},
      {"spec", {{"nodes", json::array{"worker-1", "worker-2"}}}},
      {"status",
       {{"phase", "Running"},
        {"nodes",
         json::array{
             {{"name", "worker-1"}, {"phase", "Draining"}, {"maintenance", "maintenance-worker-1"}},
             {{"name", "worker-2"}, {"phase", "Waiting"}}}}}}});
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  DiagnosisRequest asked = request();
  auto input =
      http::test::run(context_, gather_plan_diagnosis(reader_, std::move(*plan), std::move(asked)));
  ASSERT_TRUE(input) << input.failure().message;
  ASSERT_EQ(input->events.size(), 1U);
  EXPECT_EQ(input->events[0].reason, "NodeStarted");
  ASSERT_EQ(input->drain_verdicts.size(), 1U);
  EXPECT_NE(input->drain_verdicts["worker-1"].find("shop/db-0"), std::string::npos)
      << input->drain_verdicts["worker-1"];
}

TEST_F(DiagnosisGatherTest, AFailedReadIsOneLineWithTheServer) {
  api_.fail_next("*", "/api/v1/namespaces/default/events",
                 Error(ErrorCode::kForbidden, "events is forbidden", 403));
  op::NodeMaintenance nm = maintenance();
  DiagnosisRequest asked = request();
  auto input =
      http::test::run(context_, gather_diagnosis(reader_, std::move(nm), std::move(asked)));
  ASSERT_FALSE(input);
  EXPECT_NE(input.failure().message.find("events is forbidden"), std::string::npos)
      << input.failure().message;
}

}  // namespace
}  // namespace nmo::cli
