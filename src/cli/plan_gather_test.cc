// `kubectl maintenance plan`'s reads (plan_gather.h over cluster_reader.h) against the in-memory
// API server, and the verdicts make_plan() draws from them: the gates are the operator's own
// evaluation (operator/gates/admission_gates.h), fed by lists here as the cache feeds it there.
#include "cli/plan_gather.h"

#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "cli/exit_code.h"
#include "cli/plan.h"
#include "http/testing/run.h"
#include "kube/client/testing/fake_api_server.h"
#include "operator/api/maintenance_plan.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;
using kube::testing::FakeApiServer;

constexpr const char* kOperatorNamespace = "node-maintenance-operator-system";
constexpr const char* kLeaseNamespace = "medik8s-leases";

json::value node_object(const std::string& name, bool control_plane, bool ready = true) {
  json::object labels;
  if (control_plane) labels["node-role.kubernetes.io/control-plane"] = "";
  return json::value{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", labels}}},
      {"spec", json::object{}},
      {"status",
       {{"conditions", json::array{{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

json::value etcd_pod(const std::string& node) {
  return json::value{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "etcd-" + node},
        {"namespace", "kube-system"},
        {"labels", {{"component", "etcd"}}},
        {"annotations", {{"kubernetes.io/config.mirror", "hash"}}}}},
      {"spec", {{"nodeName", node}}},
      {"status", {{"conditions", json::array{{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json::value maintenance(const std::string& name, const std::string& node, const char* phase) {
  json::value nm{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                 {"kind", "NodeMaintenance"},
                 {"metadata", {{"name", name}}},
                 {"spec", {{"nodeName", node}}}};
  if (phase != nullptr) nm.as_object()["status"] = json::object{{"phase", phase}};
  return nm;
}

json::value lease_object(const std::string& ns, const std::string& name,
                         const std::string& holder) {
  return json::value{{"apiVersion", "coordination.k8s.io/v1"},
                     {"kind", "Lease"},
                     {"metadata", {{"name", name}, {"namespace", ns}}},
                     {"spec",
                      {{"holderIdentity", holder},
                       {"leaseDurationSeconds", 3600},
                       {"acquireTime", kube::format_micro_time(kube::wall_now())},
                       {"renewTime", kube::format_micro_time(kube::wall_now())}}}};
}

class PlanGatherTest : public ::testing::Test {
 protected:
  PlanGatherTest() : api_(context_.get_executor()), reader_(api_, "https://127.0.0.1:6443") {
    for (const std::string cp : {"cp-1", "cp-2", "cp-3"}) {
      api_.put(node_object(cp, true));
      api_.put(etcd_pod(cp));
    }
    api_.put(node_object("worker-1", false));
  }

  Outcome<PlanInput> gather(const std::string& node, int max_parallel = 0) {
    PlanRequest request{.node = node,
                        .maintenance_name = "maintenance-" + node,
                        .operator_namespace = kOperatorNamespace,
                        .lease_namespace = kLeaseNamespace,
                        .max_parallel = max_parallel};
    return http::test::run(context_, gather_plan(reader_, std::move(request)));
  }

  // The gate `name` of the plan for `node`.
  GatePlan gate(const std::string& node, const std::string& name, int max_parallel = 0) {
    auto input = gather(node, max_parallel);
    EXPECT_TRUE(input) << input.failure().message;
    if (!input) return {};
    const Plan plan = make_plan(*input);
    for (const GatePlan& g : plan.gates) {
      if (g.gate == name) return g;
    }
    ADD_FAILURE() << "no gate " << name;
    return {};
  }

  asio::io_context context_;
  FakeApiServer api_;
  ApiClusterReader reader_;
};

TEST_F(PlanGatherTest, AFreeWorkerWouldStart) {
  auto input = gather("worker-1");
  ASSERT_TRUE(input) << input.failure().message;
  const Plan plan = make_plan(*input);
  EXPECT_TRUE(plan.would_start()) << plan_verdict(plan);
  EXPECT_EQ(input->max_parallel, 1);
  EXPECT_EQ(input->max_parallel_source, "the default: the operator has not published its budget");
  EXPECT_EQ(input->etcd.control_plane_ready.size(), 3U);
  EXPECT_EQ(input->etcd.member_pods.size(), 3U);
  // The plugin never lists every node of the cluster, only the labelled control-plane ones.
  for (const auto& request : api_.requests()) {
    if (request.verb == "list" && request.path.starts_with("/api/v1/nodes")) {
      ASSERT_TRUE(request.list_options.has_value());
      EXPECT_FALSE(request.list_options->label_selector.empty()) << request.path;
    }
  }
}

TEST_F(PlanGatherTest, AMissingNodeIsExitThree) {
  auto input = gather("worker-9");
  ASSERT_FALSE(input);
  EXPECT_EQ(input.failure().message, "node \"worker-9\" not found");
  EXPECT_EQ(input.failure().exit_code, kExitNotFound);
}

TEST_F(PlanGatherTest, AMissingNodeMaintenanceApiIsExitFour) {
  api_.fail_next(
      "list", "/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances",
      Error(ErrorCode::kNotFound, "the server could not find the requested resource", 404),
      FakeApiServer::kEveryCall);
  api_.fail_next(
      "get", "/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances",
      Error(ErrorCode::kNotFound, "the server could not find the requested resource", 404),
      FakeApiServer::kEveryCall);
  auto input = gather("worker-1");
  ASSERT_FALSE(input);
  EXPECT_EQ(input.failure().exit_code, kExitUnavailable) << input.failure().message;
}

TEST_F(PlanGatherTest, QuorumCountsAControlPlaneNodeAnotherMaintenanceHolds) {
  EXPECT_TRUE(gate("cp-2", "etcd quorum", 3).open);
  // cp-1 is under maintenance (Running): its member is on its way down, so taking cp-2 too
  // would leave one of three. The operator refuses; so does the plan.
  api_.put(maintenance("maintenance-cp-1", "cp-1", "Running"));
  const GatePlan quorum = gate("cp-2", "etcd quorum", 3);
  EXPECT_FALSE(quorum.open);
  EXPECT_EQ(quorum.detail,
            "etcd quorum is not maintained when node cp-2 is remediated (3 etcd members, 2 "
            "healthy, 1 left while it is down, 2 needed (held by another maintenance: cp-1))");
}

TEST_F(PlanGatherTest, QuorumCountsAControlPlaneNodeWhoseMaintenanceHoldsASlot) {
  // Pending on record, but its slot Lease is taken: it is being admitted.
  api_.put(maintenance("maintenance-cp-1", "cp-1", "Pending"));
  api_.put(lease_object(kOperatorNamespace, op::slot_lease_name("maintenance-cp-1"),
                        "maintenance-cp-1 (node cp-1)"));
  EXPECT_FALSE(gate("cp-2", "etcd quorum", 3).open);
  // A NotReady control-plane node counts as down too.
  api_.erase("/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances/maintenance-cp-1");
  api_.put(node_object("cp-3", true, /*ready=*/false));
  EXPECT_FALSE(gate("cp-2", "etcd quorum", 3).open);
  EXPECT_TRUE(gate("cp-3", "etcd quorum", 3).open);
}

TEST_F(PlanGatherTest, NodeHealthCheckHoldingTheLeaseAndAFullBudget) {
  api_.put(lease_object(kLeaseNamespace, op::node_lease_name("worker-1"), "NodeHealthCheck-x"));
  EXPECT_FALSE(gate("worker-1", "node lease").open);
  api_.erase("/apis/coordination.k8s.io/v1/namespaces/medik8s-leases/leases/node-worker-1");
  api_.put(maintenance("maintenance-cp-1", "cp-1", "Running"));
  const GatePlan budget = gate("worker-1", "budget");
  EXPECT_FALSE(budget.open);
  EXPECT_EQ(budget.detail,
            "1 of 1 slots in use (--max-parallel-maintenances 1, the default: the operator has "
            "not published its budget): maintenance-cp-1 (node cp-1); it would wait for a slot "
            "(BlockedByNodeHealthCheck)");
}

// A running pod of `owner_kind`/`owner` on `node`; `tolerates_all`: it tolerates every taint.
json::value plan_pod(const std::string& ns, const std::string& name, const std::string& node,
                     const std::string& owner_kind, const std::string& owner, bool tolerates_all) {
  json::value pod{{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata",
                   {{"name", name},
                    {"namespace", ns},
                    {"ownerReferences", json::array{{{"apiVersion", "apps/v1"},
                                                     {"kind", owner_kind},
                                                     {"name", owner},
                                                     {"uid", owner + "-uid"},
                                                     {"controller", true}}}}}},
                  {"spec", {{"nodeName", node}}},
                  {"status", {{"phase", "Running"}}}};
  if (tolerates_all) {
    pod.as_object()["spec"].as_object()["tolerations"] =
        json::array{{{"operator", "Exists"}}, {{"key", "x"}, {"effect", "NoExecute"}}};
  }
  return pod;
}

TEST_F(PlanGatherTest, APlanReadsThePodsOfTheNodesDrainedBeforeOthers) {
  for (const std::string node : {"worker-2", "worker-3", "worker-4"}) {
    api_.put(node_object(node, false));
  }
  api_.put(json::value{
      {"apiVersion", "apps/v1"},
      {"kind", "DaemonSet"},
      {"metadata", {{"name", "agent"}, {"namespace", "kube-system"}, {"uid", "agent-uid"}}}});
  // worker-1 is drained: what is left on it is not the plan's concern.
  api_.put(plan_pod("shop", "left-0", "worker-1", "StatefulSet", "left", true));
  api_.put(plan_pod("shop", "cache-0", "worker-2", "StatefulSet", "cache", true));
  api_.put(plan_pod("shop", "web-0", "worker-2", "StatefulSet", "web", false));
  api_.put(plan_pod("kube-system", "agent-3", "worker-3", "DaemonSet", "agent", true));
  api_.put(plan_pod("shop", "cache-1", "worker-3", "StatefulSet", "cache", true));
  // worker-4 waits last: its pods find no node of the plan to come.
  api_.put(plan_pod("shop", "cache-2", "worker-4", "StatefulSet", "cache", true));
  auto plan = op::decode_maintenance_plan(json::value{
      {"metadata", {{"name", "kernel"}}},
      {"spec", {{"nodes", json::array{"worker-1", "worker-2", "worker-3", "worker-4"}}}},
      {"status",
       {{"phase", "Running"},
        {"nodes", json::array{{{"name", "worker-1"}, {"phase", "InMaintenance"}},
                              {{"name", "worker-2"}, {"phase", "Draining"}},
                              {{"name", "worker-3"}, {"phase", "Waiting"}},
                              {{"name", "worker-4"}, {"phase", "Waiting"}}}}}}});
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  auto input = http::test::run(context_, gather_repeat_evictions(reader_, std::move(*plan)));
  ASSERT_TRUE(input) << input.failure().message;
  EXPECT_EQ(input->daemon_sets.size(), 1U);
  const RepeatEvictions found = find_repeat_evictions(*input);
  EXPECT_EQ(found.nodes, (std::vector<std::string>{"worker-2", "worker-3"}));
  EXPECT_EQ(found.pods, (std::vector<RepeatEviction>{
                            {.namespace_ = "shop",
                             .name = "cache-0",
                             .node = "worker-2",
                             .toleration = "every taint (operator Exists)"},
                            {.namespace_ = "shop",
                             .name = "cache-1",
                             .node = "worker-3",
                             .toleration = "every taint (operator Exists)"},
                        }));
  std::vector<std::string> pod_lists;
  for (const auto& request : api_.requests()) {
    if (request.verb == "list" && request.path.starts_with("/api/v1/pods")) {
      ASSERT_TRUE(request.list_options.has_value());
      pod_lists.push_back(request.list_options->field_selector);
    }
  }
  EXPECT_EQ(pod_lists,
            (std::vector<std::string>{"spec.nodeName=worker-2", "spec.nodeName=worker-3"}));
}

TEST_F(PlanGatherTest, APlanWithoutNodesInItsStatusReadsNothing) {
  auto plan = op::decode_maintenance_plan(json::value{
      {"metadata", {{"name", "kernel"}}}, {"spec", {{"nodes", json::array{"worker-1"}}}}});
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  auto input = http::test::run(context_, gather_repeat_evictions(reader_, std::move(*plan)));
  ASSERT_TRUE(input) << input.failure().message;
  EXPECT_TRUE(input->nodes_unknown);
  EXPECT_TRUE(input->nodes.empty());
  EXPECT_TRUE(api_.requests().empty());
}

TEST_F(PlanGatherTest, AFailedPlanWithoutNodesHasNoneToLookAt) {
  auto plan = op::decode_maintenance_plan(json::value{
      {"metadata", {{"name", "kernel"}}},
      {"spec", {{"nodeSelector", {{"matchLabels", {{"rack", "z"}}}}}}},
      {"status", {{"phase", "Failed"}, {"message", "no node matches spec.nodeSelector"}}}});
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  auto input = http::test::run(context_, gather_repeat_evictions(reader_, std::move(*plan)));
  ASSERT_TRUE(input) << input.failure().message;
  EXPECT_FALSE(input->nodes_unknown);
  EXPECT_TRUE(input->nodes.empty());
  EXPECT_TRUE(api_.requests().empty());
}

}  // namespace
}  // namespace nmo::cli
