// This operator under upstream medik8s NMO's own RBAC, as an upstream user who swaps only the image
// runs it (docs/operations.md "Replacing an upstream medik8s NMO install", docs/rbac.md), against
// the real local cluster.
//
// The roles are upstream's, read from its fixture (config/rbac/role.yaml and
// leader_election_role.yaml, outside the repository: $NMO_UPSTREAM_NMO_DIR, else the build's
// NMO_UPSTREAM_NMO_DIR) and bound to a ServiceAccount made for the test; the operator runs with a
// token of that ServiceAccount and nothing else. Those roles grant leases without `delete`, and
// events only in the operator's namespace, and nothing for MaintenancePlans or KubeVirt.
//
// The scenario is the one upstream's own e2e suite runs on a worker, checked the way that suite
// checks it: a Deployment's pod on the node moves to the other worker; the maintenance is accepted,
// runs and Succeeds; the node is unschedulable with the taint medik8s.io/drain, effect NoSchedule;
// the node Lease is held by `node-maintenance` for 3600 s, acquired and renewed since the start;
// after the delete the node is schedulable and untainted, the Lease stays with no holder, times
// or duration (upstream's invalidated Lease), and the Deployment is still available. On top of
// that suite: each permission the roles lack is logged once (node Lease delete, Events in
// `default`, MaintenancePlans), and the operator keeps running.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/operator_process.h"
#include "test/e2e/support/subprocess.h"
#include "test/e2e/support/upstream_fixture.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

// What the test creates; fixed names, removed first in case a crashed run left them.
constexpr const char* kServiceAccount = "nmo-e2e-upstream-rbac";
constexpr const char* kClusterRole = "nmo-e2e-upstream-manager-role";
constexpr const char* kLeaderRole = "nmo-e2e-upstream-leader-election-role";
// Both operators' node lease duration.
constexpr std::int64_t kNodeLeaseSeconds = 3600;
// The label the Deployment's pods select the test's two workers by.
constexpr const char* kWorkerLabel = "test.node-maintenance/upstream-rbac";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `text` with the first "name: <from>" line's value replaced by `to`.
std::string renamed(std::string text, const std::string& from, const std::string& to) {
  const std::string key = "name: " + from + "\n";
  const auto at = text.find(key);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no `" << key << "` in upstream's manifest";
    return text;
  }
  return text.replace(at, key.size(), "name: " + to + "\n");
}

// UTC now as RFC 3339 to the second, comparable as a string with the first 19 characters of a
// MicroTime.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%S", &tm);
  return out;
}

class UpstreamRbacTest : public OperatorFixture {
 protected:
  void SetUp() override {
    if (!fs::exists(rbac_dir() / "role.yaml") ||
        !fs::exists(rbac_dir() / "leader_election_role.yaml")) {
      GTEST_SKIP() << "upstream medik8s NMO's fixture (config/rbac) not found in "
                   << upstream_fixture()
                   << "; set NMO_UPSTREAM_NMO_DIR (or the CMake cache variable of that name)";
    }
    OperatorFixture::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    remove_roles();
    kubectl_.must({"create", "serviceaccount", "-n", kOperatorNamespace, kServiceAccount});
    kubectl_.apply(renamed(read_file(rbac_dir() / "role.yaml"), "manager-role", kClusterRole));
    kubectl_.must({"apply", "-n", kOperatorNamespace, "-f", "-"},
                  renamed(read_file(rbac_dir() / "leader_election_role.yaml"),
                          "leader-election-role", kLeaderRole));
    const std::string subject = std::string(kOperatorNamespace) + ":" + kServiceAccount;
    kubectl_.must({"create", "clusterrolebinding", kClusterRole, "--clusterrole", kClusterRole,
                   "--serviceaccount", subject});
    kubectl_.must({"create", "rolebinding", "-n", kOperatorNamespace, kLeaderRole, "--role",
                   kLeaderRole, "--serviceaccount", subject});
    kubeconfig_ = e2e_log_dir() / (unique_name("upstream-rbac") + ".kubeconfig");
    const ProcessResult written = run_process(
        {"bash", (source_dir() / "hack/operator-kubeconfig.sh").string(), "--output",
         kubeconfig_.string(), "--duration", "1h", "--service-account", kServiceAccount});
    ASSERT_TRUE(written.ok()) << "hack/operator-kubeconfig.sh failed: " << written.err;
    ASSERT_TRUE(wait_until("the roles are in force", kReact, [&] {
      return can_i("patch", "nodes", "") && !can_i("delete", "leases", kLeaseNamespace) &&
             !can_i("create", "events", "default");
    }));
  }

  void TearDown() override {
    if (IsSkipped() && kubeconfig_.empty()) return;
    OperatorFixture::TearDown();
    remove_roles();
    std::error_code ignored;
    if (!kubeconfig_.empty()) fs::remove(kubeconfig_, ignored);
  }

  static fs::path rbac_dir() { return upstream_fixture() / "config/rbac"; }

  void remove_roles() {
    (void)kubectl_.run(
        {"delete", "clusterrolebinding,clusterrole", kClusterRole, "--ignore-not-found"});
    (void)kubectl_.run({"delete", "-n", kOperatorNamespace, "rolebinding,role", kLeaderRole,
                        "--ignore-not-found"});
    (void)kubectl_.run({"delete", "-n", kOperatorNamespace, "serviceaccount", kServiceAccount,
                        "--ignore-not-found"});
  }

  // `kubectl auth can-i` as the test's ServiceAccount (`ns` empty: cluster-wide).
  bool can_i(const std::string& verb, const std::string& resource, const std::string& ns) {
    std::vector<std::string> args{
        "auth", "can-i", verb, resource,
        "--as=system:serviceaccount:" + std::string(kOperatorNamespace) + ":" + kServiceAccount};
    if (!ns.empty()) args.insert(args.end(), {"-n", ns});
    return kubectl_.run(args).out == "yes\n";
  }

  // The node the workload's one Running pod is on ("" when there is none).
  std::string workload_node(const std::string& ns) {
    const auto pods = list_pods(kubectl_, ns, "app=workload");
    for (const auto& pod : pods) {
      if (pod_running_ready(pod)) return string_at(pod, "/spec/nodeName");
    }
    return {};
  }

  fs::path kubeconfig_;
};

TEST_F(UpstreamRbacTest, AWorkerIsTakenOutAndGivenBackUnderUpstreamsOwnRoles) {
  const std::vector<std::string> workers = fresh_nodes("uprbac", 2);
  ASSERT_EQ(workers.size(), 2U);
  const std::string run = unique_name("run");
  for (const auto& worker : workers) {
    kubectl_.must({"label", "node", worker, std::string(kWorkerLabel) + "=" + run});
  }
  TestNamespace ns(kubectl_, "uprbac");
  json::value workload = json::parse(deployment_manifest(ns.name(), "workload", 1, "workload"));
  workload.at("spec").at("template").at("spec").as_object()["nodeSelector"] =
      json::object{{kWorkerLabel, run}};
  kubectl_.apply(json::serialize(workload));
  ASSERT_TRUE(wait_running(ns.name(), "app=workload", 1));
  const std::string node = workload_node(ns.name());
  ASSERT_FALSE(node.empty());
  const std::string other = node == workers[0] ? workers[1] : workers[0];

  std::vector<std::string> flags{"--kubeconfig", kubeconfig_.string()};
  flags.insert(flags.end(), kOperatorFlags.begin(), kOperatorFlags.end());
  OperatorProcess& nmo = start_operator(flags);
  const std::string started = utc_now();
  const std::string cr = "nodemaintenance-upstream-rbac";
  ASSERT_FALSE(create(cr, node, "Set maintenance on node for e2e testing").empty());

  // Running, then Succeeded.
  auto nm = wait_phase(cr, {"Running", "Succeeded"}, kReact);
  ASSERT_TRUE(nm) << "the maintenance did not start";
  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm) << "the maintenance did not succeed";

  // Unschedulable, with the taint medik8s.io/drain (effect NoSchedule).
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_TRUE(unschedulable(*n)) << describe_node(*n);
  bool tainted = false;
  for (const auto& taint : n->at("spec").at("taints").as_array()) {
    tainted = tainted || (string_at(taint, "/key") == kDrainTaintKey &&
                          string_at(taint, "/effect") == "NoSchedule");
  }
  EXPECT_TRUE(tainted) << describe_node(*n);

  // A valid node Lease, acquired and renewed since the maintenance started.
  const auto held = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(held);
  const std::string checked = utc_now();
  EXPECT_EQ(string_at(*held, "/spec/holderIdentity"), kNodeLeaseHolder);
  EXPECT_EQ(int_at(*held, "/spec/leaseDurationSeconds"), kNodeLeaseSeconds);
  for (const char* time : {"/spec/acquireTime", "/spec/renewTime"}) {
    const std::string at = string_at(*held, time).substr(0, 19);
    EXPECT_GE(at, started) << time;
    EXPECT_LE(at, checked) << time;
  }

  // The workload moved to the other worker.
  ASSERT_TRUE(wait_until("the workload runs on " + other, kDrain,
                         [&] { return workload_node(ns.name()) == other; }));

  // Ending the maintenance.
  remove(cr);
  ASSERT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_FALSE(unschedulable(*n));
  EXPECT_FALSE(has_taint_key(*n, kDrainTaintKey)) << describe_node(*n);

  // The Lease stays (no delete granted), invalidated as upstream leaves it.
  const auto freed = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(freed) << "the node Lease was deleted, which upstream's roles forbid";
  for (const char* field : {"/spec/holderIdentity", "/spec/acquireTime", "/spec/renewTime"}) {
    EXPECT_EQ(string_at(*freed, field), "") << field;
  }
  EXPECT_EQ(int_at(*freed, "/spec/leaseDurationSeconds"), std::nullopt);

  // The workload is still available.
  EXPECT_TRUE(wait_running(ns.name(), "app=workload", 1));

  // What the roles lack was said in the log, and the operator carried on.
  EXPECT_TRUE(nmo.running()) << nmo.log_tail(40);
  const std::string log = nmo.log();
  const auto times = [&log](const std::string& text) {
    std::size_t found = 0;
    for (auto at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++found;
    return found;
  };
  EXPECT_EQ(times("deleting node leases is forbidden"), 1U) << nmo.log_tail(40);
  EXPECT_EQ(times("writing Events is forbidden"), 1U) << nmo.log_tail(40);
  EXPECT_EQ(times("listing MaintenancePlans is forbidden"), 1U) << nmo.log_tail(40);
}

}  // namespace
}  // namespace nmo::e2e
