// The operator binary against the real local cluster: the scenarios of docs/design.md §8
// (S1–S5, S8, S9) and the controller's edge cases (missing node, two maintenances for one node, an
// admin undoing the cordon). Each test starts its own operator (OperatorFixture), creates what
// it needs in a fresh namespace, asserts what an admin would observe (status, Events, the
// Node, the Leases, `kubectl get nm`), and leaves every node as it found it.
//
// Drain scenarios use the worker nodes; S5 uses the control-plane nodes and the etcd mirror
// pods the gate reads (created here when the cluster has none).
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/api/time.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/scenarios.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;

// The stability window is shortened from the default 30 s so that S5 stays quick.

constexpr const char* kWaitingForLease =
    "Waiting to acquire lease for node maintenance. Other maintenance or node health check is "
    "in progress.";
constexpr const char* kPdbRefusal =
    "Cannot evict pod as it would violate the pod's disruption budget.";

// Deadlines: the operator reacts to watch events within a second; evictions blocked once are
// retried with a backoff of at most 30 s (docs/design.md §2.4).

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

std::string node_of(const json::value& pod) { return string_at(pod, "/spec/nodeName"); }

bool is_mirror_pod(const json::value& pod) {
  boost::system::error_code ec;
  const json::value* annotations = pod.find_pointer("/metadata/annotations", ec);
  return annotations != nullptr && annotations->is_object() &&
         annotations->as_object().contains(kMirrorAnnotation);
}

bool is_daemon_set_pod(const json::value& pod) {
  boost::system::error_code ec;
  const json::value* owners = pod.find_pointer("/metadata/ownerReferences", ec);
  if (owners == nullptr || !owners->is_array()) return false;
  return std::any_of(owners->as_array().begin(), owners->as_array().end(), [](const auto& o) {
    return string_at(o, "/kind") == "DaemonSet" && o.as_object().contains("controller") &&
           o.at("controller").is_bool() && o.at("controller").as_bool();
  });
}

// A Deployment whose pods prefer `node` (a soft preference, so that replacements of evicted pods
// may go elsewhere once the node is cordoned).
std::string deployment_preferring(const std::string& ns, const std::string& name, int replicas,
                                  const std::string& node) {
  json::value d = json::parse(deployment_manifest(ns, name, replicas, name));
  json::object term{{"key", "kubernetes.io/hostname"},
                    {"operator", "In"},
                    {"values", json::array{json::value(node)}}};
  d.at("spec").at("template").at("spec").as_object()["affinity"] = json::object{
      {"nodeAffinity",
       {{"preferredDuringSchedulingIgnoredDuringExecution",
         json::array{json::object{{"weight", 100},
                                  {"preference", {{"matchExpressions", json::array{term}}}}}}}}}};
  return json::serialize(d);
}

// A Deployment whose pods can only run on `node`.
std::string deployment_on(const std::string& ns, const std::string& name, int replicas,
                          const std::string& node) {
  json::value d = json::parse(deployment_manifest(ns, name, replicas, name));
  d.at("spec").at("template").at("spec").as_object()["nodeSelector"] =
      json::object{{"kubernetes.io/hostname", node}};
  return json::serialize(d);
}

// A Deployment whose pods may run only on `nodes` (a required node affinity).
std::string deployment_within(const std::string& ns, const std::string& name, int replicas,
                              const std::vector<std::string>& nodes) {
  json::value d = json::parse(deployment_manifest(ns, name, replicas, name));
  json::array values;
  for (const std::string& node : nodes) values.emplace_back(node);
  d.at("spec").at("template").at("spec").as_object()["affinity"] = json::object{
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           json::array{{{"matchExpressions", json::array{{{"key", "kubernetes.io/hostname"},
                                                          {"operator", "In"},
                                                          {"values", std::move(values)}}}}}}}}}}}};
  return json::serialize(d);
}

// A bare pod bound to `node` with an emptyDir volume mounted.
std::string emptydir_pod_manifest(const std::string& ns, const std::string& name,
                                  const std::string& node) {
  json::value p = json::parse(pod_manifest(ns, name, node));
  json::object& spec = p.at("spec").as_object();
  spec["volumes"] = json::array{json::object{{"name", "scratch"}, {"emptyDir", json::object{}}}};
  spec.at("containers").as_array()[0].as_object()["volumeMounts"] =
      json::array{json::object{{"name", "scratch"}, {"mountPath", "/scratch"}}};
  return json::serialize(p);
}

class NodeMaintenanceTest : public OperatorFixture {
 protected:
  OperatorProcess& start(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(), extra.begin(), extra.end());
    return start_operator(flags);
  }

  // The budget tests' node and the spare that takes their replacements.
  static constexpr const char* kBudgetNode = "node-worker-03";
  static constexpr const char* kSpareNode = "node-worker-04";

  // `replicas` pods of a Deployment `app`, all on kBudgetNode (kSpareNode, where they may also
  // run, is cordoned meanwhile and left so), under the budget `app`-pdb with minAvailable
  // `min_available`, processed with `allowed` disruptions allowed. Both nodes are put back when
  // the test ends. False (with the failure recorded) when the cluster did not get there.
  bool workload_under_budget(const std::string& ns, const std::string& app, int replicas,
                             int min_available, int allowed) {
    restore_node_at_end(kBudgetNode);
    restore_node_at_end(kSpareNode);
    kubectl_.must({"cordon", kSpareNode});
    kubectl_.apply(deployment_within(ns, app, replicas, {kBudgetNode, kSpareNode}));
    if (!wait_running(ns, "app=" + app, static_cast<std::size_t>(replicas))) return false;
    kubectl_.apply(pdb_manifest(ns, app + "-pdb", min_available, app));
    return wait_pdb(ns, app + "-pdb", replicas, allowed);
  }

  // Every pod bound to `node`, in any namespace.
  std::vector<json::value> pods_on(const std::string& node) {
    std::vector<json::value> pods;
    auto list = kubectl_.get_json({"pods", "-A", "--field-selector", "spec.nodeName=" + node});
    if (!list) return pods;
    for (const auto& item : list->at("items").as_array()) pods.push_back(item);
    return pods;
  }

  // "namespace/name" of the pods on `node` that a maintenance must evict (docs/design.md §2.4).
  std::set<std::string> evictable_pods_on(const std::string& node) {
    std::set<std::string> out;
    for (const auto& pod : pods_on(node)) {
      if (is_mirror_pod(pod) || is_daemon_set_pod(pod)) continue;
      out.insert(string_at(pod, "/metadata/namespace") + "/" + name_of(pod));
    }
    return out;
  }

  // Waits until no pod on `node` is terminating (left by an earlier test), so that the pods a
  // maintenance must evict are exactly the ones seen now.
  bool wait_node_settled(const std::string& node) {
    std::vector<std::string> terminating;
    return wait_until(
        "no terminating pods on " + node, 60s,
        [&] {
          terminating.clear();
          for (const auto& pod : pods_on(node)) {
            if (is_terminating(pod)) terminating.push_back(name_of(pod));
          }
          return terminating.empty();
        },
        [&] { return std::to_string(terminating.size()) + " terminating"; });
  }

  // Events on the Node with `reason`, name → count, to tell new ones from those of earlier tests.
  std::map<std::string, std::int64_t> node_events(const std::string& node,
                                                  const std::string& reason) {
    std::map<std::string, std::int64_t> out;
    for (const auto& e : events_matching(kubectl_, "involvedObject.kind=Node,involvedObject.name=" +
                                                       node + ",reason=" + reason)) {
      out[e.name] = e.count;
    }
    return out;
  }
};

// ---- S1 (docs/design.md §8, §2.3–§2.4) -------------------------------------------------------

TEST_F(NodeMaintenanceTest, S1DrainsAWorkerAndReportsProgress) {
  const std::string node = "node-worker-01";
  const std::string cr = "maintenance-worker-01";
  const std::string reason = "Hardware memory upgrade - scheduled maintenance window";
  restore_node_at_end(node);
  TestNamespace ns(kubectl_, "s1");

  kubectl_.apply(daemonset_manifest(ns.name(), "agent", "agent"));
  kubectl_.apply(deployment_preferring(ns.name(), "web", 3, node));
  kubectl_.apply(pod_manifest(ns.name(), "bare", node));
  kubectl_.apply(emptydir_pod_manifest(ns.name(), "scratch", node));
  kubectl_.apply(pod_manifest(ns.name(), "static-web", node, {{kMirrorAnnotation, "hash"}}));
  ASSERT_TRUE(wait_running(ns.name(), "app=agent", kWorkerNodes.size()));
  ASSERT_TRUE(wait_running(ns.name(), "app=web", 3));
  ASSERT_TRUE(wait_running(ns.name(), "app=bare", 1));
  ASSERT_TRUE(wait_running(ns.name(), "app=scratch", 1));
  ASSERT_TRUE(wait_running(ns.name(), "app=static-web", 1));
  ASSERT_TRUE(wait_node_settled(node));

  std::string ds_pod_uid;
  std::set<std::string> web_on_node;
  for (const auto& pod : pods_on(node)) {
    if (string_at(pod, "/metadata/namespace") != ns.name()) continue;
    if (is_daemon_set_pod(pod)) ds_pod_uid = uid_of(pod);
    if (label(pod, "app") == "web") web_on_node.insert(name_of(pod));
  }
  ASSERT_FALSE(ds_pod_uid.empty()) << "no DaemonSet pod on " << node;
  ASSERT_FALSE(web_on_node.empty()) << "no Deployment pod landed on " << node;
  const std::set<std::string> evictable = evictable_pods_on(node);
  ASSERT_TRUE(evictable.contains(ns.name() + "/bare"));
  ASSERT_TRUE(evictable.contains(ns.name() + "/scratch"));
  ASSERT_FALSE(evictable.contains(ns.name() + "/static-web"));

  start();
  const std::string uid = create(cr, node, reason);
  ASSERT_FALSE(uid.empty());
  // evictionPods counts up to totalPods, never down, never past it.
  std::optional<json::value> nm;
  std::int64_t evicted_seen = 0;
  ASSERT_TRUE(wait_until(
      "NodeMaintenance " + cr + " Succeeded", kDrain,
      [&] {
        nm = get_node_maintenance(cr);
        if (!nm) return false;
        const std::int64_t evicted = maintenance_of(*nm).status.eviction_pods;
        EXPECT_GE(evicted, evicted_seen) << "evictionPods went down";
        EXPECT_LE(evicted, maintenance_of(*nm).status.total_pods);
        evicted_seen = evicted;
        return phase_of(*nm) == "Succeeded";
      },
      [&] { return nm ? json::serialize(nm->as_object()["status"]) : std::string("no CR"); }));

  EXPECT_EQ(maintenance_of(*nm).status.total_pods, static_cast<std::int64_t>(evictable.size()));
  EXPECT_EQ(maintenance_of(*nm).status.eviction_pods, static_cast<std::int64_t>(evictable.size()));
  EXPECT_EQ(maintenance_of(*nm).status.drain_progress, 100);
  EXPECT_EQ(maintenance_of(*nm).status.last_error, "");

  // The node: Ready,SchedulingDisabled with both taints in the order of docs/design.md §2.3.
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_TRUE(unschedulable(*n)) << describe_node(*n);
  EXPECT_EQ(node_ready_status(n->as_object()), "True");
  const auto taints = taints_of(*n);
  const auto cordon_taint =
      std::find(taints.begin(), taints.end(), std::string(kUnschedulableTaintKey) + ":NoSchedule");
  const auto drain_taint =
      std::find(taints.begin(), taints.end(), std::string(kDrainTaintKey) + "=draining:NoSchedule");
  EXPECT_NE(cordon_taint, taints.end()) << describe_node(*n);
  EXPECT_NE(drain_taint, taints.end()) << describe_node(*n);
  EXPECT_LT(cordon_taint, drain_taint) << "taints out of the story's order: " << describe_node(*n);
  EXPECT_EQ(label(*n, kExcludeFromRemediationLabel), "true");
  EXPECT_NE(annotation(*n, kPriorStateAnnotation), "");

  // Only the DaemonSet pod and the mirror pod are left, untouched.
  EXPECT_EQ(evictable_pods_on(node), std::set<std::string>{});
  bool ds_pod_left = false;
  bool mirror_left = false;
  for (const auto& pod : pods_on(node)) {
    if (uid_of(pod) == ds_pod_uid) ds_pod_left = !is_terminating(pod);
    if (string_at(pod, "/metadata/namespace") == ns.name() && name_of(pod) == "static-web") {
      mirror_left = !is_terminating(pod);
    }
  }
  EXPECT_TRUE(ds_pod_left) << "the DaemonSet pod was evicted";
  EXPECT_TRUE(mirror_left) << "the mirror pod was evicted";
  // The Deployment's pods were replaced on other nodes.
  EXPECT_TRUE(wait_until("3 web pods running elsewhere", 60s, [&] {
    auto pods = list_pods(kubectl_, ns.name(), "app=web");
    return pods.size() == 3 && std::all_of(pods.begin(), pods.end(), [&](const auto& p) {
             return pod_running_ready(p) && node_of(json::value(p)) != node &&
                    !web_on_node.contains(name_of(json::value(p)));
           });
  }));

  // `kubectl get nm` as docs/design.md §8 (S1) expects it.
  const auto table = split_lines(kubectl_.must({"get", "nm"}));
  ASSERT_GE(table.size(), 2U);
  EXPECT_EQ(split_words(table[0]),
            (std::vector<std::string>{"NAME", "NODE", "PHASE", "PROGRESS", "AGE"}));
  bool row_found = false;
  for (const auto& line : table) {
    const auto words = split_words(line);
    if (words.empty() || words[0] != cr) continue;
    row_found = true;
    ASSERT_GE(words.size(), 5U) << line;
    EXPECT_EQ(words[1], node);
    EXPECT_EQ(words[2], "Succeeded");
    EXPECT_EQ(words[3], "100");
  }
  EXPECT_TRUE(row_found) << table.size() << " lines";

  // The Events of docs/design.md §5, in `kubectl get events --field-selector involvedObject.name=`.
  std::map<std::string, Event> by_reason;
  for (const auto& e : events_of(uid)) by_reason.emplace(e.reason, e);
  for (const char* reason_name : {"BeginMaintenance", "LeaseAcquired", "NodeCordoned",
                                  "BeginEviction", "SucceedMaintenance"}) {
    EXPECT_TRUE(by_reason.contains(reason_name)) << "no " << reason_name << " event";
  }
  // Announced once, on first sight (docs/design.md §2.1), not on every reconcile before Running.
  EXPECT_EQ(event_count(uid, "BeginMaintenance"), 1);
  if (by_reason.contains("BeginMaintenance")) {
    EXPECT_NE(by_reason["BeginMaintenance"].message.find(reason), std::string::npos)
        << by_reason["BeginMaintenance"].message;
  }
  const auto by_name = events_matching(kubectl_, "involvedObject.name=" + cr);
  EXPECT_TRUE(std::any_of(by_name.begin(), by_name.end(),
                          [](const Event& e) { return e.reason == "SucceedMaintenance"; }));

  // The medik8s node lease (docs/design.md §3.1) and the budget slot (§2.2).
  auto node_lease = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(node_lease);
  EXPECT_EQ(string_at(*node_lease, "/spec/holderIdentity"), kNodeLeaseHolder);
  EXPECT_EQ(int_at(*node_lease, "/spec/leaseDurationSeconds"), 3600);
  EXPECT_EQ(string_at(*node_lease, "/metadata/ownerReferences/0/kind"), "Node");
  EXPECT_EQ(string_at(*node_lease, "/metadata/ownerReferences/0/name"), node);
  EXPECT_TRUE(slot_holders().contains(cr + " (node " + node + ")"));
}

// ---- S2 (docs/design.md §8, §2.4) ------------------------------------------------------------

TEST_F(NodeMaintenanceTest, S2PdbBlocksTheDrainUntilRelaxed) {
  const std::string node = "node-worker-02";
  const std::string cr = "maintenance-worker-02";
  restore_node_at_end(node);
  TestNamespace ns(kubectl_, "s2");

  kubectl_.apply(deployment_on(ns.name(), "db", 1, node));
  ASSERT_TRUE(wait_running(ns.name(), "app=db", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "db-pdb", 1, "db"));
  ASSERT_TRUE(wait_pdb(ns.name(), "db-pdb", 1, 0));
  const auto pods = list_pods(kubectl_, ns.name(), "app=db");
  ASSERT_EQ(pods.size(), 1U);
  const std::string pod = name_of(json::value(pods[0]));
  const std::string pod_uid = uid_of(json::value(pods[0]));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());

  std::optional<json::value> nm;
  ASSERT_TRUE(wait_until(
      "the pod blocked by its PDB in pendingPodsRefs", kReact,
      [&] {
        nm = get_node_maintenance(cr);
        if (!nm) return false;
        const std::vector<op::PendingPodRef> refs = maintenance_of(*nm).status.pending_pods_refs;
        return std::any_of(refs.begin(), refs.end(), [&](const op::PendingPodRef& r) {
          return r.name == pod && r.reason == op::PendingPodReason::kBlockedByPdb;
        });
      },
      [&] { return nm ? json::serialize(nm->as_object()["status"]) : std::string("no CR"); }));
  EXPECT_EQ(phase_of(*nm), "Running");
  const op::NodeMaintenance blocked = maintenance_of(*nm);
  EXPECT_NE(std::find(blocked.status.pending_pods.begin(), blocked.status.pending_pods.end(), pod),
            blocked.status.pending_pods.end())
      << json::serialize(nm->as_object()["status"]);
  for (const op::PendingPodRef& ref : blocked.status.pending_pods_refs) {
    if (ref.name != pod) continue;
    EXPECT_EQ(ref.namespace_, ns.name());
    EXPECT_TRUE(ref.message.starts_with("PDB " + ns.name() + "/db-pdb:")) << ref.message;
  }
  EXPECT_NE(maintenance_of(*nm).status.last_error, "");

  auto drain_error = wait_event(uid, "DrainError", std::string(kPdbRefusal), kReact);
  ASSERT_TRUE(drain_error);
  EXPECT_EQ(drain_error->type, "Warning");

  // The pod was not evicted, and the maintenance is still Running.
  auto still = kubectl_.get_json({"pod", pod, "-n", ns.name()});
  ASSERT_TRUE(still) << "the PDB-protected pod is gone";
  EXPECT_EQ(uid_of(*still), pod_uid);
  EXPECT_FALSE(is_terminating(*still));
  nm = get_node_maintenance(cr);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running");

  // The admin relaxes the protection: the drain finishes by itself.
  kubectl_.must({"delete", "pdb", "db-pdb", "-n", ns.name()});
  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  EXPECT_EQ(maintenance_of(*nm).status.drain_progress, 100);
  EXPECT_EQ(maintenance_of(*nm).status.last_error, "");
  auto after = kubectl_.get_json({"pod", pod, "-n", ns.name()});
  EXPECT_TRUE(!after || is_terminating(*after));
}

// docs/design.md §2.4: the budget that refused a pod is watched, and the pod is evicted again the
// moment the budget, changed since, allows a disruption: of two replicas under a budget allowing
// one, the first is evicted and the second refused while the first one's replacement has nowhere
// to go; once the spare node takes it and it is Ready, the second goes at once, not after the
// refusal's backoff.
TEST_F(NodeMaintenanceTest, ARefusedPodIsEvictedAgainWhenItsBudgetAllows) {
  const std::string node = kBudgetNode;
  const std::string spare = kSpareNode;
  const std::string cr = "maintenance-budget-retry";
  TestNamespace ns(kubectl_, "budget-retry");
  ASSERT_TRUE(workload_under_budget(ns.name(), "web", 2, 1, 1));

  OperatorProcess& op = start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_event(uid, "DrainError", std::string(kPdbRefusal), kReact));
  kubectl_.must({"uncordon", spare});
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  EXPECT_TRUE(op.wait_for_log("evicting a pod its budget allows again", kReact)) << op.log_tail(30);
  EXPECT_TRUE(wait_running(ns.name(), "app=web", 2));
}

// docs/design.md §2.4: an eviction the API server granted but whose pod was never deleted (the
// request was cut off, e.g. the operator killed mid-request) stays in the budget's
// status.disruptedPods, and the budget counts the pod as disrupted until the disruption
// controller drops the grant two minutes later. The operator sends no doomed eviction for it,
// says why, and evicts it as soon as the grant goes. The leftovers of such a cut-off request are
// written by hand here (the grant dated 110 s ago, so it runs out 10 s into the test).
TEST_F(NodeMaintenanceTest, AGrantedButUndeletedEvictionGoesTheMomentTheBudgetFreesIt) {
  const std::string node = kBudgetNode;
  const std::string spare = kSpareNode;
  const std::string cr = "maintenance-granted";
  TestNamespace ns(kubectl_, "granted");
  ASSERT_TRUE(workload_under_budget(ns.name(), "web", 2, 1, 1));
  const auto pods = list_pods(kubectl_, ns.name(), "app=web");
  ASSERT_EQ(pods.size(), 2U);
  const std::string granted = name_of(json::value(pods[0]));
  const std::string at = kube::format_time(kube::wall_now() - std::chrono::seconds(110));
  kubectl_.must({"patch", "pdb", "web-pdb", "-n", ns.name(), "--subresource=status", "--type=merge",
                 "-p", R"({"status":{"disruptedPods":{")" + granted + R"(":")" + at + R"("}}})"});
  ASSERT_TRUE(wait_pdb(ns.name(), "web-pdb", 1, 0));
  kubectl_.must({"uncordon", spare});

  start();
  ASSERT_FALSE(create(cr, node).empty());
  std::optional<json::value> nm;
  const std::string message = "eviction granted by PodDisruptionBudget " + ns.name() +
                              "/web-pdb at " + at + " but the pod was not deleted";
  ASSERT_TRUE(wait_until(
      "the granted pod held with why", kReact,
      [&] {
        nm = get_node_maintenance(cr);
        if (!nm) return false;
        const std::vector<op::PendingPodRef> refs = maintenance_of(*nm).status.pending_pods_refs;
        return std::any_of(refs.begin(), refs.end(), [&](const op::PendingPodRef& r) {
          return r.name == granted && r.reason == op::PendingPodReason::kBlockedByPdb &&
                 r.message.starts_with(message);
        });
      },
      [&] { return nm ? json::serialize(nm->as_object()["status"]) : std::string("no CR"); }));
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  EXPECT_TRUE(wait_running(ns.name(), "app=web", 2));
}

// ---- S3 (docs/design.md §8, §2.6) ------------------------------------------------------------

TEST_F(NodeMaintenanceTest, S3DeletingTheMaintenanceRestoresTheNode) {
  const std::string node = "node-worker-01";
  const std::string cr = "maintenance-worker-01";
  restore_node_at_end(node);
  TestNamespace ns(kubectl_, "s3");
  kubectl_.apply(pod_manifest(ns.name(), "bare", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=bare", 1));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  ASSERT_TRUE(lease(kLeaseNamespace, "node-" + node));
  const auto uncordon_before = node_events(node, "UncordonNode");

  remove(cr);
  // Deletion undoes the node promptly (docs/design.md §2.6); the deadline leaves room for a loaded
  // machine.
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, 20s));
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_until("a new UncordonNode event on node " + node, kReact, [&] {
    for (const auto& [name, count] : node_events(node, "UncordonNode")) {
      const auto before = uncordon_before.find(name);
      if (before == uncordon_before.end() || before->second < count) return true;
    }
    return false;
  }));
  auto removed = wait_event(uid, "RemovedMaintenance", std::nullopt, kReact);
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->type, "Normal");
  EXPECT_FALSE(lease(kLeaseNamespace, "node-" + node)) << "the node lease was not released";
  EXPECT_TRUE(wait_until("the slot of " + cr + " released", kReact,
                         [&] { return !slot_holders().contains(cr + " (node " + node + ")"); }));
  // kube-controller-manager drops its unschedulable taint once the node is schedulable.
  EXPECT_TRUE(wait_until("no node.kubernetes.io/unschedulable taint on " + node, kReact, [&] {
    auto n = kubectl_.get_json({"node", node});
    return n && !has_taint(*n, std::string(kUnschedulableTaintKey) + ":NoSchedule");
  }));
}

// ---- S4 (docs/design.md §8, §2.2) ------------------------------------------------------------

class MaintenanceBudgetTest : public NodeMaintenanceTest {
 protected:
  static std::string cr_for(int i) { return "maintenance-worker-0" + std::to_string(i); }

  // Creates one NodeMaintenance per worker, oldest first (names break creation-time ties in
  // the same order); returns their uids.
  std::vector<std::string> create_on_every_worker() {
    std::vector<std::string> uids;
    for (std::size_t i = 0; i < kWorkerNodes.size(); ++i) {
      restore_node_at_end(kWorkerNodes[i]);
      uids.push_back(create(cr_for(static_cast<int>(i) + 1), kWorkerNodes[i]));
    }
    return uids;
  }

  // Phases of maintenance-worker-01..05 ("" when gone).
  std::vector<std::string> phases() {
    std::vector<std::string> out;
    auto list = kubectl_.get_json({"nodemaintenances"});
    std::map<std::string, std::string> by_name;
    if (list) {
      for (const auto& item : list->at("items").as_array()) by_name[name_of(item)] = phase_of(item);
    }
    for (std::size_t i = 0; i < kWorkerNodes.size(); ++i) {
      out.push_back(by_name[cr_for(static_cast<int>(i) + 1)]);
    }
    return out;
  }

  static bool active(const std::string& phase) {
    return phase == "Running" || phase == "Succeeded";
  }

  // Waits until exactly the maintenances in `admitted` (indexes 0..4) are active and every
  // other one still present is Pending. Records a failure if more than `budget` are ever seen
  // active at once.
  bool wait_admitted(const std::set<std::size_t>& admitted, std::size_t budget) {
    std::vector<std::string> seen;
    return wait_until(
        "maintenances admitted as expected", kReact,
        [&] {
          seen = phases();
          const auto n_active =
              static_cast<std::size_t>(std::count_if(seen.begin(), seen.end(), active));
          EXPECT_LE(n_active, budget) << "budget exceeded: " << describe(seen);
          for (std::size_t i = 0; i < seen.size(); ++i) {
            if (seen[i].empty()) continue;  // deleted
            if (admitted.contains(i) != active(seen[i])) return false;
            if (!admitted.contains(i) && seen[i] != "Pending") return false;
          }
          return true;
        },
        [&] { return describe(seen); });
  }

  static std::string describe(const std::vector<std::string>& seen) {
    std::string out;
    for (std::size_t i = 0; i < seen.size(); ++i) {
      out += cr_for(static_cast<int>(i) + 1) + "=" + (seen[i].empty() ? "gone" : seen[i]) + " ";
    }
    return out;
  }

  // A Pending maintenance touched nothing on its node.
  void expect_untouched(std::size_t i) {
    auto n = get_node(kWorkerNodes[i]);
    ASSERT_TRUE(n);
    EXPECT_FALSE(drain_tainted(*n)) << kWorkerNodes[i] << ": " << describe_node(*n);
    EXPECT_FALSE(unschedulable(*n)) << kWorkerNodes[i] << ": " << describe_node(*n);
  }
};

TEST_F(MaintenanceBudgetTest, S4DefaultBudgetAdmitsOneAtATimeOldestFirst) {
  start();
  const auto uids = create_on_every_worker();
  ASSERT_EQ(uids.size(), 5U);
  ASSERT_TRUE(wait_admitted({0}, 1));
  for (std::size_t i = 1; i < uids.size(); ++i) {
    auto e = wait_event(uids[i], "BlockedByNodeHealthCheck", std::string(kWaitingForLease), kReact);
    ASSERT_TRUE(e) << cr_for(static_cast<int>(i) + 1);
    EXPECT_EQ(e->type, "Normal");
    expect_untouched(i);
  }
  // Still one at a time once every event is out.
  ASSERT_TRUE(wait_admitted({0}, 1));

  for (std::size_t done = 0; done + 1 < uids.size(); ++done) {
    remove(cr_for(static_cast<int>(done) + 1));
    ASSERT_TRUE(wait_gone(cr_for(static_cast<int>(done) + 1), kReact));
    ASSERT_TRUE(wait_admitted({done + 1}, 1))
        << "after deleting " << cr_for(static_cast<int>(done) + 1);
    for (std::size_t i = done + 2; i < uids.size(); ++i) expect_untouched(i);
  }
}

TEST_F(MaintenanceBudgetTest, S4BudgetOfThreeAdmitsThree) {
  start({"--max-parallel-maintenances", "3"});
  const auto uids = create_on_every_worker();
  ASSERT_EQ(uids.size(), 5U);
  ASSERT_TRUE(wait_admitted({0, 1, 2}, 3));
  for (std::size_t i = 3; i < uids.size(); ++i) {
    EXPECT_TRUE(
        wait_event(uids[i], "BlockedByNodeHealthCheck", std::string(kWaitingForLease), kReact));
    expect_untouched(i);
  }
  EXPECT_EQ(slot_holders().size(), 3U);

  remove(cr_for(1));
  ASSERT_TRUE(wait_gone(cr_for(1), kReact));
  ASSERT_TRUE(wait_admitted({1, 2, 3}, 3));
  expect_untouched(4);
}

TEST_F(MaintenanceBudgetTest, S4ForeignNodeLeaseFillsTheBudget) {
  const std::string foreign_node = "node-worker-05";
  const std::string holder = "NodeHealthCheck-x";
  const std::string node = "node-worker-01";
  const std::string cr = "maintenance-worker-01";
  restore_node_at_end(node);
  defer([this, foreign_node] {
    (void)kubectl_.run(
        {"delete", "lease", "-n", kLeaseNamespace, "node-" + foreign_node, "--ignore-not-found"});
  });
  kubectl_.apply(foreign_node_lease_manifest(foreign_node, holder));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  EXPECT_TRUE(wait_event(uid, "BlockedByNodeHealthCheck", std::string(kWaitingForLease), kReact));
  const std::string foreign_slot = holder + " (node " + foreign_node + ")";
  std::set<std::string> holders;
  EXPECT_TRUE(wait_until(
      "a slot Lease naming " + foreign_slot, kReact,
      [&] {
        holders = slot_holders();
        return holders.contains(foreign_slot);
      },
      [&] {
        std::string out;
        for (const auto& h : holders) out += "[" + h + "] ";
        return out;
      }));
  auto nm = get_node_maintenance(cr);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Pending");
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_FALSE(drain_tainted(*n)) << describe_node(*n);
  // The foreign lease is untouched.
  auto foreign = lease(kLeaseNamespace, "node-" + foreign_node);
  ASSERT_TRUE(foreign);
  EXPECT_EQ(string_at(*foreign, "/spec/holderIdentity"), holder);

  // Node Health Check is done: the maintenance runs.
  kubectl_.must({"delete", "lease", "-n", kLeaseNamespace, "node-" + foreign_node});
  EXPECT_TRUE(wait_phase(cr, {"Running", "Succeeded"}, kReact));
  EXPECT_TRUE(wait_until("the slot of " + holder + " released", kReact,
                         [&] { return !slot_holders().contains(foreign_slot); }));
}

// ---- S5 (docs/design.md §8, §2.2 etcd quorum) -----------------------------------------------

TEST_F(NodeMaintenanceTest, S5EtcdQuorumHoldsAControlPlaneNodeUntilStable) {
  const std::string down = "node-master-01";
  const std::string node = "node-master-02";
  const std::string cr = "maintenance-master-02";
  restore_node_at_end(down);
  restore_node_at_end(node);

  // The etcd members the gate reads (kubeadm's stacked etcd): one mirror pod per
  // control-plane node, created here when the cluster has none; kept until TearDown.
  auto etcd = std::make_shared<KubeadmEtcd>(kubectl_, kControlPlaneNodes);
  defer([etcd]() mutable { etcd.reset(); });
  ASSERT_TRUE(etcd->ready());

  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, down, kReact));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto blocked =
      wait_event(uid, "BlockedByEtcdQuorum",
                 "etcd quorum is not maintained when node " + node + " is remediated", kReact);
  ASSERT_TRUE(blocked);
  EXPECT_EQ(blocked->type, "Warning");
  auto nm = get_node_maintenance(cr);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Pending");
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_FALSE(drain_tainted(*n)) << describe_node(*n);
  EXPECT_FALSE(unschedulable(*n)) << describe_node(*n);

  // node-master-01 comes back; after the stability window the maintenance goes on by itself.
  kubectl_.must({"label", "node", down, std::string(kNotReadyLabel) + "-"});
  ASSERT_TRUE(wait_until("node " + down + " Ready again", 90s, [&] {
    auto d = kubectl_.get_json({"node", down});
    return d && node_ready_status(d->as_object()) == "True";
  }));
  const auto ready_seen = std::chrono::steady_clock::now();
  nm = wait_phase(cr, {"Running", "Succeeded"}, 60s);
  ASSERT_TRUE(nm);
  // Not before the 3 s stability window: the operator cannot have seen the node Ready much
  // before this test did (both poll or watch the same API server), so admission comes at least
  // ~3 s after `ready_seen`; 1.5 s leaves room for a slow kubectl.
  EXPECT_GE(std::chrono::steady_clock::now() - ready_seen, 1500ms)
      << "admitted without waiting for the etcd stability window";
  n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_TRUE(drain_tainted(*n)) << describe_node(*n);

  // Put everything back: the control-plane taint was never dropped.
  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_TRUE(has_taint(*n, "node-role.kubernetes.io/control-plane:NoSchedule"))
      << describe_node(*n);
}

// ---- S8 --------------------------------------------------------------------------------------

// docs/design.md §2.2 on OpenShift (config.openshift.io served): etcd health comes from the guard
// PDB in openshift-etcd and the guard pod on the node, upstream's rule, not from etcd mirror pods.
TEST_F(NodeMaintenanceTest, OpenShiftGuardPdbHoldsAControlPlaneNodeUntilItAllows) {
  const std::string node = "node-master-02";
  const std::string cr = "maintenance-master-02-openshift";
  restore_node_at_end(node);
  // All three guards healthy and a budget that allows no disruption: node-master-02's guard is
  // Ready, so taking it would break quorum.
  OpenShiftEtcd openshift(kubectl_, {"node-master-01", "node-master-02", "node-master-03"}, 3);
  ASSERT_TRUE(openshift.ready());

  OperatorProcess& op = start();
  EXPECT_TRUE(op.wait_for_log("source=\"openshift guard PDB\"", kReact)) << op.log_tail(20);
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto blocked =
      wait_event(uid, "BlockedByEtcdQuorum",
                 "etcd quorum is not maintained when node " + node + " is remediated", kReact);
  ASSERT_TRUE(blocked);
  auto nm = get_node_maintenance(cr);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Pending");

  // The budget allows one disruption now: the maintenance goes on by itself.
  openshift.set_min_available(2);
  nm = wait_phase(cr, {"Running", "Succeeded"}, 60s);
  ASSERT_TRUE(nm);
}

// With --max-parallel-maintenances above one, two control-plane maintenances created together
// on OpenShift must not both use the one disruption the guard PDB allows: the second waits
// while the first holds its node.
TEST_F(NodeMaintenanceTest, OpenShiftGuardPdbAdmitsOneControlPlaneNodeAtATime) {
  const std::vector<std::string> nodes{"node-master-01", "node-master-02"};
  const std::vector<std::string> crs{"maintenance-master-01-openshift",
                                     "maintenance-master-02-openshift"};
  for (const std::string& node : nodes) restore_node_at_end(node);
  OpenShiftEtcd openshift(kubectl_, {"node-master-01", "node-master-02", "node-master-03"}, 2);
  ASSERT_TRUE(openshift.ready());

  OperatorProcess& op = start({"--max-parallel-maintenances", "2"});
  EXPECT_TRUE(op.wait_for_log("source=\"openshift guard PDB\"", kReact)) << op.log_tail(20);
  std::vector<std::string> uids;
  for (std::size_t i = 0; i < nodes.size(); ++i) uids.push_back(create(crs[i], nodes[i]));
  ASSERT_FALSE(uids[0].empty());
  ASSERT_FALSE(uids[1].empty());
  std::size_t first = 0;
  ASSERT_TRUE(wait_until("one of the two admitted", 60s, [&] {
    for (std::size_t i = 0; i < crs.size(); ++i) {
      auto nm = get_node_maintenance(crs[i]);
      const std::string phase = nm ? phase_of(*nm) : "";
      if (phase == "Running" || phase == "Succeeded") {
        first = i;
        return true;
      }
    }
    return false;
  }));
  const std::size_t second = 1 - first;
  ASSERT_TRUE(wait_event(
      uids[second], "BlockedByEtcdQuorum",
      "etcd quorum is not maintained when node " + nodes[second] + " is remediated", kReact));
  auto nm = get_node_maintenance(crs[second]);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Pending");
  auto n = get_node(nodes[second]);
  ASSERT_TRUE(n);
  EXPECT_FALSE(drain_tainted(*n)) << describe_node(*n);
  EXPECT_FALSE(unschedulable(*n)) << describe_node(*n);
}

TEST_F(NodeMaintenanceTest, S8NodeCordonedBeforeStaysCordoned) {
  const std::string node = "node-worker-03";
  const std::string cr = "maintenance-worker-03";
  restore_node_at_end(node);
  kubectl_.must({"cordon", node});

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_TRUE(drain_tainted(*n)) << describe_node(*n);
  const auto uncordon_before = node_events(node, "UncordonNode");

  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/true, kReact));
  n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_TRUE(unschedulable(*n));
  EXPECT_TRUE(has_taint(*n, std::string(kUnschedulableTaintKey) + ":NoSchedule"))
      << describe_node(*n);
  auto removed = wait_event(uid, "RemovedMaintenance", std::nullopt, kReact);
  ASSERT_TRUE(removed);
  EXPECT_NE(removed->message.find("cordoned"), std::string::npos) << removed->message;
  EXPECT_TRUE(removed->message.find("stays") != std::string::npos ||
              removed->message.find("left") != std::string::npos ||
              removed->message.find("remains") != std::string::npos)
      << removed->message;
  EXPECT_EQ(node_events(node, "UncordonNode"), uncordon_before)
      << "UncordonNode emitted for a node left cordoned";
}

// ---- S9 --------------------------------------------------------------------------------------

TEST_F(NodeMaintenanceTest, S9OperatorKilledMidDrainFinishesAfterRestart) {
  const std::string node = "node-worker-04";
  const std::string cr = "maintenance-worker-04";
  constexpr int kPods = 6;
  restore_node_at_end(node);
  TestNamespace ns(kubectl_, "s9");
  ASSERT_TRUE(wait_node_settled(node));
  const std::size_t others = evictable_pods_on(node).size();
  for (int i = 0; i < kPods; ++i) {
    kubectl_.apply(pod_manifest(ns.name(), "slow-" + std::to_string(i), node,
                                {{kSlowDeleteAnnotation, "true"}}, 8));
  }
  for (int i = 0; i < kPods; ++i) {
    ASSERT_TRUE(wait_running(ns.name(), "app=slow-" + std::to_string(i), 1));
  }
  const auto total = static_cast<std::int64_t>(others + kPods);

  OperatorProcess& first = start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  std::optional<json::value> nm;
  ASSERT_TRUE(wait_until(
      "the drain in progress with pods terminating", kReact,
      [&] {
        nm = get_node_maintenance(cr);
        if (!nm || phase_of(*nm) != "Running" || maintenance_of(*nm).status.total_pods != total) {
          return false;
        }
        auto pods = list_pods(kubectl_, ns.name(), "");
        return std::any_of(pods.begin(), pods.end(),
                           [](const auto& p) { return is_terminating(json::value(p)); });
      },
      [&] { return nm ? json::serialize(nm->as_object()["status"]) : std::string("no CR"); }));
  EXPECT_EQ(first.kill(), 128 + SIGKILL);
  nm = get_node_maintenance(cr);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running") << "the drain ended before the kill; the test proves nothing";
  const auto total_before = maintenance_of(*nm).status.total_pods;
  EXPECT_EQ(total_before, total);

  start();
  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  EXPECT_EQ(maintenance_of(*nm).status.total_pods, total_before);
  EXPECT_EQ(maintenance_of(*nm).status.eviction_pods, total_before);
  EXPECT_EQ(maintenance_of(*nm).status.drain_progress, 100);
  EXPECT_EQ(event_count(uid, "SucceedMaintenance"), 1);
  EXPECT_TRUE(list_pods(kubectl_, ns.name(), "").empty());

  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  EXPECT_FALSE(lease(kLeaseNamespace, "node-" + node)) << "the node lease leaked";
  EXPECT_EQ(slot_holders(), std::set<std::string>{}) << "a budget slot leaked";
}

// ---- Edge cases of the controller ------------------------------------------------------------

TEST_F(NodeMaintenanceTest, MissingNodeFails) {
  const std::string node = unique_name("node-that-does-not-exist");
  const std::string cr = "maintenance-missing-node";
  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_phase(cr, {"Failed"}, kReact);
  ASSERT_TRUE(nm);
  EXPECT_EQ(maintenance_of(*nm).status.last_error, "node \"" + node + "\" not found");
  auto failed = wait_event(uid, "FailedMaintenance", std::nullopt, kReact);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->type, "Warning");
  // It holds no slot, and deleting it is not held up by anything.
  EXPECT_EQ(slot_holders(), std::set<std::string>{});
  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
}

// docs/design.md §2.8: at start, the operator says so when upstream's webhook or Deployment is
// still there.
TEST_F(NodeMaintenanceTest, WarnsAboutUpstreamLeftovers) {
  TestNamespace ns(kubectl_, "upstream");
  const std::string hook = unique_name("upstream-nmo-webhook");
  // Upstream's webhook name, on a resource that never exists, so it never fires.
  kubectl_.apply(json::serialize(json::object{
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "ValidatingWebhookConfiguration"},
      {"metadata", {{"name", hook}}},
      {"webhooks",
       json::array{{{"name", "vnodemaintenance.kb.io"},
                    {"admissionReviewVersions", json::array{"v1"}},
                    {"sideEffects", "None"},
                    {"failurePolicy", "Ignore"},
                    {"clientConfig", {{"url", "https://127.0.0.1:1/validate"}}},
                    {"rules", json::array{{{"operations", json::array{"CREATE"}},
                                           {"apiGroups", json::array{"example.invalid"}},
                                           {"apiVersions", json::array{"v1"}},
                                           {"resources", json::array{"nothings"}}}}}}}}}));
  defer([this, hook] { (void)kubectl_.run({"delete", "validatingwebhookconfiguration", hook}); });
  // Upstream's Deployment carries the label key node-maintenance-operator.
  kubectl_.apply(R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: node-maintenance-operator-controller-manager
  namespace: )" + ns.name() +
                 R"(
  labels:
    node-maintenance-operator: ""
spec:
  replicas: 0
  selector:
    matchLabels: {app: upstream-nmo}
  template:
    metadata:
      labels: {app: upstream-nmo}
    spec:
      containers: [{name: manager, image: "upstream:v0.21"}]
)");

  OperatorProcess& op = start();
  EXPECT_TRUE(
      op.wait_for_log("upstream medik8s NMO's admission webhook is still installed", kReact))
      << op.log_tail(20);
  EXPECT_TRUE(op.wait_for_log(
      "deployment=" + ns.name() + "/node-maintenance-operator-controller-manager", kReact))
      << op.log_tail(20);
}

// Upstream NMO's Deployment arguments (its flag names; loopback addresses here) and its
// OPERATOR_NAMESPACE: the operator starts, says what each upstream flag does here, takes the
// namespace from the variable, leads and drains (docs/operations.md, "Flags").
TEST_F(NodeMaintenanceTest, UpstreamsDeploymentArgumentsAndNamespaceVariableRunUnchanged) {
  const std::string node = "node-worker-05";
  const std::string cr = "maintenance-upstream-args";
  restore_node_at_end(node);
  ::setenv("OPERATOR_NAMESPACE", kOperatorNamespace, 1);
  OperatorProcess& op = start(
      {"--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=127.0.0.1:0",
       "--leader-elect", "--enable-http2=false", "--zap-encoder=console", "--zap-log-level=debug",
       "--zap-stacktrace-level=error", "--zap-time-encoding=rfc3339nano"});
  ::unsetenv("OPERATOR_NAMESPACE");
  for (const char* effect :
       {"--enable-http2=false: ignored, the servers speak HTTP/1.1 only",
        "--zap-encoder=console: text logs (--log-format=text)", "--zap-log-level=debug: -v 1",
        "--zap-stacktrace-level=error: ignored, these logs carry no stack traces",
        "--zap-time-encoding=rfc3339nano: ignored, times are RFC 3339 with milliseconds in UTC"}) {
    EXPECT_TRUE(op.wait_for_log(
        std::string("upstream flag controller=manager effect=\"") + effect + "\"", kReact))
        << effect << "\n"
        << op.log_tail(30);
  }
  EXPECT_TRUE(op.wait_for_log(
      std::string("namespace=") + kOperatorNamespace + " namespace_from=OPERATOR_NAMESPACE",
      kReact))
      << op.log_tail(30);
  ASSERT_FALSE(create(cr, node).empty());
  EXPECT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain)) << op.log_tail(30);
}

TEST_F(NodeMaintenanceTest, SecondMaintenanceForTheSameNodeFails) {
  const std::string node = "node-worker-02";
  const std::string older = "maintenance-worker-02";
  const std::string younger = "maintenance-worker-02-again";
  restore_node_at_end(node);
  start();
  const std::string older_uid = create(older, node);
  ASSERT_FALSE(older_uid.empty());
  ASSERT_TRUE(wait_phase(older, {"Running", "Succeeded"}, kReact));
  auto before = get_node(node);
  ASSERT_TRUE(before);
  const std::string prior_state = annotation(*before, kPriorStateAnnotation);
  auto older_lease = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(older_lease);

  // No webhook runs here, so the API server stores the duplicate; the controller arbitrates.
  const std::string younger_uid = create(younger, node);
  ASSERT_FALSE(younger_uid.empty());
  auto nm = wait_phase(younger, {"Failed"}, kReact);
  ASSERT_TRUE(nm);
  EXPECT_EQ(
      maintenance_of(*nm).status.last_error,
      "node \"" + node + "\" is already under maintenance by NodeMaintenance \"" + older + "\"");
  auto after = get_node(node);
  ASSERT_TRUE(after);
  EXPECT_EQ(annotation(*after, kPriorStateAnnotation), prior_state);
  EXPECT_EQ(annotation(*after, kPriorStateAnnotation).find(younger_uid), std::string::npos);

  // Deleting the duplicate leaves the older maintenance in force.
  remove(younger);
  ASSERT_TRUE(wait_gone(younger, kReact));
  after = get_node(node);
  ASSERT_TRUE(after);
  EXPECT_TRUE(unschedulable(*after)) << describe_node(*after);
  EXPECT_TRUE(drain_tainted(*after)) << describe_node(*after);
  EXPECT_EQ(annotation(*after, kPriorStateAnnotation), prior_state);
  // The same Lease object as before: not released (and maybe taken again by the older one).
  EXPECT_EQ(event_count(younger_uid, "LeaseReleased"), 0)
      << "the duplicate released the node lease of " << older;
  auto node_lease = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(node_lease) << "deleting the duplicate released the older one's node lease";
  EXPECT_EQ(uid_of(*node_lease), uid_of(*older_lease))
      << "the node lease was deleted and created again while " << older << " held it";
  EXPECT_EQ(string_at(*node_lease, "/spec/holderIdentity"), kNodeLeaseHolder);
  nm = get_node_maintenance(older);
  ASSERT_TRUE(nm);
  EXPECT_TRUE(phase_of(*nm) == "Running" || phase_of(*nm) == "Succeeded") << phase_of(*nm);

  remove(older);
  EXPECT_TRUE(wait_gone(older, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
}

TEST_F(NodeMaintenanceTest, UndoneCordonAndTaintAreReapplied) {
  const std::string node = "node-worker-05";
  const std::string cr = "maintenance-worker-05";
  restore_node_at_end(node);
  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  ASSERT_TRUE(wait_event(uid, "SucceedMaintenance", std::nullopt, kReact));

  auto reapplied = [&](const std::string& what) {
    std::optional<json::value> n;
    EXPECT_TRUE(wait_until(
        "cordon and drain taint re-applied after " + what, kReact,
        [&] {
          n = kubectl_.get_json({"node", node});
          return n && unschedulable(*n) && drain_tainted(*n);
        },
        [&] { return n ? describe_node(*n) : std::string("no node"); }));
  };

  kubectl_.must({"uncordon", node});
  reapplied("kubectl uncordon");
  auto warning = wait_event(uid, "MaintenanceReapplied", std::nullopt, kReact);
  ASSERT_TRUE(warning);
  EXPECT_EQ(warning->type, "Warning");
  const std::int64_t reapplied_count = event_count(uid, "MaintenanceReapplied");

  kubectl_.must({"taint", "node", node, std::string(kDrainTaintKey) + "-"});
  reapplied("removing the drain taint");
  EXPECT_TRUE(wait_until("a second MaintenanceReapplied event", kReact, [&] {
    return event_count(uid, "MaintenanceReapplied") > reapplied_count;
  }));

  auto nm = get_node_maintenance(cr);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Succeeded");
  EXPECT_EQ(event_count(uid, "SucceedMaintenance"), 1);
}

}  // namespace
}  // namespace nmo::e2e
