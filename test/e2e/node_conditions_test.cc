// The node lifecycle conditions a NodeMaintenance writes on its node (docs/design.md §2.10)
// against the real API server and kwok: a maintenance's whole life (Pending: none; Running:
// MaintenanceInProgress and DrainInProgress while a PDB holds a pod; Succeeded: Drained; deleted:
// none), shown by `kubectl maintenance list -o wide` and `diagnose`, an operator killed mid-drain
// and restarted, kwok rewriting the node's status while ours are on it, another writer's
// conditions (another type, and one of our types with its own reason) left as they are, and
// --node-lifecycle-conditions=false.
//
// Each test runs on a fresh kwok node of its own, deleted at the end.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/subprocess.h"

#ifndef NMO_CLI_BIN
#error "NMO_CLI_BIN must be defined by the build (test/CMakeLists.txt)"
#endif

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// One entry of the node's status.conditions.
struct NodeCondition {
  std::string status;
  std::string reason;
  std::string message;
  std::string last_heartbeat;
};

class NodeLifecycleConditionsTest : public OperatorFixture {
 protected:
  OperatorProcess& start(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(), extra.begin(), extra.end());
    return start_operator(flags);
  }

  // The node's condition `type`, or nullopt when absent.
  static std::optional<NodeCondition> condition(const json::value& node, const std::string& type) {
    boost::system::error_code ec;
    const json::value* conditions = node.find_pointer("/status/conditions", ec);
    if (conditions == nullptr || !conditions->is_array()) return std::nullopt;
    for (const json::value& c : conditions->as_array()) {
      const json::object& o = c.as_object();
      if (o.if_contains("type") == nullptr || o.at("type").as_string() != type) continue;
      const auto text = [&](const char* key) {
        const json::value* v = o.if_contains(key);
        return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
      };
      return NodeCondition{.status = text("status"),
                           .reason = text("reason"),
                           .message = text("message"),
                           .last_heartbeat = text("lastHeartbeatTime")};
    }
    return std::nullopt;
  }

  // "type=status/reason" of each of the node's conditions, for failure messages.
  static std::string describe_conditions(const std::optional<json::value>& node) {
    if (!node) return "no node";
    boost::system::error_code ec;
    const json::value* conditions = node->find_pointer("/status/conditions", ec);
    if (conditions == nullptr) return "no conditions";
    std::string out;
    for (const json::value& c : conditions->as_array()) {
      const json::object& o = c.as_object();
      const auto text = [&](const char* key) {
        const json::value* v = o.if_contains(key);
        return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
      };
      out += text("type") + "=" + text("status") + "/" + text("reason") + " ";
    }
    return out;
  }

  // Sets a condition on the node as another writer would (a strategic-merge patch of status).
  void set_condition(const std::string& node, const std::string& type, const std::string& status,
                     const std::string& reason, const std::string& message) {
    const json::object patch{
        {"status",
         {{"conditions", json::array{{{"type", type},
                                      {"status", status},
                                      {"reason", reason},
                                      {"message", message},
                                      {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}}};
    kubectl_.must({"patch", "node", node, "--subresource=status", "--type=strategic", "-p",
                   json::serialize(patch)});
  }

  // What the node's conditions of our three types are, compared as "status/reason" ("-" when
  // absent), e.g. {"True/NodeMaintenance", "True/NodeMaintenanceDraining", "-"}.
  static std::vector<std::string> ours(const json::value& node) {
    std::vector<std::string> out;
    for (const char* type : {"MaintenanceInProgress", "DrainInProgress", "Drained"}) {
      const std::optional<NodeCondition> c = condition(node, type);
      out.push_back(c ? c->status + "/" + c->reason : "-");
    }
    return out;
  }

  // Waits until ours() of the node is `expected`; returns the node seen last.
  std::optional<json::value> wait_ours(const std::string& node,
                                       const std::vector<std::string>& expected,
                                       std::chrono::milliseconds timeout = kReact) {
    std::optional<json::value> seen;
    const bool reached = wait_until(
        "node " + node + " conditions " + json::serialize(json::value_from(expected)), timeout,
        [&] {
          seen = get_node(node);
          return seen && ours(*seen) == expected;
        },
        [&] { return describe_conditions(seen); });
    if (!reached) return std::nullopt;
    return seen;
  }
};

const std::vector<std::string> kNone = {"-", "-", "-"};
const std::vector<std::string> kDraining = {"True/NodeMaintenance", "True/NodeMaintenanceDraining",
                                            "-"};
const std::vector<std::string> kDrained = {"True/NodeMaintenance", "False/NodeMaintenanceDrained",
                                           "True/NodeMaintenanceDrained"};

// Pending (a foreign node lease holds the gate): none. Running with a PDB holding the last pod:
// MaintenanceInProgress naming the CR and its reason, DrainInProgress. SIGKILL mid-drain, the PDB
// relaxed while no operator runs, a fresh operator: Succeeded, DrainInProgress False, Drained
// True. kwok rewriting the node's status keeps them. Deleted: none. Node Problem Detector's
// condition stays throughout.
TEST_F(NodeLifecycleConditionsTest, AMaintenancesWholeLifeSurvivingAKillMidDrain) {
  const std::string node = fresh_node("conditions");
  const std::string cr = "maintenance-conditions-life";
  TestNamespace ns(kubectl_, "conditions-life");
  set_condition(node, "KernelDeadlock", "False", "KernelHasNoDeadlock", "kernel has no deadlock");
  kubectl_.apply(pod_manifest(ns.name(), "guarded", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=guarded", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "guarded-pdb", 1, "guarded"));
  ASSERT_TRUE(wait_pdb(ns.name(), "guarded-pdb", 1, 0));
  const std::string lease_name = "node-" + node;
  kubectl_.apply(foreign_node_lease_manifest(node, "NodeHealthCheck-x"));
  defer([this, lease_name] {
    (void)kubectl_.run(
        {"delete", "lease", lease_name, "-n", kLeaseNamespace, "--ignore-not-found"});
  });

  OperatorProcess* process = &start();
  const std::string uid = create(cr, node, "memory upgrade");
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_phase(cr, {"Pending"}, kReact));
  ASSERT_TRUE(wait_event(uid, "BlockedByNodeHealthCheck", std::nullopt, kReact));
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_EQ(ours(*n), kNone) << "a Pending maintenance has not taken the node";

  kubectl_.must({"delete", "lease", lease_name, "-n", kLeaseNamespace});
  n = wait_ours(node, kDraining);
  ASSERT_TRUE(n) << "Running: MaintenanceInProgress and DrainInProgress";
  const std::optional<NodeCondition> in_progress = condition(*n, "MaintenanceInProgress");
  EXPECT_EQ(in_progress->message, "NodeMaintenance " + cr + ": memory upgrade");
  auto nm = get_node_maintenance(cr);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running");
  // The plugin shows them: list -o wide's CONDITIONS column, diagnose's lifecycle lines.
  const ProcessResult list = run_process({NMO_CLI_BIN, "list", "-o", "wide"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  const std::size_t row = list.out.find("\n" + cr + " ");
  ASSERT_NE(row, std::string::npos) << list.out;
  const std::string line = list.out.substr(row + 1, list.out.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find(" MaintenanceInProgress,DrainInProgress "), std::string::npos) << list.out;
  const ProcessResult diagnose = run_process({NMO_CLI_BIN, "diagnose", cr});
  EXPECT_NE(diagnose.out.find("  lifecycle:    MaintenanceInProgress=True NodeMaintenance: "
                              "NodeMaintenance " +
                              cr +
                              ": memory upgrade\n"
                              "                DrainInProgress=True NodeMaintenanceDraining: "),
            std::string::npos)
      << diagnose.out << diagnose.err;

  // A crash mid-drain; the admin relaxes the PDB while no operator runs.
  process->kill();
  kubectl_.must({"delete", "pdb", "guarded-pdb", "-n", ns.name()});
  start();
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  n = wait_ours(node, kDrained);
  ASSERT_TRUE(n) << "Succeeded: DrainInProgress False, Drained True";
  EXPECT_EQ(condition(*n, "Drained")->message,
            "NodeMaintenance " + cr + " drained the node: every pod that must leave is gone");

  // kwok rewrites the node's status when it finds it not Ready (its node-initialize stage, a
  // strategic-merge patch of its own conditions): ours stay.
  const std::string heartbeat = condition(*n, "Ready")->last_heartbeat;
  set_condition(node, "Ready", "False", "KubeletNotReady", "made not ready by the test");
  std::optional<json::value> rewritten;
  ASSERT_TRUE(wait_until(
      "kwok to report the node Ready again", kReact,
      [&] {
        rewritten = get_node(node);
        if (!rewritten) return false;
        const auto ready = condition(*rewritten, "Ready");
        return ready && ready->status == "True" && ready->last_heartbeat != heartbeat;
      },
      [&] { return describe_conditions(rewritten); }));
  EXPECT_EQ(ours(*rewritten), kDrained) << describe_conditions(rewritten);

  remove(cr);
  ASSERT_TRUE(wait_gone(cr, kReact));
  n = get_node(node);
  ASSERT_TRUE(n);
  // Removed before the finalizer: nothing to wait for once the maintenance is gone.
  EXPECT_EQ(ours(*n), kNone) << describe_conditions(n);
  const std::optional<NodeCondition> npd = condition(*n, "KernelDeadlock");
  ASSERT_TRUE(npd) << "another writer's condition was removed: " << describe_conditions(n);
  EXPECT_EQ(npd->reason, "KernelHasNoDeadlock");
}

// A MaintenanceInProgress another tool set (its own reason) is never rewritten nor removed; the
// operator says so once and writes the types it holds alone.
TEST_F(NodeLifecycleConditionsTest, OurTypeWithAnotherWritersReasonIsLeftAlone) {
  const std::string node = fresh_node("conditions-foreign");
  const std::string cr = "maintenance-conditions-foreign";
  set_condition(node, "MaintenanceInProgress", "True", "RackReplacement",
                "the data centre's own tool");

  OperatorProcess& process = start();
  ASSERT_FALSE(create(cr, node, "firmware").empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  auto n = wait_ours(node, {"True/RackReplacement", "False/NodeMaintenanceDrained",
                            "True/NodeMaintenanceDrained"});
  ASSERT_TRUE(n);
  EXPECT_EQ(condition(*n, "MaintenanceInProgress")->message, "the data centre's own tool");
  EXPECT_TRUE(process.wait_for_log("another writer holds node conditions of ours", kReact));

  remove(cr);
  ASSERT_TRUE(wait_gone(cr, kReact));
  n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_EQ(ours(*n), (std::vector<std::string>{"True/RackReplacement", "-", "-"}))
      << describe_conditions(n);
}

// --node-lifecycle-conditions=false: none written, and ours left by an earlier run removed.
TEST_F(NodeLifecycleConditionsTest, TurnedOffWritesNoneAndRemovesOurs) {
  const std::string node = fresh_node("conditions-off");
  const std::string cr = "maintenance-conditions-off";
  set_condition(node, "DrainInProgress", "True", "NodeMaintenanceDraining",
                "NodeMaintenance an-earlier-one is evicting the pods that must leave");

  start({"--node-lifecycle-conditions=false"});
  ASSERT_FALSE(create(cr, node).empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  EXPECT_TRUE(wait_ours(node, kNone));
}

}  // namespace
}  // namespace nmo::e2e
