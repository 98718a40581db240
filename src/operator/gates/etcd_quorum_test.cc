#include "operator/gates/etcd_quorum.h"

#include <chrono>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace nmo::op {
namespace {

using std::chrono::seconds;

std::vector<EtcdMember> masters(int count) {
  std::vector<EtcdMember> members;
  for (int i = 1; i <= count; ++i) {
    members.push_back(
        {.node = "node-master-0" + std::to_string(i), .pod_ready = true, .node_ready = true});
  }
  return members;
}

TEST(EtcdQuorumTest, ThreeMembersNeedTwoHealthy) {
  std::vector<EtcdMember> members = masters(3);
  QuorumCheck check = check_etcd_quorum(members, "node-master-02");
  EXPECT_EQ(check, (QuorumCheck{
                       .safe = true, .members = 3, .healthy = 3, .healthy_after = 2, .needed = 2}));
  // docs/design.md §8 (S5): node-master-01 is NotReady; taking node-master-02 down leaves one
  // healthy.
  members[0].node_ready = false;
  check = check_etcd_quorum(members, "node-master-02");
  EXPECT_FALSE(check.safe);
  EXPECT_EQ(check.healthy, 2);
  EXPECT_EQ(check.healthy_after, 1);
  EXPECT_EQ(check.needed, 2);
  // Taking the already unhealthy node-master-01 down costs nothing.
  EXPECT_TRUE(check_etcd_quorum(members, "node-master-01").safe);
  EXPECT_EQ(etcd_quorum_blocked_message("node-master-02"),
            "etcd quorum is not maintained when node node-master-02 is remediated");
}

TEST(EtcdQuorumTest, AMemberOnANodeHeldByAnotherMaintenanceCountsAsDown) {
  std::vector<EtcdMember> members = masters(3);
  // node-master-01 is under maintenance (Ready, cordoned, draining): taking node-master-02 too
  // would leave one healthy member once both are down.
  members[0].node_held = true;
  const QuorumCheck check = check_etcd_quorum(members, "node-master-02");
  EXPECT_EQ(
      check,
      (QuorumCheck{.safe = false, .members = 3, .healthy = 2, .healthy_after = 1, .needed = 2}));
  // Five members: one held, a second may still go (4 - 1 = 3 >= 3), a third may not.
  members = masters(5);
  members[0].node_held = true;
  EXPECT_TRUE(check_etcd_quorum(members, "node-master-02").safe);
  members[1].node_held = true;
  EXPECT_FALSE(check_etcd_quorum(members, "node-master-03").safe);
}

TEST(EtcdQuorumTest, FiveMembersNeedThreeHealthy) {
  std::vector<EtcdMember> members = masters(5);
  members[0].pod_ready = false;
  EXPECT_TRUE(check_etcd_quorum(members, "node-master-02").safe);  // 4 - 1 = 3 >= 3
  members[1].node_ready = false;
  const QuorumCheck check = check_etcd_quorum(members, "node-master-03");  // 3 - 1 = 2 < 3
  EXPECT_FALSE(check.safe);
  EXPECT_EQ(check.needed, 3);
}

TEST(EtcdQuorumTest, NoMembersMeansOpen) {
  const QuorumCheck check = check_etcd_quorum({}, "node-master-01");
  EXPECT_TRUE(check.safe);
  EXPECT_EQ(check.members, 0);
  EXPECT_EQ(check.needed, 0);
}

TEST(EtcdQuorumTest, SingleMemberCanNeverGoDown) {
  EXPECT_FALSE(check_etcd_quorum(masters(1), "node-master-01").safe);
  EXPECT_TRUE(check_etcd_quorum(masters(1), "node-worker-01").safe);
}

TEST(EtcdMemberPodTest, MirrorPodsLabelledComponentEtcdInKubeSystem) {
  kube::Pod pod;
  pod.meta.namespace_ = "kube-system";
  pod.meta.name = "etcd-node-master-01";
  pod.meta.labels = kube::Labels{{"component", "etcd"}, {"tier", "control-plane"}};
  pod.meta.annotations.set(std::string(kube::kMirrorPodAnnotation), "hash");
  pod.node_name = "node-master-01";
  pod.ready_status = "True";
  EXPECT_TRUE(is_etcd_member_pod(pod));
  EXPECT_EQ(etcd_member(pod, false),
            (EtcdMember{.node = "node-master-01", .pod_ready = true, .node_ready = false}));
  EXPECT_FALSE(etcd_member(pod, false).healthy());

  kube::Pod not_mirror = pod;
  not_mirror.meta.annotations = {};
  EXPECT_FALSE(is_etcd_member_pod(not_mirror));
  kube::Pod elsewhere = pod;
  elsewhere.meta.namespace_ = "default";
  EXPECT_FALSE(is_etcd_member_pod(elsewhere));
  kube::Pod other_component = pod;
  other_component.meta.labels = kube::Labels{{"component", "kube-apiserver"}};
  EXPECT_FALSE(is_etcd_member_pod(other_component));
}

TEST(ControlPlaneTest, EitherLabelKeyWithAnyValue) {
  kube::Node node;
  EXPECT_FALSE(is_control_plane(node));
  node.meta.labels = kube::Labels{{"node-role.kubernetes.io/control-plane", ""}};
  EXPECT_TRUE(is_control_plane(node));
  node.meta.labels = kube::Labels{{"node-role.kubernetes.io/master", "true"}};
  EXPECT_TRUE(is_control_plane(node));
  node.meta.labels = kube::Labels{{"node-role.kubernetes.io/worker", ""}};
  EXPECT_FALSE(is_control_plane(node));
}

TEST(QuorumStabilityTrackerTest, OpensOnlyAfterTheWindow) {
  QuorumStabilityTracker tracker;  // 30 s
  const Clock::time_point t0 = Clock::time_point{} + seconds{100};
  EXPECT_EQ(tracker.observe("nm", true, t0),
            (QuorumStabilityTracker::Verdict{.open = false, .recheck_at = t0 + seconds{30}}));
  EXPECT_EQ(tracker.observe("nm", true, t0 + seconds{10}).recheck_at, t0 + seconds{30});
  EXPECT_TRUE(tracker.observe("nm", true, t0 + seconds{30}).open);
  EXPECT_EQ(tracker.observe("nm", true, t0 + seconds{31}).recheck_at, std::nullopt);
}

TEST(QuorumStabilityTrackerTest, UnsafeResetsTheWindow) {
  QuorumStabilityTracker tracker(seconds{30});
  const Clock::time_point t0 = Clock::time_point{} + seconds{100};
  (void)tracker.observe("nm", true, t0);
  EXPECT_EQ(tracker.observe("nm", false, t0 + seconds{20}),
            (QuorumStabilityTracker::Verdict{.open = false, .recheck_at = std::nullopt}));
  EXPECT_EQ(tracker.observe("nm", true, t0 + seconds{25}).recheck_at, t0 + seconds{55});
  EXPECT_FALSE(tracker.observe("nm", true, t0 + seconds{40}).open);
  EXPECT_TRUE(tracker.observe("nm", true, t0 + seconds{55}).open);
  // Keys are independent; forget starts over.
  EXPECT_FALSE(tracker.observe("other", true, t0 + seconds{55}).open);
  tracker.forget("nm");
  EXPECT_FALSE(tracker.observe("nm", true, t0 + seconds{60}).open);
}

TEST(QuorumStabilityTrackerTest, ZeroWindowOpensAtOnce) {
  QuorumStabilityTracker tracker(seconds{0});
  EXPECT_TRUE(tracker.observe("nm", true, Clock::time_point{}).open);
}

kube::PodDisruptionBudget guard_pdb(std::int32_t allowed) {
  kube::PodDisruptionBudget pdb;
  pdb.meta.namespace_ = "openshift-etcd";
  pdb.meta.name = "etcd-guard-pdb";
  pdb.disruptions_allowed = allowed;
  return pdb;
}

TEST(OpenShiftGuardPdbTest, UpstreamRule) {
  const std::vector<GuardPod> guards{{.node = "master-0", .ready_status = "True"},
                                     {.node = "master-1", .ready_status = "False"},
                                     {.node = "master-2", .ready_status = "Unknown"}};
  const std::vector<kube::PodDisruptionBudget> one_blocking{guard_pdb(0)};
  const std::vector<kube::PodDisruptionBudget> one_allowing{guard_pdb(1)};
  const std::vector<kube::PodDisruptionBudget> two{guard_pdb(1), guard_pdb(1)};
  // No PDB, or several: cannot tell, so not allowed.
  EXPECT_FALSE(openshift_etcd_disruption_allowed({}, guards, "master-1"));
  EXPECT_FALSE(openshift_etcd_disruption_allowed(two, guards, "master-1"));
  // A disruption allowed: any node may go.
  EXPECT_TRUE(openshift_etcd_disruption_allowed(one_allowing, guards, "master-0"));
  // None allowed: a healthy member (Ready True or Unknown) may not go; a disrupted one may.
  EXPECT_FALSE(openshift_etcd_disruption_allowed(one_blocking, guards, "master-0"));
  EXPECT_FALSE(openshift_etcd_disruption_allowed(one_blocking, guards, "master-2"));
  EXPECT_TRUE(openshift_etcd_disruption_allowed(one_blocking, guards, "master-1"));
  // No guard pod on the node.
  EXPECT_TRUE(openshift_etcd_disruption_allowed(one_blocking, guards, "worker-0"));
}

TEST(OpenShiftGuardPdbTest, GuardPodsAndSelector) {
  kube::Pod pod;
  pod.node_name = "master-0";
  pod.meta.labels = kube::Labels{{"app", "guard"}};
  pod.ready_status = "True";
  EXPECT_EQ(guard_pod(pod), (GuardPod{.node = "master-0", .ready_status = "True"}));
  pod.ready_status = "False";
  EXPECT_EQ(guard_pod(pod).ready_status, "False");
  kube::PodDisruptionBudget pdb = guard_pdb(0);
  EXPECT_TRUE(guard_pdb_selects(pdb, pod.meta.labels));  // absent selector: every pod
  pdb.selector = kube::LabelSelector{};
  pdb.selector->match_labels = kube::Labels{{"app", "guard"}};
  EXPECT_TRUE(guard_pdb_selects(pdb, pod.meta.labels));
  pdb.selector->match_labels = kube::Labels{{"app", "other"}};
  EXPECT_FALSE(guard_pdb_selects(pdb, pod.meta.labels));
}

// The guard pod keeps its readiness as the API reports it: Unknown is a healthy member
// (upstream, medik8s/common pkg/etcd), so its node may not go while no disruption is allowed.
TEST(OpenShiftGuardPdbTest, GuardPodWithUnknownReadinessIsAHealthyMember) {
  auto decoded = kube::decode_pod(boost::json::parse(R"({
    "metadata": {"name": "etcd-guard-master-0", "namespace": "openshift-etcd",
                 "labels": {"app": "guard"}},
    "spec": {"nodeName": "master-0"},
    "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})"));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(guard_pod(*decoded).ready_status, "Unknown");
  const std::vector<kube::PodDisruptionBudget> blocking{guard_pdb(0)};
  const std::vector<kube::Pod> pods{*decoded};
  EXPECT_FALSE(openshift_etcd_quorum_safe(blocking, pods, "master-0", false));
}

// With a budget above one, a control-plane node held by another maintenance makes every other
// one wait, whatever the guard PDB still allows: never two control-plane nodes at a time.
TEST(OpenShiftGuardPdbTest, AnotherHeldControlPlaneNodeClosesTheGate) {
  const std::vector<kube::PodDisruptionBudget> allowing{guard_pdb(1)};
  kube::Pod guard;
  guard.node_name = "master-0";
  guard.ready_status = "True";
  const std::vector<kube::Pod> pods{guard};
  EXPECT_TRUE(openshift_etcd_quorum_safe(allowing, pods, "master-0", false));
  EXPECT_FALSE(openshift_etcd_quorum_safe(allowing, pods, "master-0", true));
  // The pods the PDB does not select are no guards.
  kube::PodDisruptionBudget selective = guard_pdb(0);
  selective.selector = kube::LabelSelector{};
  selective.selector->match_labels = kube::Labels{{"app", "guard"}};
  const std::vector<kube::PodDisruptionBudget> one{selective};
  EXPECT_TRUE(openshift_etcd_quorum_safe(one, pods, "master-0", false));
  guard.meta.labels = kube::Labels{{"app", "guard"}};
  const std::vector<kube::Pod> selected{guard};
  EXPECT_FALSE(openshift_etcd_quorum_safe(one, selected, "master-0", false));
}

}  // namespace
}  // namespace nmo::op
