#include "operator/gates/admission_gates.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "operator/api/failure.h"

namespace nmo::op {
namespace {

using std::chrono::seconds;

const kube::Time kNow = kube::Time{} + std::chrono::hours(24 * 365 * 50);

// The maintenance asked about: new, on `node`, younger than every other.
GateMaintenance asking(std::string node) {
  return GateMaintenance{.name = "maintenance-" + node,
                         .uid = "uid-" + node,
                         .node = std::move(node),
                         .created = kNow};
}

GateMaintenance other(std::string name, std::string node, std::optional<Phase> phase,
                      bool holds_slot) {
  return GateMaintenance{.name = std::move(name),
                         .uid = "uid-other-" + node,
                         .node = std::move(node),
                         .created = kNow - seconds(600),
                         .phase = phase,
                         .holds_slot = holds_slot};
}

kube::Lease lease(const std::string& node, const std::string& holder) {
  kube::Lease l;
  l.meta.namespace_ = "medik8s-leases";
  l.meta.name = node_lease_name(node);
  l.holder_identity = holder;
  l.lease_duration_seconds = 3600;
  l.renew_time = kNow - seconds(60);
  l.acquire_time = kNow - seconds(60);
  return l;
}

kube::Pod etcd_pod(const std::string& node) {
  kube::Pod pod;
  pod.meta.namespace_ = "kube-system";
  pod.meta.name = "etcd-" + node;
  pod.meta.labels = kube::Labels{{"component", "etcd"}};
  pod.meta.annotations.set(std::string(kube::kMirrorPodAnnotation), "hash");
  pod.node_name = node;
  pod.ready_status = "True";
  return pod;
}

// A cluster of three control-plane nodes with stacked etcd, all Ready.
GateWorld three_control_planes() {
  GateWorld world{.now = kNow};
  for (const std::string node : {"cp-1", "cp-2", "cp-3"}) {
    world.etcd.control_plane_ready[node] = true;
    world.etcd.member_pods.push_back(etcd_pod(node));
  }
  return world;
}

// What the plugin and the controller both read from a verdict.
struct Outcome {
  bool lease_available = true;
  bool quorum_open = true;
  bool admitted = false;
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

std::ostream& operator<<(std::ostream& out, const Outcome& o) {
  return out << "{lease_available=" << o.lease_available << ", quorum_open=" << o.quorum_open
             << ", admitted=" << o.admitted << "}";
}

Outcome outcome(const GateWorld& world, const std::string& name) {
  const GateVerdict v = evaluate_gates(world, name, quorum_without_window);
  return Outcome{.lease_available = node_lease_available(v.lease),
                 .quorum_open = v.quorum_window.open,
                 .admitted = v.admitted};
}

struct Case {
  std::string what;
  GateWorld world;
  std::string name;
  Outcome expected;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  {
    GateWorld w{.now = kNow};
    w.maintenances = {asking("worker-1")};
    all.push_back({"free", w, "maintenance-worker-1", {.admitted = true}});
  }
  {
    GateWorld w{.now = kNow};
    w.maintenances = {other("older", "worker-2", Phase::kRunning, true), asking("worker-1")};
    all.push_back({"budget full: another maintenance runs", w, "maintenance-worker-1", {}});
    w.max_parallel = 2;
    all.push_back(
        {"another maintenance, room for two", w, "maintenance-worker-1", {.admitted = true}});
  }
  {
    GateWorld w{.now = kNow};
    w.maintenances = {asking("worker-1")};
    w.node_leases = {lease("worker-1", "NodeHealthCheck-x")};
    all.push_back(
        {"NHC holds the node's lease", w, "maintenance-worker-1", {.lease_available = false}});
    w.node_leases = {lease("worker-2", "NodeHealthCheck-x")};
    all.push_back({"NHC's lease on another node fills the budget", w, "maintenance-worker-1", {}});
    w.node_leases = {lease("worker-1", std::string(kNodeLeaseHolder))};
    all.push_back(
        {"our own lease (a resumed maintenance)", w, "maintenance-worker-1", {.admitted = true}});
  }
  {
    GateWorld w = three_control_planes();
    w.max_parallel = 3;
    w.maintenances = {asking("cp-2")};
    all.push_back({"quorum safe", w, "maintenance-cp-2", {.admitted = true}});
    w.etcd.control_plane_ready["cp-1"] = false;
    all.push_back({"quorum unsafe: cp-1 NotReady", w, "maintenance-cp-2", {.quorum_open = false}});
    w.etcd.control_plane_ready["cp-1"] = true;
    w.maintenances = {other("older", "cp-1", Phase::kRunning, true), asking("cp-2")};
    all.push_back({"quorum unsafe: cp-1 held by a Running maintenance",
                   w,
                   "maintenance-cp-2",
                   {.quorum_open = false}});
    w.maintenances = {other("older", "cp-1", Phase::kPending, false), asking("cp-2")};
    w.maintenances.front().admitting = true;
    all.push_back(
        {"quorum unsafe: cp-1 being admitted", w, "maintenance-cp-2", {.quorum_open = false}});
    w.maintenances = {other("older", "cp-1", Phase::kPending, false), asking("cp-2")};
    all.push_back({"quorum safe: cp-1 only waits (it holds nothing)",
                   w,
                   "maintenance-cp-2",
                   {.admitted = true}});
    w.etcd_quorum_check = false;
    w.maintenances = {other("older", "cp-1", Phase::kRunning, true), asking("cp-2")};
    all.push_back({"quorum check off", w, "maintenance-cp-2", {.admitted = true}});
  }
  {
    GateWorld w = three_control_planes();
    w.etcd.openshift = true;
    w.etcd.member_pods.clear();
    kube::PodDisruptionBudget guard;
    guard.meta.namespace_ = "openshift-etcd";
    guard.meta.name = "etcd-guard-pdb";
    guard.disruptions_allowed = 1;
    w.etcd.guard_pdbs = {guard};
    w.max_parallel = 3;
    w.maintenances = {asking("cp-2")};
    all.push_back(
        {"OpenShift: the guard PDB allows one", w, "maintenance-cp-2", {.admitted = true}});
    w.maintenances = {other("older", "cp-1", Phase::kRunning, true), asking("cp-2")};
    all.push_back({"OpenShift: another control-plane node held",
                   w,
                   "maintenance-cp-2",
                   {.quorum_open = false}});
  }
  return all;
}

TEST(AdmissionGatesTest, OneTableForTheControllerAndThePlugin) {
  for (const Case& c : cases()) {
    EXPECT_EQ(outcome(c.world, c.name), c.expected) << c.what;
  }
}

TEST(AdmissionGatesTest, AWaitingPlanForAnotherNodeGetsTheSlotWhenOlder) {
  // An older Pending maintenance of a node whose checks pass is admitted first: the one asked
  // about waits, as decide_admissions() orders them.
  GateWorld w{.now = kNow};
  w.maintenances = {other("older", "worker-2", Phase::kPending, false), asking("worker-1")};
  const GateVerdict v = evaluate_gates(w, "maintenance-worker-1", quorum_without_window);
  EXPECT_FALSE(v.admitted);
  EXPECT_EQ(v.budget.admit, std::vector<std::string>{"older"});
  // Its node is gone: it takes no place in the queue.
  w.maintenances.front().node_exists = false;
  EXPECT_TRUE(evaluate_gates(w, "maintenance-worker-1", quorum_without_window).admitted);
}

TEST(AdmissionGatesTest, TheQuorumDetailNamesTheHeldMembers) {
  GateWorld w = three_control_planes();
  w.maintenances = {other("older", "cp-1", Phase::kRunning, true), asking("cp-2")};
  const QuorumAnswer answer = etcd_quorum_answer(w, w.maintenances.back());
  EXPECT_TRUE(answer.applies);
  EXPECT_FALSE(answer.safe);
  EXPECT_EQ(answer.detail,
            "3 etcd members, 2 healthy, 1 left while it is down, 2 needed (held by another "
            "maintenance: cp-1)");
  EXPECT_FALSE(etcd_quorum_answer(w, other("w", "worker-1", std::nullopt, false)).applies);
  w.etcd.member_pods.clear();
  EXPECT_EQ(etcd_quorum_answer(w, w.maintenances.back()).detail,
            "no stacked etcd members found (external or managed etcd)");
}

TEST(AdmissionGatesTest, TheWindowDecidesAndIsAskedForEveryWaitingControlPlaneNode) {
  GateWorld w = three_control_planes();
  w.max_parallel = 3;
  w.maintenances = {other("older", "cp-1", Phase::kPending, false), asking("cp-2")};
  std::vector<std::string> asked;
  const GateVerdict v =
      evaluate_gates(w, "maintenance-cp-2", [&](const GateMaintenance& m, bool /*safe*/) {
        asked.push_back(m.name);
        return QuorumStabilityTracker::Verdict{.open = false,
                                               .recheck_at = Clock::time_point{} + seconds(30)};
      });
  EXPECT_FALSE(v.quorum_window.open);
  EXPECT_EQ(v.quorum_window.recheck_at, Clock::time_point{} + seconds(30));
  EXPECT_FALSE(v.budget_evaluated);
  EXPECT_EQ(asked, std::vector<std::string>{"maintenance-cp-2"});
}

TEST(AdmissionGatesTest, AGateMaintenanceReadsItsFailureFromTheStatus) {
  NodeMaintenance nm;
  nm.meta.name = "m";
  nm.spec.node_name = "worker-1";
  NodeMaintenanceStatus status;
  status.phase = Phase::kFailed;
  status.conditions.push_back(failure_condition(FailureKind::kNodeMissing, "gone"));
  EXPECT_TRUE(gate_maintenance(nm, status, true, false).cleanup_finished);
  status.conditions = {failure_condition(FailureKind::kTimeout, "slow")};
  const GateMaintenance timed_out = gate_maintenance(nm, status, true, true);
  EXPECT_FALSE(timed_out.cleanup_finished);
  EXPECT_TRUE(timed_out.holds_node());
}

}  // namespace
}  // namespace nmo::op
