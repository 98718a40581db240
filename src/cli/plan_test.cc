#include "cli/plan.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "operator/api/maintenance_plan.h"
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

op::MaintenancePlan plan_with_nodes(std::string_view nodes_json) {
  auto decoded = op::decode_maintenance_plan(boost::json::parse(
      R"json({"metadata":{"name":"memory-upgrade"},"status":{"phase":"Running","nodes":)json" +
      std::string(nodes_json) + "}}"));
  EXPECT_OK(decoded);
  return decoded ? *decoded : op::MaintenancePlan{};
}

TEST(RepeatEvictions, NodesDrainedBeforeOthersAreFollowedByAWaitingNode) {
  EXPECT_EQ(nodes_drained_before_others(plan_with_nodes(R"json([
      {"name":"w1","phase":"Done"}, {"name":"w2","phase":"Draining"},
      {"name":"w3","phase":"InMaintenance"}, {"name":"w4","phase":"Waiting"},
      {"name":"w5","phase":"Failed"}, {"name":"w6","phase":"Waiting"},
      {"name":"w7","phase":"Waiting"}])json")),
            (std::vector<std::string>{"w2", "w4", "w6"}));
  // The last node to wait: the pods evicted from it find no node of the plan to come.
  EXPECT_EQ(nodes_drained_before_others(plan_with_nodes(
                R"json([{"name":"w1","phase":"Draining"}, {"name":"w2","phase":"Waiting"}])json")),
            (std::vector<std::string>{"w1"}));
  EXPECT_EQ(nodes_drained_before_others(plan_with_nodes(
                R"json([{"name":"w1","phase":"Done"}, {"name":"w2","phase":"Draining"},
                        {"name":"w3","phase":"HealthCheck"}])json")),
            std::vector<std::string>{});
  EXPECT_EQ(nodes_drained_before_others(op::MaintenancePlan{}), std::vector<std::string>{});
}

TEST(RepeatEvictions, DescribesTolerations) {
  EXPECT_EQ(describe_toleration({.operator_ = "Exists"}), "every taint (operator Exists)");
  EXPECT_EQ(describe_toleration({.operator_ = "Exists", .effect = "PreferNoSchedule"}),
            "every PreferNoSchedule taint (operator Exists)");
  EXPECT_EQ(
      describe_toleration({.key = "nodemaintenance.medik8s.io/planned", .operator_ = "Exists"}),
      "taint nodemaintenance.medik8s.io/planned (operator Exists)");
  EXPECT_EQ(describe_toleration(
                {.key = "nodemaintenance.medik8s.io/planned", .effect = "PreferNoSchedule"}),
            "taint nodemaintenance.medik8s.io/planned:PreferNoSchedule (operator Equal)");
  EXPECT_EQ(describe_toleration({.key = "k", .operator_ = "Equal", .value = "v"}),
            "taint k=v (operator Equal)");
}

// A pod on `node` with `tolerations` (a JSON array) and the owner reference `owner` (a JSON
// object, or "" for none).
kube::Pod tolerating_pod(std::string_view ns, std::string_view name, std::string_view node,
                         std::string_view tolerations, std::string_view owner,
                         std::string_view phase = "Running") {
  const std::string owners =
      owner.empty() ? "" : R"json(,"ownerReferences":[)json" + std::string(owner) + "]";
  return pod(R"json({"metadata":{"namespace":")json" + std::string(ns) + R"json(","name":")json" +
             std::string(name) + "\"" + owners + R"json(},"spec":{"nodeName":")json" +
             std::string(node) + R"json(","tolerations":)json" + std::string(tolerations) +
             R"json(},"status":{"phase":")json" + std::string(phase) + R"json("}})json");
}

constexpr std::string_view kStatefulSet =
    R"json({"apiVersion":"apps/v1","kind":"StatefulSet","name":"s","uid":"s1","controller":true})json";
constexpr std::string_view kDaemonSet =
    R"json({"apiVersion":"apps/v1","kind":"DaemonSet","name":"agent","uid":"d1","controller":true})json";
constexpr std::string_view kEveryTaint = R"json([{"operator":"Exists"}])json";

RepeatEvictionInput repeat_input() {
  RepeatEvictionInput input{.plan = "memory-upgrade",
                            .nodes = {"node-worker-04", "node-worker-05"}};
  input.daemon_sets = {op::DaemonSetRef{.namespace_ = "kube-system", .name = "agent", .uid = "d1"}};
  input.pods = {
      tolerating_pod("shop", "cache-1", "node-worker-05", kEveryTaint, kStatefulSet),
      tolerating_pod("shop", "cache-0", "node-worker-05", kEveryTaint, kStatefulSet),
      tolerating_pod("web", "front-0", "node-worker-04",
                     R"json([{"key":"dedicated","operator":"Equal","value":"web"},
                             {"key":"nodemaintenance.medik8s.io/planned","operator":"Exists",
                              "effect":"PreferNoSchedule"}])json",
                     kStatefulSet),
      // Stays on its node: a pod of an existing DaemonSet.
      tolerating_pod("kube-system", "agent-x", "node-worker-04", kEveryTaint, kDaemonSet),
      // Not recreated elsewhere: no controller, or it has finished.
      tolerating_pod("shop", "debug", "node-worker-04", kEveryTaint, ""),
      tolerating_pod("shop", "migrate-1", "node-worker-04", kEveryTaint, kStatefulSet, "Succeeded"),
      // Tolerations the taint is not judged by: another key, another value, NoSchedule only.
      tolerating_pod("shop", "gpu-0", "node-worker-04",
                     R"json([{"key":"gpu","operator":"Exists"},
                             {"key":"nodemaintenance.medik8s.io/planned","value":"x"},
                             {"operator":"Exists","effect":"NoSchedule"}])json",
                     kStatefulSet),
  };
  return input;
}

TEST(RepeatEvictions, PodsThatMustLeaveAndTolerateTheSteeringTaint) {
  const RepeatEvictions found = find_repeat_evictions(repeat_input());
  EXPECT_EQ(found.pods,
            (std::vector<RepeatEviction>{
                {.namespace_ = "web",
                 .name = "front-0",
                 .node = "node-worker-04",
                 .toleration =
                     "taint nodemaintenance.medik8s.io/planned:PreferNoSchedule (operator Exists)"},
                {.namespace_ = "shop",
                 .name = "cache-0",
                 .node = "node-worker-05",
                 .toleration = "every taint (operator Exists)"},
                {.namespace_ = "shop",
                 .name = "cache-1",
                 .node = "node-worker-05",
                 .toleration = "every taint (operator Exists)"},
            }));
  EXPECT_EQ(found.nodes, (std::vector<std::string>{"node-worker-04", "node-worker-05"}));
}

TEST(RepeatEvictions, Report) {
  RepeatEvictionInput input = repeat_input();
  input.pods.resize(2);
  EXPECT_EQ(
      repeat_evictions_report(find_repeat_evictions(input)),
      "Pods MaintenancePlan memory-upgrade may evict twice (a dry run: nothing was changed)\n"
      "While it runs, the nodes it takes later carry the taint\n"
      "nodemaintenance.medik8s.io/planned:PreferNoSchedule so that the pods evicted before go "
      "elsewhere;\n"
      "a pod that tolerates it may land on them all the same.\n"
      "\n"
      "Nodes whose pods leave while a later node waits (2): node-worker-04, node-worker-05\n"
      "\n"
      "Pods that tolerate the taint (2):\n"
      "  shop/cache-0 on node-worker-05: tolerates every taint (operator Exists); it may be "
      "rescheduled onto a node the plan drains later and be evicted again\n"
      "  shop/cache-1 on node-worker-05: tolerates every taint (operator Exists); it may be "
      "rescheduled onto a node the plan drains later and be evicted again\n");
  input.pods.clear();
  input.nodes.clear();
  const std::string none = repeat_evictions_report(find_repeat_evictions(input));
  EXPECT_NE(none.find("\nNodes whose pods leave while a later node waits (0): none\n\n"
                      "Pods that tolerate the taint (0):\n  none\n"),
            std::string::npos)
      << none;
  input.nodes_unknown = true;
  const std::string unknown = repeat_evictions_report(find_repeat_evictions(input));
  EXPECT_TRUE(unknown.ends_with(
      "\nThe operator has not listed the plan's nodes yet (its status has none): try again in a "
      "moment.\n"))
      << unknown;
}

TEST(RepeatEvictions, Json) {
  RepeatEvictionInput input = repeat_input();
  input.pods.resize(1);
  EXPECT_EQ(boost::json::serialize(repeat_evictions_to_json(find_repeat_evictions(input))),
            R"json({"plan":"memory-upgrade","nodes":["node-worker-04","node-worker-05"],)json"
            R"json("mayBeEvictedAgain":[{"namespace":"shop","name":"cache-1",)json"
            R"json("node":"node-worker-05","toleration":"every taint (operator Exists)"}]})json");
  input.nodes_unknown = true;
  input.nodes.clear();
  input.pods.clear();
  EXPECT_EQ(boost::json::serialize(repeat_evictions_to_json(find_repeat_evictions(input))),
            R"json({"plan":"memory-upgrade","nodes":null,"mayBeEvictedAgain":[]})json");
}

}  // namespace
}  // namespace nmo::cli
