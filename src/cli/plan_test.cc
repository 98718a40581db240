#include "cli/plan.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "operator/gates/budget.h"

namespace nmo::cli {
namespace {

kube::Pod pod(std::string_view json) {
  auto decoded = kube::decode_pod(boost::json::parse(json));
  EXPECT_OK(decoded);
  return decoded ? *decoded : kube::Pod{};
}

kube::PodDisruptionBudget pdb(std::string_view ns, std::string_view name, std::string_view app,
                              int allowed) {
  auto decoded = kube::decode_pod_disruption_budget(boost::json::parse(
      R"json({"metadata":{"namespace":")json" + std::string(ns) + R"json(","name":")json" +
      std::string(name) + R"json("},"spec":{"selector":{"matchLabels":{"app":")json" +
      std::string(app) + R"json("}}},"status":{"disruptionsAllowed":)json" +
      std::to_string(allowed) + R"json(,"currentHealthy":1,"desiredHealthy":1}})json"));
  EXPECT_OK(decoded);
  return decoded ? *decoded : kube::PodDisruptionBudget{};
}

kube::Pod app_pod(std::string_view name, std::string_view app, bool ready = true) {
  return pod(
      R"json({"metadata":{"namespace":"w","name":")json" + std::string(name) +
      R"json(","labels":{"app":")json" + std::string(app) +
      R"json("}},"spec":{"nodeName":"n1"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":")json" +
      (ready ? "True" : "False") + R"json("}]}})json");
}

PlanInput base_input() {
  PlanInput input;
  input.maintenance_name = "maintenance-n1";
  input.node.meta.name = "n1";
  input.now = *kube::parse_time("2024-05-01T10:00:00Z");
  input.operator_namespace = "node-maintenance-operator-system";
  input.lease_namespace = "medik8s-leases";
  return input;
}

const PodPlan& find(const Plan& plan, std::string_view name) {
  for (const auto& p : plan.pods) {
    if (p.name == name) return p;
  }
  static const PodPlan kMissing{};
  ADD_FAILURE() << "no plan for pod " << name;
  return kMissing;
}

TEST(Plan, SkipsDaemonSetAndMirrorPodsEvictsTheRest) {
  PlanInput input = base_input();
  input.pods = {
      pod(R"json({"metadata":{"namespace":"kube-system","name":"ds-1","ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"agent","uid":"u1","controller":true}]},"spec":{"nodeName":"n1"}})json"),
      pod(R"json({"metadata":{"namespace":"kube-system","name":"orphan","ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"gone","uid":"u2","controller":true}]},"spec":{"nodeName":"n1"}})json"),
      pod(R"json({"metadata":{"namespace":"kube-system","name":"static","annotations":{"kubernetes.io/config.mirror":"x"}},"spec":{"nodeName":"n1"}})json"),
      pod(R"json({"metadata":{"namespace":"w","name":"logs"},"spec":{"nodeName":"n1","volumes":[{"name":"d","emptyDir":{}}]}})json"),
  };
  input.daemon_sets = {{.namespace_ = "kube-system", .name = "agent", .uid = "u1"}};
  const Plan plan = make_plan(input);
  EXPECT_EQ(find(plan, "ds-1").verdict, PodVerdict::kSkip);
  EXPECT_EQ(find(plan, "ds-1").reason, "DaemonSet");
  EXPECT_EQ(find(plan, "static").reason, "MirrorPod");
  EXPECT_EQ(find(plan, "orphan").verdict, PodVerdict::kEvict);
  EXPECT_EQ(find(plan, "logs").detail, "emptyDir data is lost");
  EXPECT_EQ(plan.count(PodVerdict::kEvict), 2U);
  EXPECT_TRUE(plan.would_start());
  EXPECT_EQ(plan_verdict(plan), "would start at once and drain 2 pods");
  // Evicted pods come first.
  EXPECT_EQ(plan.pods.front().verdict, PodVerdict::kEvict);
}

TEST(Plan, PdbWithoutDisruptionsBlocksAndSeveralPdbsBlock) {
  PlanInput input = base_input();
  input.pods = {app_pod("db-0", "db"), app_pod("web-0", "web"), app_pod("web-1", "web"),
                app_pod("both-0", "both")};
  input.pdbs = {pdb("w", "db-pdb", "db", 0), pdb("w", "web-pdb", "web", 1),
                pdb("w", "both-a", "both", 1), pdb("w", "both-b", "both", 1),
                pdb("other", "db-pdb", "db", 0)};
  const Plan plan = make_plan(input);
  EXPECT_EQ(find(plan, "db-0").verdict, PodVerdict::kBlock);
  EXPECT_EQ(find(plan, "db-0").reason, "BlockedByPDB");
  EXPECT_EQ(find(plan, "db-0").detail,
            "PDB w/db-pdb: 0 disruptions allowed (1 healthy, 1 desired)");
  EXPECT_EQ(find(plan, "db-0").pdbs, std::vector<std::string>{"w/db-pdb"});
  EXPECT_EQ(find(plan, "both-0").reason, "MultiplePDBs");
  // One disruption allowed: the first pod goes, the second waits for its replacement.
  EXPECT_EQ(find(plan, "web-0").verdict, PodVerdict::kEvict);
  EXPECT_EQ(find(plan, "web-0").reason, "");
  EXPECT_EQ(find(plan, "web-1").verdict, PodVerdict::kEvict);
  EXPECT_EQ(find(plan, "web-1").reason, "WaitsForPDB");
  EXPECT_EQ(plan_verdict(plan).rfind("would start, then block on 2 pods (first: w/both-0", 0), 0U)
      << plan_verdict(plan);
}

TEST(Plan, UnhealthyPodPassesAHealthyBudget) {
  PlanInput input = base_input();
  input.pods = {app_pod("db-1", "db", /*ready=*/false)};
  input.pdbs = {pdb("w", "db-pdb", "db", 0)};
  EXPECT_EQ(find(make_plan(input), "db-1").verdict, PodVerdict::kEvict);
}

// A VM's pod as the operator decides it (operator/kubevirt/vm_policy.h): evicted when KubeVirt
// live-migrates the VM on eviction, held when the eviction would shut the VM down or KubeVirt
// refuses it for good.
TEST(Plan, VirtLauncherIsHeldUnlessKubeVirtMigratesItOnEviction) {
  PlanInput input = base_input();
  const std::string launcher =
      R"json({"metadata":{"namespace":"vms","name":"virt-launcher-NAME-x","labels":{"kubevirt.io":"virt-launcher"},"annotations":{"kubevirt.io/domain":"NAME"}},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}})json";
  auto named = [&launcher](const std::string& vm) {
    std::string json = launcher;
    for (auto at = json.find("NAME"); at != std::string::npos; at = json.find("NAME")) {
      json.replace(at, 4, vm);
    }
    return pod(json);
  };
  input.pods = {named("db"), named("web"), named("order"), named("api"), named("gone")};
  Plan unserved = make_plan(input);
  EXPECT_EQ(find(unserved, "virt-launcher-db-x").verdict, PodVerdict::kUnknown);
  EXPECT_EQ(find(unserved, "virt-launcher-db-x").detail,
            "virt-launcher of VMI vms/db: what its eviction does is unknown (kubevirt.io/v1 is not "
            "served)");

  input.kubevirt_served = true;
  auto vmi = [](std::string name, std::optional<std::string> strategy, bool migratable) {
    return op::Vmi{.namespace_ = "vms",
                   .name = std::move(name),
                   .eviction_strategy = std::move(strategy),
                   .live_migratable = migratable,
                   .not_migratable_because = migratable ? "" : "disks are not shared"};
  };
  input.vmis["vms/db"] = vmi("db", "None", false);
  input.vmis["vms/web"] = vmi("web", "LiveMigrate", true);
  input.vmis["vms/order"] = vmi("order", std::nullopt, true);  // the story's VM
  input.vmis["vms/api"] = vmi("api", "LiveMigrate", false);
  Plan plan = make_plan(input);
  EXPECT_EQ(find(plan, "virt-launcher-db-x").verdict, PodVerdict::kBlock);
  EXPECT_EQ(find(plan, "virt-launcher-db-x").reason, "VMWouldShutDown");
  EXPECT_EQ(find(plan, "virt-launcher-db-x").detail,
            "VMI vms/db cannot live-migrate: disks are not shared and has eviction strategy None: "
            "evicting its pod would shut it down; set vmEvictionPolicy AllowShutdown on the "
            "maintenance to allow that");
  // Migratable, but without a strategy KubeVirt does not migrate it (its eviction would stop
  // it): the operator migrates it itself.
  EXPECT_EQ(find(plan, "virt-launcher-order-x").verdict, PodVerdict::kEvict);
  EXPECT_EQ(find(plan, "virt-launcher-order-x").reason, "MigratingVM");
  EXPECT_EQ(find(plan, "virt-launcher-order-x").detail,
            "VMI vms/order has no eviction strategy, so evicting its pod would shut it down: the "
            "operator live-migrates it instead (a VirtualMachineInstanceMigration); the pod ends "
            "once the VM has left");
  EXPECT_EQ(find(plan, "virt-launcher-web-x").verdict, PodVerdict::kEvict);
  EXPECT_EQ(find(plan, "virt-launcher-web-x").reason, "MigratingVM");
  EXPECT_EQ(find(plan, "virt-launcher-web-x").detail,
            "VMI vms/web has eviction strategy LiveMigrate: KubeVirt live-migrates it when its pod "
            "is evicted; the eviction is deferred until the VM has left");
  EXPECT_EQ(find(plan, "virt-launcher-api-x").verdict, PodVerdict::kBlock);
  EXPECT_EQ(find(plan, "virt-launcher-api-x").reason, "VMNotMigratable");
  EXPECT_EQ(find(plan, "virt-launcher-gone-x").verdict, PodVerdict::kUnknown);
  EXPECT_EQ(find(plan, "virt-launcher-gone-x").detail,
            "virt-launcher of VMI vms/gone: the VMI was not found");

  // The cluster-wide default of the KubeVirt CR applies to VMIs without their own.
  input.kubevirt_eviction_strategy = "LiveMigrate";
  plan = make_plan(input);
  EXPECT_EQ(find(plan, "virt-launcher-order-x").reason, "MigratingVM");
  EXPECT_EQ(find(plan, "virt-launcher-db-x").reason, "VMWouldShutDown");
}

TEST(Plan, GatesFollowTheOperator) {
  PlanInput input = base_input();
  // A foreign holder of another node's lease fills the default budget of 1.
  auto lease = kube::decode_lease(boost::json::parse(
      R"json({"metadata":{"name":"node-n2","namespace":"medik8s-leases"},"spec":{"holderIdentity":"NodeHealthCheck-x","leaseDurationSeconds":3600,"renewTime":"2024-05-01T09:59:00.000000Z"}})json"));
  ASSERT_OK(lease);
  input.node_leases = {*lease};
  Plan plan = make_plan(input);
  ASSERT_EQ(plan.gates.size(), 4U);
  EXPECT_TRUE(plan.gates[0].open);
  EXPECT_TRUE(plan.gates[1].open);
  EXPECT_EQ(plan.gates[2].detail, "not a control-plane node");
  EXPECT_FALSE(plan.gates[3].open);
  EXPECT_NE(plan.gates[3].detail.find("1 of 1 slots in use"), std::string::npos)
      << plan.gates[3].detail;
  EXPECT_NE(plan.gates[3].detail.find("NodeHealthCheck-x (node n2)"), std::string::npos);
  EXPECT_EQ(plan_verdict(plan).rfind("would stay Pending: 1 of 1 slots in use", 0), 0U);

  input.max_parallel = 2;
  EXPECT_TRUE(make_plan(input).would_start());

  // The node's own lease held by NHC closes the node-lease gate.
  lease->meta.name = "node-n1";
  input.node_leases = {*lease};
  plan = make_plan(input);
  EXPECT_FALSE(plan.gates[1].open);
  EXPECT_NE(plan.gates[1].detail.find("medik8s-leases/node-n1 is held by NodeHealthCheck-x"),
            std::string::npos)
      << plan.gates[1].detail;
}

TEST(Plan, ExistingMaintenanceAndQuorum) {
  PlanInput input = base_input();
  auto nm = op::decode_node_maintenance(boost::json::parse(
      R"json({"metadata":{"name":"old","creationTimestamp":"2024-05-01T09:00:00Z"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}})json"));
  ASSERT_OK(nm);
  input.maintenances = {*nm};
  // Three stacked etcd members; n2's node is NotReady, so taking n1 leaves one.
  for (const std::string node : {"n1", "n2", "n3"}) {
    input.etcd.control_plane_ready[node] = node != "n2";
    kube::Pod member;
    member.meta.namespace_ = "kube-system";
    member.meta.name = "etcd-" + node;
    member.meta.labels = kube::Labels{{"component", "etcd"}};
    member.meta.annotations.set(std::string(kube::kMirrorPodAnnotation), "hash");
    member.node_name = node;
    member.ready_status = "True";
    input.etcd.member_pods.push_back(member);
  }
  const Plan plan = make_plan(input);
  EXPECT_FALSE(plan.gates[0].open);
  EXPECT_EQ(plan.gates[0].detail,
            "node \"n1\" is already under maintenance by NodeMaintenance \"old\"");
  EXPECT_FALSE(plan.gates[2].open);
  EXPECT_EQ(plan.gates[2].detail,
            "etcd quorum is not maintained when node n1 is remediated (3 etcd members, 2 healthy, "
            "1 left while it is down, 2 needed)");
}

TEST(Plan, JsonAndReport) {
  PlanInput input = base_input();
  input.pods = {app_pod("db-0", "db")};
  input.pdbs = {pdb("w", "db-pdb", "db", 0)};
  const Plan plan = make_plan(input);
  const boost::json::value json = plan_to_json(plan);
  EXPECT_EQ(json.at("pods").at(0).at("action"), "block");
  EXPECT_EQ(json.at("pods").at(0).at("pdbs").at(0), "w/db-pdb");
  EXPECT_EQ(json.at("wouldStart"), true);
  const std::string report = plan_report(plan);
  EXPECT_NE(report.find("Pods that will block the drain (1):\n  w/db-0  BlockedByPDB  PDB "
                        "w/db-pdb: 0 disruptions allowed (1 healthy, 1 desired)\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Pods to evict (0):\n  none\n"), std::string::npos) << report;
}

}  // namespace
}  // namespace nmo::cli
