// Proves the local control plane is real: scheduling, the disruption controller and the
// Eviction API, cordons, ReplicaSet replacement, DaemonSets, mirror pods, and the kwok
// fault hooks the operator's tests rely on.
#include <set>

#include <gtest/gtest.h>

#include "test/e2e/support/cluster.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;

class ClusterSmokeTest : public ClusterTest {
 protected:
  static std::string node_of(const json::object& pod) {
    return string_at(json::value(pod), "/spec/nodeName");
  }

  // Waits until `selector` in `ns` has exactly `count` running, ready pods.
  bool wait_running(const std::string& ns, const std::string& selector, std::size_t count) {
    return wait_running_pods(kubectl_, ns, selector, count);
  }
};

TEST_F(ClusterSmokeTest, AllNodesReadyAndDeploymentRunsOnWorkers) {
  auto nodes = kubectl_.get_json({"nodes"});
  ASSERT_TRUE(nodes);
  std::set<std::string> ready;
  for (const auto& n : nodes->at("items").as_array()) {
    if (node_ready_status(n.as_object()) == "True") {
      ready.insert(string_at(n, "/metadata/name"));
    }
  }
  for (const auto& name : kControlPlaneNodes) EXPECT_TRUE(ready.contains(name)) << name;
  for (const auto& name : kWorkerNodes) EXPECT_TRUE(ready.contains(name)) << name;

  TestNamespace ns(kubectl_, "smoke-deploy");
  kubectl_.apply(deployment_manifest(ns.name(), "web", 3, "web"));
  ASSERT_TRUE(wait_running(ns.name(), "app=web", 3));
  for (const auto& pod : list_pods(kubectl_, ns.name(), "app=web")) {
    EXPECT_TRUE(node_of(pod).starts_with("node-worker-")) << "scheduled on " << node_of(pod);
  }
}

TEST_F(ClusterSmokeTest, PdbBlocksEvictionWith429) {
  TestNamespace ns(kubectl_, "smoke-pdb");
  kubectl_.apply(deployment_manifest(ns.name(), "db", 2, "db"));
  ASSERT_TRUE(wait_running(ns.name(), "app=db", 2));
  kubectl_.apply(pdb_manifest(ns.name(), "db-pdb", 2, "db"));

  // The disruption controller must have processed the PDB before evictions are judged.
  std::optional<json::value> pdb;
  ASSERT_TRUE(wait_until(
      "PDB db-pdb processed with 0 disruptions allowed", 60s,
      [&] {
        pdb = kubectl_.get_json({"pdb", "db-pdb", "-n", ns.name()});
        return pdb &&
               int_at(*pdb, "/status/observedGeneration") == int_at(*pdb, "/metadata/generation") &&
               int_at(*pdb, "/status/currentHealthy") == 2 &&
               int_at(*pdb, "/status/disruptionsAllowed") == 0;
      },
      [&] { return pdb ? json::serialize(pdb->at("status")) : std::string("no PDB"); }));

  const auto pods = list_pods(kubectl_, ns.name(), "app=db");
  ASSERT_FALSE(pods.empty());
  const std::string pod = string_at(json::value(pods[0]), "/metadata/name");
  const json::object eviction{{"apiVersion", "policy/v1"},
                              {"kind", "Eviction"},
                              {"metadata", {{"name", pod}, {"namespace", ns.name()}}}};
  // -v=6 makes kubectl log the HTTP status line of each request.
  ProcessResult r = kubectl_.run(
      {"create", "--raw", "/api/v1/namespaces/" + ns.name() + "/pods/" + pod + "/eviction", "-f",
       "-", "-v=6"},
      json::serialize(eviction));
  EXPECT_NE(r.exit_code, 0);
  // kubectl 1.34 logs status="429 Too Many Requests", kubectl 1.27 "... 429 Too Many Requests in".
  EXPECT_NE(r.err.find("429 Too Many Requests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Error from server (TooManyRequests): Cannot evict pod as it would violate "
                       "the pod's disruption budget."),
            std::string::npos)
      << r.err;
  // The pod is still there and untouched.
  auto still = kubectl_.get_json({"pod", pod, "-n", ns.name()});
  ASSERT_TRUE(still);
  EXPECT_TRUE(pod_running_ready(still->as_object()));
}

TEST_F(ClusterSmokeTest, CordonedNodeGetsNoPodsAndEvictedPodIsReplaced) {
  NodeGuard guard1(kubectl_, "node-worker-01");
  NodeGuard guard2(kubectl_, "node-worker-02");
  kubectl_.must({"cordon", "node-worker-01"});

  TestNamespace ns(kubectl_, "smoke-cordon");
  kubectl_.apply(deployment_manifest(ns.name(), "api", 8, "api"));
  ASSERT_TRUE(wait_running(ns.name(), "app=api", 8));
  std::vector<json::object> pods = list_pods(kubectl_, ns.name(), "app=api");
  for (const auto& pod : pods) EXPECT_NE(node_of(pod), "node-worker-01");

  // Evict one pod after cordoning its node too: it must disappear and be replaced elsewhere.
  const json::object victim = pods[0];
  const std::string victim_name = string_at(json::value(victim), "/metadata/name");
  const std::string victim_node = node_of(victim);
  NodeGuard guard3(kubectl_, victim_node);
  kubectl_.must({"cordon", victim_node});
  const json::object eviction{{"apiVersion", "policy/v1"},
                              {"kind", "Eviction"},
                              {"metadata", {{"name", victim_name}, {"namespace", ns.name()}}}};
  kubectl_.must(
      {"create", "--raw", "/api/v1/namespaces/" + ns.name() + "/pods/" + victim_name + "/eviction",
       "-f", "-"},
      json::serialize(eviction));
  ASSERT_TRUE(wait_until("evicted pod " + victim_name + " to disappear", 60s, [&] {
    return !kubectl_.run({"get", "pod", victim_name, "-n", ns.name()}).ok();
  }));
  ASSERT_TRUE(wait_running(ns.name(), "app=api", 8));
  std::set<std::string> before;
  for (const auto& pod : pods) before.insert(string_at(json::value(pod), "/metadata/name"));
  int replacements = 0;
  for (const auto& pod : list_pods(kubectl_, ns.name(), "app=api")) {
    EXPECT_NE(node_of(pod), "node-worker-01");
    if (before.contains(string_at(json::value(pod), "/metadata/name"))) continue;
    ++replacements;
    EXPECT_NE(node_of(pod), victim_node) << "the replacement went to the cordoned node";
  }
  EXPECT_EQ(replacements, 1);
}

TEST_F(ClusterSmokeTest, DaemonSetRunsOnePodPerWorker) {
  TestNamespace ns(kubectl_, "smoke-ds");
  kubectl_.apply(daemonset_manifest(ns.name(), "agent", "agent"));
  ASSERT_TRUE(wait_running(ns.name(), "app=agent", kWorkerNodes.size()));
  std::set<std::string> nodes;
  for (const auto& pod : list_pods(kubectl_, ns.name(), "app=agent")) nodes.insert(node_of(pod));
  EXPECT_EQ(nodes, std::set<std::string>(kWorkerNodes.begin(), kWorkerNodes.end()));
}

TEST_F(ClusterSmokeTest, MirrorPodBecomesRunning) {
  TestNamespace ns(kubectl_, "smoke-mirror");
  kubectl_.apply(pod_manifest(ns.name(), "static-web", "node-worker-03",
                              {{"kubernetes.io/config.mirror", "mirror-hash"}}));
  ASSERT_TRUE(wait_running(ns.name(), "app=static-web", 1));
}

TEST_F(ClusterSmokeTest, ExtraNodeBecomesReady) {
  const std::string node = unique_name("node-extra");
  kubectl_.apply(node_manifest(node, {{"node-role.kubernetes.io/worker", ""}}));
  EXPECT_TRUE(wait_until("node " + node + " Ready", 60s, [&] {
    auto n = kubectl_.get_json({"node", node});
    return n && node_ready_status(n->as_object()) == "True";
  }));
  kubectl_.must({"delete", "node", node});
}

TEST_F(ClusterSmokeTest, NotReadyLabelKeepsNodeNotReadyUntilRemoved) {
  const std::string node = "node-worker-05";
  NodeGuard guard(kubectl_, node);
  make_not_ready(kubectl_, node);

  auto taints = [&] {
    return kubectl_.must({"get", "node", node, "-o", "jsonpath={.spec.taints[*].key}"});
  };
  // kube-controller-manager reacts to the NotReady status with its not-ready taint; kwok has
  // not undone the condition meanwhile.
  ASSERT_TRUE(wait_until(
      "node.kubernetes.io/not-ready taint on " + node, 60s,
      [&] { return taints().find("node.kubernetes.io/not-ready") != std::string::npos; }, taints));
  auto n = kubectl_.get_json({"node", node});
  ASSERT_TRUE(n);
  EXPECT_EQ(node_ready_status(n->as_object()), "False");

  kubectl_.must({"label", "node", node, std::string(kNotReadyLabel) + "-"});
  EXPECT_TRUE(wait_until("node " + node + " Ready again without the not-ready taint", 90s, [&] {
    auto now = kubectl_.get_json({"node", node});
    return now && node_ready_status(now->as_object()) == "True" &&
           taints().find("node.kubernetes.io/not-ready") == std::string::npos;
  }));
}

TEST_F(ClusterSmokeTest, SlowDeletePodStaysTerminatingForItsGracePeriod) {
  TestNamespace ns(kubectl_, "smoke-slow");
  kubectl_.apply(
      pod_manifest(ns.name(), "slow", "node-worker-04", {{kSlowDeleteAnnotation, "true"}}, 8));
  kubectl_.apply(pod_manifest(ns.name(), "fast", "node-worker-04", {}, 8));
  ASSERT_TRUE(wait_running(ns.name(), "app=slow", 1));
  ASSERT_TRUE(wait_running(ns.name(), "app=fast", 1));

  kubectl_.must({"delete", "pod", "slow", "fast", "-n", ns.name(), "--wait=false"});
  // The ordinary pod is completed by kwok at once ...
  ASSERT_TRUE(wait_until("pod fast to disappear", 30s, [&] {
    return !kubectl_.run({"get", "pod", "fast", "-n", ns.name()}).ok();
  }));
  // ... while the slow one is still terminating (its 8 s grace period has not run out) ...
  auto slow = kubectl_.get_json({"pod", "slow", "-n", ns.name()});
  ASSERT_TRUE(slow) << "the slow-delete pod vanished before its grace period ended";
  EXPECT_FALSE(string_at(*slow, "/metadata/deletionTimestamp").empty());
  // ... and goes once the grace period is over.
  EXPECT_TRUE(wait_until("pod slow to disappear after its grace period", 60s, [&] {
    return !kubectl_.run({"get", "pod", "slow", "-n", ns.name()}).ok();
  }));
}

}  // namespace
}  // namespace nmo::e2e
