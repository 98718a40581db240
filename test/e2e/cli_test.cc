// kubectl-maintenance against the real local cluster (docs/cli.md, docs/design.md §8 S7): every
// command with its output and exit status, on kwok nodes and NodeMaintenances of its own (prefix
// `cli-`), with the operator binary running as in production.
//   - start --wait / list / status / watch / stop --wait on a node that drains completely;
//   - plan predicts exactly the pods that later block, and diagnose names the blocking pod, its
//     PDB with its counts and the node lease holder (S7); plan says what the operator does with
//     each VM;
//   - watch in a pseudo-terminal (script(1)) redraws a progress bar whose percentage advances;
//   - a maintenance that times out makes start --wait exit 1; --timeout exits 5;
//   - done refuses a maintenance whose drain has not Succeeded and marks one that has;
//   - plan-status --watch follows a plan to Succeeded (JSON lines), and ends when the plan is
//     deleted (in a terminal, the cursor shown again) or --timeout passes;
//   - bad input: unknown node or CR, the API not installed, the API server down.
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/strings.h"
#include "http/server.h"
#include "http/testing/run.h"
#include "kube/api/time.h"
#include "operator/api/maintenance_plan.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/scenarios.h"
#include "test/e2e/support/subprocess.h"

#ifndef NMO_CLI_BIN
#error "NMO_CLI_BIN must be defined by the build (test/CMakeLists.txt)"
#endif

extern char** environ;  // NOLINT(readability-redundant-declaration): for posix_spawnp

namespace nmo::e2e {
namespace {

namespace json = boost::json;

std::string cli_binary() {
  if (const char* bin = std::getenv("NMO_CLI_BIN"); bin != nullptr && *bin != '\0') return bin;
  return NMO_CLI_BIN;
}

ProcessResult cli(std::vector<std::string> args) {
  args.insert(args.begin(), cli_binary());
  return run_process(args);
}

std::string describe(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A bare pod bound to `node` with labels and annotations.
std::string labelled_pod(const std::string& ns, const std::string& name, const std::string& node,
                         const std::map<std::string, std::string>& labels,
                         const std::map<std::string, std::string>& annotations = {}) {
  json::object label_map;
  for (const auto& [k, v] : labels) label_map[k] = v;
  json::object annotation_map;
  for (const auto& [k, v] : annotations) annotation_map[k] = v;
  json::object pod{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", ns}, {"labels", label_map}, {"annotations", annotation_map}}},
      {"spec",
       {{"nodeName", node},
        {"terminationGracePeriodSeconds", 1},
        {"containers", json::array{{{"name", "c"}, {"image", "registry.invalid/c:1"}}}}}}};
  return json::serialize(pod);
}

// A PodDisruptionBudget over the pods labelled app=<app>.
std::string budget(const std::string& ns, const std::string& name, const std::string& app,
                   int min_available) {
  return json::serialize(json::object{
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"minAvailable", min_available}, {"selector", {{"matchLabels", {{"app", app}}}}}}}});
}

class CliTest : public OperatorFixture {
 protected:
  // A fresh kwok node, deleted at the end (after the test's NodeMaintenances).
  std::string make_node() {
    std::string node = unique_name("cli-node");
    kubectl_.apply(node_manifest(node));
    defer([this, node] {
      (void)kubectl_.run({"delete", "node", node, "--ignore-not-found", "--timeout=60s"});
    });
    EXPECT_TRUE(wait_until("node " + node + " Ready", kReact, [&] {
      auto n = kubectl_.get_json({"node", node});
      return n && node_ready_status(n->as_object()) == "True";
    }));
    return node;
  }

  // A MaintenancePlan over `nodes` with `spec` added, deleted at the end (with its
  // NodeMaintenances) while the operator runs, before the nodes are.
  void create_plan(const std::string& name, const std::vector<std::string>& nodes,
                   json::object spec) {
    defer([this, name] {
      (void)kubectl_.run({"delete", "maintenanceplan", name, "--ignore-not-found", "--wait=true",
                          "--timeout=60s"});
      (void)kubectl_.run({"delete", "nodemaintenance", "-l",
                          std::string(op::kPlanLabel) + "=" + name, "--ignore-not-found",
                          "--wait=true", "--timeout=60s"});
    });
    spec["nodes"] = json::array(nodes.begin(), nodes.end());
    kubectl_.apply(json::serialize(json::object{{"apiVersion", op::kPlanApiVersion},
                                                {"kind", op::kPlanKind},
                                                {"metadata", {{"name", name}}},
                                                {"spec", std::move(spec)}}));
  }

  // A NodeMaintenance created by the CLI is deleted at the end, while the operator runs.
  void delete_at_end(const std::string& name) {
    defer([this, name] { (void)delete_node_maintenances(kubectl_, {name}, 60s); });
  }

  bool wait_pods_running(const std::string& ns, std::size_t count) {
    return wait_until(std::to_string(count) + " pods running in " + ns, kDrain, [&] {
      auto pods = list_pods(kubectl_, ns, "");
      std::size_t running = 0;
      for (const auto& p : pods) running += pod_running_ready(p) ? 1U : 0U;
      return running == count;
    });
  }

  // Waits until the PDB's status is computed with `allowed` disruptions.
  bool wait_pdb(const std::string& ns, const std::string& name, int allowed, int healthy) {
    return wait_until("PDB " + ns + "/" + name + " computed", kReact, [&] {
      auto pdb = kubectl_.get_json({"pdb", "-n", ns, name});
      return pdb && int_at(*pdb, "/status/disruptionsAllowed") == allowed &&
             int_at(*pdb, "/status/currentHealthy") == healthy;
    });
  }
};

// The reasons of status.pendingPodsRefs by pod name ("" when unset), read through
// maintenance_of() (a NodeMaintenance that does not decode fails the test).
std::map<std::string, std::string> pending_reasons(const json::value& nm) {
  std::map<std::string, std::string> reasons;
  for (const op::PendingPodRef& ref : maintenance_of(nm).status.pending_pods_refs) {
    reasons[ref.name] = ref.reason ? std::string(op::to_string(*ref.reason)) : std::string();
  }
  return reasons;
}

TEST_F(CliTest, StartWaitListStatusWatchStop) {
  start_operator(kOperatorFlags);
  const std::string node = make_node();
  TestNamespace ns(kubectl_, "cli-drain");
  kubectl_.apply(labelled_pod(ns.name(), "web-0", node, {{"app", "web"}}));
  kubectl_.apply(labelled_pod(ns.name(), "web-1", node, {{"app", "web"}}));
  kubectl_.apply(
      labelled_pod(ns.name(), "static-0", node, {{"app", "static"}}, {{kMirrorAnnotation, "x"}}));
  ASSERT_TRUE(wait_pods_running(ns.name(), 3));
  const std::string name = "maintenance-" + node;
  delete_at_end(name);

  const ProcessResult started =
      cli({"start", node, "--reason", "cli e2e", "--wait", "--timeout", "90s"});
  ASSERT_EQ(started.exit_code, 0) << describe(started);
  EXPECT_TRUE(contains(started.out, "nodemaintenance/" + name + " created (node " + node + ")"))
      << describe(started);
  EXPECT_TRUE(contains(started.out, "Succeeded")) << describe(started);
  EXPECT_TRUE(contains(started.out, "100%  2/2 pods")) << describe(started);
  EXPECT_FALSE(contains(started.out, "\033[")) << "escape codes in a pipe: " << started.out;

  const ProcessResult listed = cli({"list"});
  ASSERT_EQ(listed.exit_code, 0) << describe(listed);
  EXPECT_TRUE(contains(listed.out, "NAME")) << listed.out;
  std::istringstream lines(listed.out);
  std::string line;
  bool row = false;
  while (std::getline(lines, line)) {
    if (line.rfind(name + " ", 0) != 0) continue;
    row = true;
    EXPECT_TRUE(contains(line, node) && contains(line, "Succeeded") && contains(line, "100%"))
        << line;
  }
  EXPECT_TRUE(row) << listed.out;
  const ProcessResult listed_json = cli({"list", "-o", "json"});
  ASSERT_EQ(listed_json.exit_code, 0) << describe(listed_json);
  bool in_json = false;
  const json::value list = json::parse(listed_json.out);
  for (const auto& item : list.at("items").as_array()) {
    in_json = in_json || name_of(item) == name;
  }
  EXPECT_TRUE(in_json) << listed_json.out;

  const ProcessResult status = cli({"status", name});
  ASSERT_EQ(status.exit_code, 0) << describe(status);
  EXPECT_TRUE(contains(status.out, "Phase:        Succeeded\n")) << status.out;
  EXPECT_TRUE(contains(status.out, "Progress:     100% (2 of 2 pods gone)\n")) << status.out;
  EXPECT_TRUE(contains(status.out, "Reason:       cli e2e\n")) << status.out;
  const ProcessResult status_yaml = cli({"status", name, "-o", "yaml"});
  ASSERT_EQ(status_yaml.exit_code, 0) << describe(status_yaml);
  EXPECT_TRUE(contains(status_yaml.out, "  phase: Succeeded\n")) << status_yaml.out;
  EXPECT_TRUE(contains(status_yaml.out, "  nodeName: " + node + "\n")) << status_yaml.out;

  // watch of a finished maintenance: one plain line, exit 0; JSON lines with -o json.
  const ProcessResult watched = cli({"watch", name});
  ASSERT_EQ(watched.exit_code, 0) << describe(watched);
  EXPECT_TRUE(contains(watched.out, "Succeeded  [####################]  100%  2/2 pods"))
      << watched.out;
  const ProcessResult watched_json = cli({"watch", name, "-o", "json"});
  ASSERT_EQ(watched_json.exit_code, 0) << describe(watched_json);
  const json::value progress = json::parse(watched_json.out);
  EXPECT_EQ(progress.at("phase"), "Succeeded");
  EXPECT_EQ(progress.at("drainProgress"), 100);

  // A second start for the same node is refused by the API (AlreadyExists): exit 1.
  const ProcessResult again = cli({"start", node});
  EXPECT_EQ(again.exit_code, 1) << describe(again);
  EXPECT_TRUE(contains(again.err, "error: ")) << describe(again);

  // stop by node name, waiting until the operator has released the node.
  const ProcessResult stopped = cli({"stop", node, "--wait", "--timeout", "60s"});
  ASSERT_EQ(stopped.exit_code, 0) << describe(stopped);
  EXPECT_TRUE(contains(stopped.out, "nodemaintenance/" + name + " deleted")) << stopped.out;
  EXPECT_TRUE(contains(stopped.out, "node " + node + " is schedulable again")) << stopped.out;
  EXPECT_FALSE(get_node_maintenance(name).has_value());
  auto after = get_node(node);
  ASSERT_TRUE(after.has_value());
  EXPECT_FALSE(unschedulable(*after)) << describe_node(*after);
  EXPECT_FALSE(drain_tainted(*after)) << describe_node(*after);
}

TEST_F(CliTest, PlanPredictsTheBlockersAndDiagnoseNamesThem) {
  start_operator(kOperatorFlags);
  const std::string node = make_node();
  TestNamespace ns(kubectl_, "cli-plan");
  kubectl_.apply(labelled_pod(ns.name(), "free-0", node, {{"app", "free"}}));
  kubectl_.apply(labelled_pod(ns.name(), "guarded-0", node, {{"app", "guarded"}}));
  kubectl_.apply(labelled_pod(ns.name(), "twice-0", node, {{"app", "twice"}}));
  kubectl_.apply(
      labelled_pod(ns.name(), "static-0", node, {{"app", "static"}}, {{kMirrorAnnotation, "x"}}));
  kubectl_.apply(labelled_pod(ns.name(), "virt-launcher-db-x", node,
                              {{"app", "vm"}, {"kubevirt.io", "virt-launcher"}},
                              {{"kubevirt.io/domain", "db"}}));
  kubectl_.apply(budget(ns.name(), "guarded-pdb", "guarded", 1));
  kubectl_.apply(budget(ns.name(), "twice-a", "twice", 0));
  kubectl_.apply(budget(ns.name(), "twice-b", "twice", 0));
  ASSERT_TRUE(wait_pods_running(ns.name(), 5));
  ASSERT_TRUE(wait_pdb(ns.name(), "guarded-pdb", 0, 1));
  ASSERT_TRUE(wait_pdb(ns.name(), "twice-a", 1, 1));
  ASSERT_TRUE(wait_pdb(ns.name(), "twice-b", 1, 1));
  const std::string name = "cli-" + node;

  // plan: a dry run that changes nothing.
  const ProcessResult planned = cli({"plan", node, "--name", name, "-o", "json"});
  ASSERT_EQ(planned.exit_code, 0) << describe(planned);
  const json::value plan = json::parse(planned.out);
  std::map<std::string, std::string> action;
  std::map<std::string, std::string> reason;
  for (const auto& p : plan.at("pods").as_array()) {
    action[string_at(p, "/name")] = string_at(p, "/action");
    reason[string_at(p, "/name")] = string_at(p, "/reason");
  }
  EXPECT_EQ(action["free-0"], "evict") << planned.out;
  EXPECT_EQ(action["guarded-0"], "block") << planned.out;
  EXPECT_EQ(reason["guarded-0"], "BlockedByPDB") << planned.out;
  EXPECT_EQ(action["twice-0"], "block") << planned.out;
  EXPECT_EQ(reason["twice-0"], "MultiplePDBs") << planned.out;
  EXPECT_EQ(action["static-0"], "skip") << planned.out;
  EXPECT_EQ(reason["static-0"], "MirrorPod") << planned.out;
  // No KubeVirt API in this cluster: whether the VM can migrate is unknown, and said so.
  EXPECT_EQ(action["virt-launcher-db-x"], "unknown") << planned.out;
  for (const auto& gate : plan.at("gates").as_array()) {
    if (string_at(gate, "/gate") == "budget") continue;  // depends on the cluster's other CRs
    EXPECT_TRUE(gate.at("open").as_bool()) << planned.out;
  }
  const ProcessResult planned_text = cli({"plan", node, "--name", name});
  ASSERT_EQ(planned_text.exit_code, 0) << describe(planned_text);
  EXPECT_TRUE(contains(planned_text.out, "Pods that will block the drain (2):\n  " + ns.name() +
                                             "/guarded-0  BlockedByPDB  PDB " + ns.name() +
                                             "/guarded-pdb: 0 disruptions allowed (1 healthy, 1 "
                                             "desired)\n"))
      << planned_text.out;
  EXPECT_FALSE(get_node_maintenance(name).has_value()) << "plan created a NodeMaintenance";
  auto untouched = get_node(node);
  ASSERT_TRUE(untouched.has_value());
  EXPECT_FALSE(unschedulable(*untouched)) << "plan cordoned the node";

  // The maintenance blocks on exactly the pods the plan said would block.
  delete_at_end(name);
  const ProcessResult started = cli({"start", node, "--name", name});
  ASSERT_EQ(started.exit_code, 0) << describe(started);
  std::optional<json::value> seen;
  ASSERT_TRUE(wait_until(
      "the drain blocked on its two pods", kDrain,
      [&] {
        seen = get_node_maintenance(name);
        if (!seen) return false;
        const auto reasons = pending_reasons(*seen);
        return reasons.size() == 2 && reasons.count("guarded-0") &&
               reasons.at("guarded-0") == "BlockedByPDB" && reasons.count("twice-0") &&
               reasons.at("twice-0") == "MultiplePDBs";
      },
      [&] { return seen ? json::serialize(*seen) : std::string("no NodeMaintenance"); }));
  std::set<std::string> predicted;
  for (const auto& [pod, verdict] : action) {
    if (verdict == "block") predicted.insert(pod);
  }
  std::set<std::string> blocked;
  for (const auto& [pod, why] : pending_reasons(*seen)) blocked.insert(pod);
  EXPECT_EQ(predicted, blocked);

  // S7: diagnose names the blocking pod, its PDB with its counts, and the lease holder.
  const ProcessResult diagnosed = cli({"diagnose", name});
  ASSERT_EQ(diagnosed.exit_code, 0) << describe(diagnosed);
  const std::string& report = diagnosed.out;
  for (const std::string& expected : std::vector<std::string>{
           "Phase:        Running\n", "  " + ns.name() + "/guarded-0: BlockedByPDB\n",
           "    PDB " + ns.name() + "/guarded-pdb: 0 disruptions allowed: 1 healthy, 1 desired\n",
           "  " + ns.name() + "/twice-0: MultiplePDBs\n",
           "  node lease:   medik8s-leases/node-" + node +
               ": held by node-maintenance (the operator)\n",
           "  slots:        ", "  schedulable:  no (cordoned)\n",
           "medik8s.io/drain=draining:NoSchedule", "BeginMaintenance", "DrainError",
           "Verdict: pod " + ns.name() + "/guarded-0 is protected by PDB " + ns.name() +
               "/guarded-pdb (0 disruptions allowed: 1 healthy, 1 desired): scale up, migrate the "
               "VM, or relax the PDB\n"}) {
    EXPECT_TRUE(contains(report, expected)) << "missing: " << expected << "\n" << report;
  }
  EXPECT_LT(report.find("BeginMaintenance"), report.find("DrainError")) << report;
  // The server's version, and on one before 1.31 what it lacks (docs/operations.md).
  const int minor = server_minor(kubectl_);
  EXPECT_TRUE(contains(report, "\nAPI server: Kubernetes v1." + std::to_string(minor) + "."))
      << report;
  EXPECT_EQ(contains(report, "  lacks field selectors on custom resources"), minor < 31) << report;
  const ProcessResult diagnosed_json = cli({"diagnose", name, "-o", "json"});
  ASSERT_EQ(diagnosed_json.exit_code, 0) << describe(diagnosed_json);
  const json::value diagnosis = json::parse(diagnosed_json.out);
  EXPECT_EQ(diagnosis.at("nodeLease").at("holder"), "node-maintenance");
  bool pdb_reported = false;
  for (const auto& p : diagnosis.at("pendingPods").as_array()) {
    if (string_at(p, "/name") != "guarded-0") continue;
    pdb_reported = string_at(p, "/pdbs/0/name") == ns.name() + "/guarded-pdb" &&
                   int_at(p, "/pdbs/0/disruptionsAllowed") == 0;
  }
  EXPECT_TRUE(pdb_reported) << diagnosed_json.out;

  // list shows what blocks it; watch gives up at --timeout with exit 5.
  const ProcessResult listed = cli({"list"});
  EXPECT_TRUE(contains(listed.out, "BlockedByPDB (1), MultiplePDBs (1)")) << listed.out;
  const ProcessResult watched = cli({"watch", name, "--timeout", "2s"});
  EXPECT_EQ(watched.exit_code, 5) << describe(watched);
  EXPECT_TRUE(contains(watched.err, "error: timed out after 2s waiting for NodeMaintenance \"" +
                                        name + "\" (phase Running)"))
      << describe(watched);
  EXPECT_TRUE(contains(watched.out, "pending " + ns.name() + "/guarded-0: BlockedByPDB"))
      << watched.out;
}

// With the kubevirt.io/v1 API served (here by a CRD standing in for KubeVirt), plan reads each
// launcher's VirtualMachineInstance and predicts what the operator does with its pod: the
// story's VM (migratable, no eviction strategy) would be shut down by an eviction, so the
// operator live-migrates it itself; one with strategy None that cannot migrate blocks (held);
// LiveMigrate on a migratable VMI is evicted and KubeVirt live-migrates it; LiveMigrate on one that
// cannot migrate blocks for good; a missing VMI is unknown.
TEST_F(CliTest, PlanSaysWhatTheOperatorDoesWithEachVm) {
  const StandInCrd kubevirt(kubectl_, "kubevirt.io", "virtualmachineinstances",
                            "VirtualMachineInstance", "Namespaced",
                            "/apis/kubevirt.io/v1/virtualmachineinstances");
  ASSERT_TRUE(kubevirt.served());
  const std::string node = make_node();
  TestNamespace ns(kubectl_, "cli-vm");
  auto vmi = [&ns](const std::string& name, const std::string& strategy,
                   const std::string& migratable, const std::string& message) {
    json::object condition{{"type", "LiveMigratable"},
                           {"status", migratable},
                           {"reason", "DisksNotLiveMigratable"},
                           {"message", message}};
    json::object status{{"conditions", json::array{condition}}};
    json::object metadata{{"name", name}, {"namespace", ns.name()}};
    json::object spec;
    if (!strategy.empty()) spec["evictionStrategy"] = strategy;
    json::object object{{"apiVersion", "kubevirt.io/v1"},
                        {"kind", "VirtualMachineInstance"},
                        {"metadata", metadata},
                        {"spec", spec},
                        {"status", status}};
    return json::serialize(object);
  };
  kubectl_.apply(vmi("db", "None", "False", "cannot migrate VMI: PVC db-disk is not shared"));
  kubectl_.apply(vmi("order", "", "True", ""));
  kubectl_.apply(vmi("web", "LiveMigrate", "True", ""));
  kubectl_.apply(
      vmi("api", "LiveMigrate", "False", "cannot migrate VMI: PVC api-disk is not shared"));
  for (const std::string vm : {"db", "order", "web", "api", "gone"}) {
    kubectl_.apply(labelled_pod(ns.name(), "virt-launcher-" + vm + "-x", node,
                                {{"kubevirt.io", "virt-launcher"}}, {{"kubevirt.io/domain", vm}}));
  }
  ASSERT_TRUE(wait_pods_running(ns.name(), 5));

  const ProcessResult planned = cli({"plan", node});
  ASSERT_EQ(planned.exit_code, 0) << describe(planned);
  const ProcessResult planned_json = cli({"plan", node, "-o", "json"});
  ASSERT_EQ(planned_json.exit_code, 0) << describe(planned_json);
  const json::value plan = json::parse(planned_json.out);
  std::map<std::string, std::string> action;
  std::map<std::string, std::string> reason;
  std::map<std::string, std::string> detail;
  for (const auto& p : plan.at("pods").as_array()) {
    action[string_at(p, "/name")] = string_at(p, "/action");
    reason[string_at(p, "/name")] = string_at(p, "/reason");
    detail[string_at(p, "/name")] = string_at(p, "/detail");
  }
  const std::string vms = "VMI " + ns.name() + "/";
  EXPECT_EQ(action["virt-launcher-db-x"], "block") << planned_json.out;
  EXPECT_EQ(reason["virt-launcher-db-x"], "VMWouldShutDown");
  EXPECT_EQ(detail["virt-launcher-db-x"],
            vms +
                "db cannot live-migrate: cannot migrate VMI: PVC db-disk is not shared and has "
                "eviction strategy None: evicting its pod would shut it down; set "
                "vmEvictionPolicy AllowShutdown on the maintenance to allow that");
  EXPECT_EQ(action["virt-launcher-order-x"], "evict") << planned_json.out;
  EXPECT_EQ(reason["virt-launcher-order-x"], "MigratingVM");
  EXPECT_EQ(detail["virt-launcher-order-x"],
            vms +
                "order has no eviction strategy, so evicting its pod would shut it down: the "
                "operator live-migrates it instead (a VirtualMachineInstanceMigration); the pod "
                "ends once the VM has left");
  EXPECT_EQ(action["virt-launcher-web-x"], "evict") << planned_json.out;
  EXPECT_EQ(reason["virt-launcher-web-x"], "MigratingVM");
  EXPECT_EQ(detail["virt-launcher-web-x"],
            vms +
                "web has eviction strategy LiveMigrate: KubeVirt live-migrates it when its pod "
                "is evicted; the eviction is deferred until the VM has left");
  EXPECT_EQ(action["virt-launcher-api-x"], "block") << planned_json.out;
  EXPECT_EQ(reason["virt-launcher-api-x"], "VMNotMigratable");
  EXPECT_EQ(detail["virt-launcher-api-x"],
            vms +
                "api has eviction strategy LiveMigrate but cannot live-migrate: cannot migrate "
                "VMI: PVC api-disk is not shared: KubeVirt refuses every eviction of its pod "
                "until the VM can migrate or its strategy changes");
  EXPECT_EQ(action["virt-launcher-gone-x"], "unknown") << planned_json.out;
  EXPECT_TRUE(contains(planned.out, "virt-launcher-order-x  MigratingVM")) << planned.out;
  EXPECT_TRUE(contains(planned.out, "Verdict: would start, then block on 2 pods (first: " +
                                        ns.name() + "/virt-launcher-api-x"))
      << planned.out;
}

// A child process running in the background with stdout (and stderr) in a file.
class Background {
 public:
  Background(const std::vector<std::string>& argv, std::filesystem::path out)
      : out_(std::move(out)) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    spawn(argv, actions, nullptr);
    posix_spawn_file_actions_destroy(&actions);
  }
  // `argv` in a pseudo-terminal of its own (120 columns), as its controlling terminal, so
  // typing Ctrl-C (type("\x03")) sends it SIGINT as a shell's terminal would.
  explicit Background(const std::vector<std::string>& argv) {
    master_ = posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0 || grantpt(master_) != 0 || unlockpt(master_) != 0) return;
    const winsize size{.ws_row = 40, .ws_col = 120, .ws_xpixel = 0, .ws_ypixel = 0};
    ioctl(master_, TIOCSWINSZ, &size);
    const std::string terminal = ptsname(master_);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // After setsid(), opening the terminal makes it the child's controlling terminal.
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, terminal.c_str(), O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&actions, STDIN_FILENO, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, STDIN_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, master_);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID);
    spawn(argv, actions, &attributes);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    fcntl(master_, F_SETFL, fcntl(master_, F_GETFL) | O_NONBLOCK);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  [[nodiscard]] bool started() const { return pid_ > 0; }
  // True once the child has exited (its status in exit_code()).
  bool finished() {
    if (done_ || pid_ <= 0) return done_;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      done_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return done_;
  }
  [[nodiscard]] int exit_code() const { return exit_code_; }
  // Everything written so far (to the file, or to the terminal).
  [[nodiscard]] std::string output() {
    if (master_ >= 0) {
      std::array<char, 4096> buffer{};
      for (ssize_t n = 0; (n = read(master_, buffer.data(), buffer.size())) > 0;) {
        drawn_.append(buffer.data(), static_cast<std::size_t>(n));
      }
      return drawn_;
    }
    std::ifstream in(out_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  // Types `keys` on the terminal.
  void type(const std::string& keys) const {
    EXPECT_EQ(write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }

 private:
  void spawn(const std::vector<std::string>& argv, const posix_spawn_file_actions_t& actions,
             const posix_spawnattr_t* attributes) {
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawnp(&pid_, args[0], &actions, attributes, args.data(), environ) != 0) pid_ = -1;
  }

  std::filesystem::path out_;
  int master_ = -1;    // the terminal's master side, for a child in a terminal
  std::string drawn_;  // what the child drew on its terminal so far
  pid_t pid_ = -1;
  bool done_ = false;
  int exit_code_ = -1;
};

TEST_F(CliTest, WatchRedrawsAnAdvancingProgressBarOnATerminal) {
  start_operator(kOperatorFlags);
  const std::string node = make_node();
  TestNamespace ns(kubectl_, "cli-watch");
  for (int i = 0; i < 4; ++i) {
    kubectl_.apply(labelled_pod(ns.name(), "held-" + std::to_string(i), node, {{"app", "held"}}));
  }
  kubectl_.apply(budget(ns.name(), "held-pdb", "held", 4));
  ASSERT_TRUE(wait_pods_running(ns.name(), 4));
  ASSERT_TRUE(wait_pdb(ns.name(), "held-pdb", 0, 4));
  const std::string name = "cli-" + node;
  ASSERT_TRUE(create_node_maintenance(name, node));
  ASSERT_TRUE(wait_until("all four pods blocked", kDrain, [&] {
    auto nm = get_node_maintenance(name);
    return nm && pending_reasons(*nm).size() == 4 && phase_of(*nm) == "Running";
  }));

  // script(1) gives the command a pseudo-terminal and copies what it draws to our file.
  const std::filesystem::path out = e2e_log_dir() / (name + ".watch.typescript");
  Background watch({"script", "-q", "-e", "-c", cli_binary() + " watch " + name + " --timeout 120s",
                    "/dev/null"},
                   out);
  ASSERT_TRUE(watch.started());
  ASSERT_TRUE(wait_until(
      "the first drawing", kReact, [&] { return contains(watch.output(), "  0%  0/4 pods"); },
      [&] { return watch.output(); }));
  // Each pod that goes (here: deleted by hand) moves the bar on by a quarter.
  for (int i = 0; i < 4; ++i) {
    kubectl_.must({"delete", "pod", "-n", ns.name(), "held-" + std::to_string(i), "--wait=false"});
    const std::string percent = std::to_string(25 * (i + 1)) + "%  " + std::to_string(i + 1) + "/4";
    ASSERT_TRUE(wait_until(
        "watch shows " + percent, kDrain, [&] { return contains(watch.output(), percent); },
        [&] { return watch.output(); }));
  }
  ASSERT_TRUE(wait_until("watch exits", kReact, [&] { return watch.finished(); }));
  EXPECT_EQ(watch.exit_code(), 0) << watch.output();
  const std::string drawn = watch.output();
  // Redrawn in place: the cursor goes back up over the previous drawing.
  EXPECT_TRUE(contains(drawn, "\033[")) << drawn;
  std::size_t previous = 0;
  for (const char* percent : {"  0%", " 25%", " 50%", " 75%", "100%"}) {
    const std::size_t at = drawn.find(percent);
    ASSERT_NE(at, std::string::npos) << percent << " never drawn:\n" << drawn;
    EXPECT_GE(at, previous) << percent << " drawn before a smaller percentage:\n" << drawn;
    previous = at;
  }
  EXPECT_TRUE(contains(drawn, "pending " + ns.name() + "/held-")) << drawn;
  EXPECT_TRUE(contains(drawn, "BlockedByPDB")) << drawn;
}

TEST_F(CliTest, StartWaitExitsOneWhenTheMaintenanceFails) {
  start_operator(kOperatorFlags);
  const std::string node = make_node();
  TestNamespace ns(kubectl_, "cli-fail");
  kubectl_.apply(labelled_pod(ns.name(), "guarded-0", node, {{"app", "guarded"}}));
  kubectl_.apply(budget(ns.name(), "guarded-pdb", "guarded", 1));
  ASSERT_TRUE(wait_pods_running(ns.name(), 1));
  ASSERT_TRUE(wait_pdb(ns.name(), "guarded-pdb", 0, 1));
  const std::string name = "cli-" + node;
  delete_at_end(name);
  const ProcessResult started =
      cli({"start", node, "--name", name, "--drain-timeout", "3s", "--wait", "--timeout", "90s"});
  EXPECT_EQ(started.exit_code, 1) << describe(started);
  EXPECT_TRUE(contains(started.err, "error: NodeMaintenance \"" + name +
                                        "\" failed: drain did not complete within 3s"))
      << describe(started);
  const ProcessResult diagnosed = cli({"diagnose", name});
  EXPECT_EQ(diagnosed.exit_code, 0) << describe(diagnosed);
  EXPECT_TRUE(contains(diagnosed.out, "Verdict: failed: drain did not complete within 3s"))
      << diagnosed.out;
}

// plan reads the budget the operator publishes on its Lease nmo-budget; --max-parallel wins.
TEST_F(CliTest, PlanReadsTheBudgetTheOperatorRunsWith) {
  std::vector<std::string> flags = kOperatorFlags;
  flags.insert(flags.end(), {"--max-parallel-maintenances", "3"});
  start_operator(flags);
  const std::string annotation =
      R"(jsonpath={.metadata.annotations.nodemaintenance\.medik8s\.io/max-parallel-maintenances})";
  ASSERT_TRUE(wait_until("the budget published", kReact, [&] {
    const ProcessResult got =
        kubectl_.run({"get", "lease", "-n", kOperatorNamespace, kBudgetLease, "-o", annotation});
    return got.ok() && got.out == "3";
  }));
  const std::string node = make_node();
  const ProcessResult planned = cli({"plan", node});
  ASSERT_EQ(planned.exit_code, 0) << describe(planned);
  EXPECT_TRUE(contains(planned.out,
                       " of 3 slots in use (--max-parallel-maintenances 3, published by the "
                       "operator on Lease node-maintenance-operator-system/nmo-budget)"))
      << planned.out;
  const ProcessResult overridden = cli({"plan", node, "--max-parallel", "2"});
  ASSERT_EQ(overridden.exit_code, 0) << describe(overridden);
  EXPECT_TRUE(contains(overridden.out,
                       " of 2 slots in use (--max-parallel-maintenances 2, --max-parallel)"))
      << overridden.out;
}

// The plugin predicts the operator (docs/design.md §2.2): both evaluate the gates with the same
// code (operator/gates/admission_gates.h), the operator from its cache, `plan` from lists. For
// each cluster state `plan -o json` says whether the maintenance would start and which gate
// would hold it; the operator, given that very maintenance, then does exactly that: it starts,
// or it stays Pending with the Event of that gate. (Pods that block a started drain: the PDB and
// VM tests above.)
TEST_F(CliTest, PlanPredictsWhatTheOperatorThenDoes) {
  auto etcd = std::make_shared<KubeadmEtcd>(kubectl_, kControlPlaneNodes);
  defer([etcd]() mutable { etcd.reset(); });
  ASSERT_TRUE(etcd->ready());
  for (const auto& node : kControlPlaneNodes) restore_node_at_end(node);
  start_operator(kOperatorFlags);  // one maintenance at a time

  struct Prediction {
    bool would_start = false;
    std::string closed_gate;  // the first gate that holds it, "" when none
    std::string verdict;
  };
  const auto predict = [&](const std::string& node) {
    const ProcessResult planned = cli({"plan", node, "-o", "json"});
    EXPECT_EQ(planned.exit_code, 0) << describe(planned);
    Prediction p;
    boost::system::error_code ec;
    const json::value plan = json::parse(planned.out, ec);
    if (ec) return p;
    p.would_start = plan.at("wouldStart").as_bool();
    p.verdict = std::string(plan.at("verdict").as_string());
    for (const auto& gate : plan.at("gates").as_array()) {
      if (!gate.at("open").as_bool()) {
        p.closed_gate = std::string(gate.at("gate").as_string());
        break;
      }
    }
    return p;
  };
  // The Event the operator announces for the gate that holds a maintenance.
  const std::map<std::string, std::string> event_of_gate = {
      {"node lease", "BlockedByNodeHealthCheck"},
      {"budget", "BlockedByNodeHealthCheck"},
      {"etcd quorum", "BlockedByEtcdQuorum"}};
  int serial = 0;
  // Predicts for `node`, creates its maintenance, and checks that the operator does what the
  // plugin said; deletes the maintenance again.
  const auto check = [&](const std::string& what, const std::string& node, bool would_start,
                         const std::string& closed_gate) {
    SCOPED_TRACE(what);
    const Prediction p = predict(node);
    EXPECT_EQ(p.would_start, would_start) << p.verdict;
    EXPECT_EQ(p.closed_gate, closed_gate) << p.verdict;
    const std::string cr = "maintenance-predicted-" + std::to_string(++serial);
    const std::string uid = create(cr, node);
    ASSERT_FALSE(uid.empty());
    if (p.would_start) {
      EXPECT_TRUE(wait_phase(cr, {"Running", "Succeeded"}, kReact)) << p.verdict;
    } else {
      const auto event = event_of_gate.find(p.closed_gate);
      ASSERT_NE(event, event_of_gate.end()) << p.verdict;
      EXPECT_TRUE(wait_event(uid, event->second, std::nullopt, kReact)) << p.verdict;
      auto nm = get_node_maintenance(cr);
      ASSERT_TRUE(nm);
      EXPECT_EQ(phase_of(*nm), "Pending") << p.verdict;
    }
    remove(cr);
    EXPECT_TRUE(wait_gone(cr, kReact));
  };

  const std::string worker = make_node();
  check("a free worker", worker, true, "");

  // Another maintenance fills the budget of one.
  const std::string other = make_node();
  const std::string other_cr = "maintenance-predicted-other";
  ASSERT_FALSE(create(other_cr, other).empty());
  ASSERT_TRUE(wait_phase(other_cr, {"Running", "Succeeded"}, kReact));
  check("the budget is full", worker, false, "budget");

  // Quorum with another control-plane node under maintenance: its member counts as down, so
  // the quorum gate holds the next control-plane node before the budget does.
  remove(other_cr);
  ASSERT_TRUE(wait_gone(other_cr, kReact));
  check("quorum safe", kControlPlaneNodes[1], true, "");
  const std::string held_cr = "maintenance-predicted-held";
  ASSERT_FALSE(create(held_cr, kControlPlaneNodes[0]).empty());
  ASSERT_TRUE(wait_phase(held_cr, {"Running", "Succeeded"}, kReact));
  check("quorum with another control-plane node under maintenance", kControlPlaneNodes[1], false,
        "etcd quorum");
  remove(held_cr);
  ASSERT_TRUE(wait_gone(held_cr, kReact));
  ASSERT_TRUE(wait_node_restored(kControlPlaneNodes[0], /*stays_cordoned=*/false, kReact));

  // Node Health Check holds the worker's node lease.
  const std::string now = kube::format_micro_time(kube::wall_now());
  kubectl_.apply(json::serialize(
      json::value{{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", "node-" + worker}, {"namespace", "medik8s-leases"}}},
                  {"spec",
                   {{"holderIdentity", "NodeHealthCheck-predicted"},
                    {"leaseDurationSeconds", 3600},
                    {"acquireTime", now},
                    {"renewTime", now}}}}));
  defer([this, worker] {
    (void)kubectl_.run(
        {"delete", "lease", "-n", "medik8s-leases", "node-" + worker, "--ignore-not-found"});
  });
  check("Node Health Check holds the node lease", worker, false, "node lease");
}

// The JSON lines of `text`, parsed; a line that is no JSON fails the test.
std::vector<json::value> json_lines(const std::string& text) {
  std::vector<json::value> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    boost::system::error_code ec;
    json::value parsed = json::parse(line, ec);
    EXPECT_FALSE(ec) << "not a JSON line: " << line;
    if (!ec) lines.push_back(std::move(parsed));
  }
  return lines;
}

// plan-status --watch follows a plan over one node, drained and soaked for 1 s, until it
// Succeeded: one JSON line per change, the last one Succeeded; on a finished plan it draws the
// view once and exits 0.
TEST_F(CliTest, PlanStatusWatchFollowsAPlanUntilItSucceeds) {
  std::vector<std::string> flags = kOperatorFlags;
  flags.insert(flags.end(), {"--test-hook-plan-poll", "1"});
  start_operator(flags);
  const std::string node = make_node();
  const std::string name = unique_name("cli-plan");
  create_plan(name, {node}, {{"doneWhen", "Soaked"}, {"soakTime", "1s"}});

  const ProcessResult watched =
      cli({"plan-status", name, "--watch", "-o", "json", "--timeout", "120s"});
  ASSERT_EQ(watched.exit_code, 0) << describe(watched);
  EXPECT_EQ(watched.err, "") << describe(watched);
  const std::vector<json::value> lines = json_lines(watched.out);
  ASSERT_FALSE(lines.empty()) << describe(watched);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    json::object before = lines[i - 1].as_object();
    json::object after = lines[i].as_object();
    before.erase("eta");
    after.erase("eta");
    EXPECT_NE(before, after) << "line " << i << " is no change:\n" << watched.out;
  }
  const json::value& last = lines.back();
  EXPECT_EQ(json::value_to<std::string>(last.at("name")), name);
  EXPECT_EQ(last.at("phase"), "Succeeded") << watched.out;
  EXPECT_EQ(last.at("total"), 1);
  EXPECT_EQ(last.at("done"), 1);
  ASSERT_EQ(last.at("nodes").as_array().size(), 1U) << watched.out;
  EXPECT_EQ(json::value_to<std::string>(last.at("nodes").at(0).at("name")), node);
  EXPECT_EQ(last.at("nodes").at(0).at("phase"), "Done");

  // A finished plan: the view once, plain lines in a pipe, exit 0.
  const ProcessResult again = cli({"plan-status", name, "-w"});
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  EXPECT_TRUE(
      again.out.starts_with("MaintenancePlan " + name +
                            ": Succeeded — 1 of 1 done, 0 in progress, 0 waiting, 0 failed\n"
                            "[########################################] 100%\n"))
      << again.out;
  EXPECT_FALSE(contains(again.out, "\033[")) << "escape codes in a pipe: " << again.out;
}

// A plain HTTP server on 127.0.0.1 answering with `handler`: a stand-in API server for the
// answers the real one will not give on demand.
class FakeApiServer {
 public:
  explicit FakeApiServer(std::function<http::Response(const http::Request&)> handler)
      : handler_(std::move(handler)) {
    http::ServerOptions options;
    options.name = "fake-api";
    options.bind_address = "127.0.0.1";
    auto started = http::Server::start(
        io_.executor(), options, [this](http::Request request) -> asio::awaitable<http::Response> {
          co_return handler_(request);
        });
    if (!started) {
      ADD_FAILURE() << "the fake API server did not start: " << started.error().describe();
      return;
    }
    server_ = std::move(*started);
  }
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;
  ~FakeApiServer() {
    if (server_) io_.spawn(server_->stop(std::chrono::milliseconds(1000))).wait();
  }
  [[nodiscard]] std::uint16_t port() const { return server_ ? server_->port() : 0; }

 private:
  std::function<http::Response(const http::Request&)> handler_;
  http::test::IoThread io_;  // before server_: the server is destroyed first
  std::unique_ptr<http::Server> server_;
};

// 404 to everything, as an API server that does not serve the NodeMaintenance API (its CRD not
// installed) answers for that group.
http::Response not_found(const http::Request&) {
  http::Response response;
  response.status = 404;
  response.headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
  response.body = "404 page not found\n";
  return response;
}

// A kubeconfig file written for the test and removed at the end.
class Kubeconfig {
 public:
  // `server` without credentials.
  explicit Kubeconfig(const std::string& server)
      : Kubeconfig(server, "    insecure-skip-tls-verify: true\n", "{}") {}
  // `server` trusted through `cluster_trust` (the cluster's lines after `server:`), its user
  // `user` (a YAML mapping on the lines after `user:`, or "{}").
  Kubeconfig(const std::string& server, const std::string& cluster_trust, const std::string& user)
      : path_(e2e_log_dir() / (unique_name("cli-kubeconfig") + ".yaml")) {
    std::ofstream(path_) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                            "    server: "
                         << server << "\n"
                         << cluster_trust << "users:\n- name: cloud\n  user: " << user
                         << "\ncontexts:\n- name: x\n  context: {cluster: c, user: cloud}\n"
                            "current-context: x\n";
  }
  Kubeconfig(const Kubeconfig&) = delete;
  Kubeconfig& operator=(const Kubeconfig&) = delete;
  ~Kubeconfig() { std::filesystem::remove(path_); }
  [[nodiscard]] std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// A local TCP port nobody listens on: bound, then closed.
int closed_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

// Needs no operator: nothing is created.
class CliErrorTest : public ClusterTest {};

// NodeMaintenances (of tests without an operator, so without finalizers) deleted when the
// test ends, also when an assertion stops it.
struct DeleteAtEnd {
  const Kubectl& kubectl;
  std::vector<std::string> names;
  ~DeleteAtEnd() {
    std::vector<std::string> args{"delete", "nodemaintenance", "--ignore-not-found"};
    args.insert(args.end(), names.begin(), names.end());
    (void)kubectl.run(args);
  }
};

TEST_F(CliErrorTest, BadInputGivesOneLineErrors) {
  install_operator_prerequisites(kubectl_);
  const std::string missing = unique_name("cli-missing");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"start", missing}, 3, "error: node \"" + missing + "\" not found\n"},
      {{"plan", missing}, 3, "error: node \"" + missing + "\" not found\n"},
      {{"status", missing}, 3, "error: NodeMaintenance \"" + missing + "\" not found\n"},
      {{"diagnose", missing}, 3, "error: NodeMaintenance \"" + missing + "\" not found\n"},
      {{"watch", missing}, 3, "error: NodeMaintenance \"" + missing + "\" not found\n"},
      {{"plan-status", missing}, 3, "error: MaintenancePlan \"" + missing + "\" not found\n"},
      {{"plan-status", missing, "--watch"},
       3,
       "error: MaintenancePlan \"" + missing + "\" not found\n"},
      {{"plan-status", missing, "--watch", "-o", "yaml"},
       2,
       "error: unknown output format \"yaml\" (accepted: json)\n"},
      {{"stop", missing},
       3,
       "error: no NodeMaintenance named \"" + missing + "\" or for node \"" + missing + "\"\n"},
      {{"start", "node-worker-01", "--drain-timeout", "1d"},
       2,
       "error: --drain-timeout: invalid duration \"1d\": unknown unit \"d\" (use h, m, s, ms, us "
       "or ns)\n"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = cli(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args.front() << ": " << describe(r);
    EXPECT_EQ(r.err, c.err) << c.args.front() << ": " << describe(r);
  }
  const ProcessResult usage = cli({"start"});
  EXPECT_EQ(usage.exit_code, 2) << describe(usage);
  const ProcessResult help = cli({"--help"});
  EXPECT_EQ(help.exit_code, 0) << describe(help);
  EXPECT_TRUE(contains(help.out, "Exit status:")) << help.out;

  // The API server down.
  const std::string down = "https://127.0.0.1:" + std::to_string(closed_port());
  Kubeconfig down_config(down);
  for (const std::string command : {"list", "status", "plan", "diagnose", "start", "stop"}) {
    std::vector<std::string> args{"--kubeconfig", down_config.path(), command};
    if (command != "list") args.emplace_back("x");
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 4) << command << ": " << describe(r);
    EXPECT_EQ(r.err, "error: cannot reach the API server at " + down + ": connection refused\n")
        << command << ": " << describe(r);
  }

  // The NodeMaintenance API not served.
  FakeApiServer no_api(not_found);
  Kubeconfig no_api_config("http://127.0.0.1:" + std::to_string(no_api.port()));
  for (const std::string command : {"list", "status", "diagnose", "stop"}) {
    std::vector<std::string> args{"--kubeconfig", no_api_config.path(), command};
    if (command != "list") args.emplace_back("x");
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 4) << command << ": " << describe(r);
    EXPECT_EQ(r.err,
              "error: the NodeMaintenance API is not installed in this cluster "
              "(nodemaintenances.nodemaintenance.medik8s.io): apply deploy/crd\n")
        << command << ": " << describe(r);
  }
}

// The local cluster's API server URL and its admin client certificate (.cluster/pki).
std::string cluster_server(const Kubectl& kubectl) {
  return kubectl.must(
      {"config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"});
}
std::string pki_file(const std::string& name) {
  const char* kubeconfig = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
  return (std::filesystem::path(kubeconfig).parent_path() / "pki" / name).string();
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A kubeconfig for the local cluster whose user runs the exec plugin `command`.
class ExecKubeconfig : public Kubeconfig {
 public:
  ExecKubeconfig(const std::string& server, const std::string& command,
                 const std::string& install_hint)
      : Kubeconfig(server, "    certificate-authority: " + pki_file("ca.crt") + "\n",
                   "\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                   "      interactiveMode: Never\n      command: " +
                       command + "\n      installHint: \"" + install_hint + "\"") {}
};

TEST_F(CliErrorTest, ExecPluginNotInstalledIsOneLineWithItsInstallHintExitFour) {
  install_operator_prerequisites(kubectl_);
  ExecKubeconfig config(cluster_server(kubectl_), "nmo-no-such-credential-plugin",
                        "Install it with: apt-get install nmo-auth");
  const ProcessResult r = cli({"--kubeconfig", config.path(), "list"});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_EQ(r.err, "error: kubeconfig " + config.path() +
                       ": users[\"cloud\"]: exec plugin \"nmo-no-such-credential-plugin\" is not "
                       "installed (not found on PATH): Install it with: apt-get install nmo-auth\n")
      << describe(r);
}

TEST_F(CliErrorTest, ExecPluginClientCertificateReachesTheCluster) {
  install_operator_prerequisites(kubectl_);
  // The plugin hands out the cluster's admin certificate (system:masters).
  json::object credential{{"apiVersion", "client.authentication.k8s.io/v1"},
                          {"kind", "ExecCredential"},
                          {"status",
                           {{"clientCertificateData", slurp(pki_file("admin.crt"))},
                            {"clientKeyData", slurp(pki_file("admin.key"))}}}};
  const std::filesystem::path json_file = e2e_log_dir() / (unique_name("cli-cred") + ".json");
  const std::filesystem::path plugin = e2e_log_dir() / (unique_name("cli-plugin") + ".sh");
  std::ofstream(json_file) << json::serialize(credential);
  std::ofstream(plugin) << "#!/bin/sh\ncat " << json_file.string() << "\n";
  std::filesystem::permissions(plugin, std::filesystem::perms::owner_all);
  ExecKubeconfig config(cluster_server(kubectl_), plugin.string(), "");
  const ProcessResult r = cli({"--kubeconfig", config.path(), "list", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "\"kind\": \"NodeMaintenanceList\"")) << describe(r);
  std::filesystem::remove(json_file);
  std::filesystem::remove(plugin);
}

// kubectl's habits: -o name|wide|jsonpath, --no-headers, unknown -o, --as/--as-group, --server,
// --token, --insecure-skip-tls-verify, --request-timeout, and completion.
TEST_F(CliErrorTest, KubectlHabits) {
  install_operator_prerequisites(kubectl_);
  const std::string first = unique_name("cli-habit");
  const std::string second = unique_name("cli-habit");
  for (const auto& [name, node] : {std::pair{first, std::string("node-habit-a")},
                                   std::pair{second, std::string("node-habit-b")}}) {
    kubectl_.apply(
        json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                                     {"kind", "NodeMaintenance"},
                                     {"metadata", {{"name", name}}},
                                     {"spec", {{"nodeName", node}, {"reason", "habits"}}}}));
  }
  const DeleteAtEnd cleanup{kubectl_, {first, second}};

  const ProcessResult names = cli({"list", "-o", "name"});
  ASSERT_EQ(names.exit_code, 0) << describe(names);
  EXPECT_TRUE(contains(names.out, "nodemaintenance.nodemaintenance.medik8s.io/" + first + "\n"))
      << names.out;
  const ProcessResult path = cli(
      {"list", "-o", R"(jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end})"});
  ASSERT_EQ(path.exit_code, 0) << describe(path);
  EXPECT_TRUE(contains(path.out, first + "=node-habit-a\n" + second + "=node-habit-b\n") ||
              contains(path.out, second + "=node-habit-b\n" + first + "=node-habit-a\n"))
      << path.out;
  const ProcessResult one = cli({"status", first, "-o", "jsonpath={.spec.nodeName}"});
  EXPECT_EQ(one.out, "node-habit-a") << describe(one);
  const ProcessResult wide = cli({"list", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << describe(wide);
  EXPECT_TRUE(wide.out.starts_with("NAME ")) << wide.out;
  EXPECT_TRUE(contains(wide.out.substr(0, wide.out.find('\n')), "   REASON")) << wide.out;
  const ProcessResult bare = cli({"list", "--no-headers"});
  ASSERT_EQ(bare.exit_code, 0) << describe(bare);
  EXPECT_FALSE(contains(bare.out, "NAME")) << bare.out;
  EXPECT_TRUE(contains(bare.out, first + " ")) << bare.out;

  // Bad -o and --request-timeout: exit 2, naming what is accepted.
  const ProcessResult xml = cli({"list", "-o", "xml"});
  EXPECT_EQ(xml.exit_code, 2) << describe(xml);
  EXPECT_EQ(xml.err,
            "error: unknown output format \"xml\" (accepted: json, yaml, name, wide, "
            "jsonpath=TEMPLATE)\n");
  const ProcessResult plan_wide = cli({"plan", "node-worker-01", "-o", "wide"});
  EXPECT_EQ(plan_wide.exit_code, 2) << describe(plan_wide);
  EXPECT_EQ(plan_wide.err,
            "error: unknown output format \"wide\" (accepted: json, yaml, jsonpath=TEMPLATE)\n");
  const ProcessResult timeout = cli({"--request-timeout", "soon", "list"});
  EXPECT_EQ(timeout.exit_code, 2) << describe(timeout);
  EXPECT_TRUE(timeout.err.starts_with("error: --request-timeout: invalid duration \"soon\""))
      << describe(timeout);
  const ProcessResult quick = cli({"--request-timeout=20s", "list", "-o", "name"});
  EXPECT_EQ(quick.exit_code, 0) << describe(quick);

  // Impersonation through the API server's own authorization.
  const ProcessResult nobody = cli({"--as", "nobody", "list"});
  EXPECT_EQ(nobody.exit_code, 1) << describe(nobody);
  EXPECT_TRUE(contains(nobody.err, "User \"nobody\" cannot list resource \"nodemaintenances\""))
      << describe(nobody);
  const ProcessResult masters =
      cli({"--as", "nobody", "--as-group", "system:masters", "list", "-o", "name"});
  EXPECT_EQ(masters.exit_code, 0) << describe(masters);

  // --server, --insecure-skip-tls-verify and --token replace a kubeconfig that points elsewhere.
  TestNamespace ns(kubectl_, "cli-token");
  const std::string token(trim(kubectl_.must({"create", "token", "default", "-n", ns.name()})));
  Kubeconfig elsewhere("https://127.0.0.1:" + std::to_string(closed_port()));
  const ProcessResult tokened =
      cli({"--kubeconfig", elsewhere.path(), "--server", cluster_server(kubectl_),
           "--insecure-skip-tls-verify", "--token", token, "list"});
  EXPECT_EQ(tokened.exit_code, 1) << describe(tokened);
  EXPECT_TRUE(
      contains(tokened.err, "User \"system:serviceaccount:" + ns.name() + ":default\" cannot list"))
      << describe(tokened);

  // Completion as kubectl asks for it (kubectl_complete-maintenance <words>).
  const std::string completer =
      (std::filesystem::path(cli_binary()).parent_path() / "kubectl_complete-maintenance").string();
  const ProcessResult subcommands = run_process({completer, "st"});
  EXPECT_EQ(subcommands.exit_code, 0) << describe(subcommands);
  EXPECT_EQ(subcommands.out,
            "start\tcreate a NodeMaintenance for a node\n"
            "stop\tdelete the NodeMaintenance of a node (or by name)\n"
            "status\ta NodeMaintenance's status in human form\n:4\n");
  const ProcessResult formats = run_process({completer, "list", "-o", ""});
  EXPECT_EQ(formats.out, "json\nyaml\nname\nwide\njsonpath=\n:4\n") << describe(formats);
  const ProcessResult flags = run_process({completer, "start", "x", "--wa"});
  EXPECT_TRUE(flags.out.starts_with("--wait\t")) << describe(flags);
  const ProcessResult nodes = run_process({completer, "start", "node-worker-0"});
  EXPECT_TRUE(contains(nodes.out, "node-worker-01\nnode-worker-02\n")) << describe(nodes);
  EXPECT_TRUE(nodes.out.ends_with(":4\n")) << describe(nodes);
  EXPECT_FALSE(contains(nodes.out, "node-master-01")) << describe(nodes);
  const ProcessResult maintenances = run_process({completer, "status", first.substr(0, 9)});
  EXPECT_TRUE(contains(maintenances.out, first + "\tNodeMaintenance of node-habit-a\n"))
      << describe(maintenances);
  const ProcessResult stop_targets = run_process({completer, "stop", "node-habit-"});
  // Oldest maintenance first; these two may share their creation second, so in either order.
  EXPECT_TRUE(
      stop_targets.out ==
          "node-habit-a\tnode under maintenance\nnode-habit-b\tnode under maintenance\n:4\n" ||
      stop_targets.out ==
          "node-habit-b\tnode under maintenance\nnode-habit-a\tnode under maintenance\n:4\n")
      << describe(stop_targets);
  const ProcessResult through_kubeconfig =
      run_process({completer, "--kubeconfig", elsewhere.path(), "status", ""});
  EXPECT_EQ(through_kubeconfig.out, ":4\n") << describe(through_kubeconfig);
  const ProcessResult self = cli({"__complete", "diag"});
  EXPECT_EQ(self.out.substr(0, self.out.find('\t')), "diagnose") << describe(self);
}

// done: refused while the drain has not Succeeded, then the annotation a MaintenancePlan waits
// for, and what gives the node back. No operator runs: the test writes the status itself.
TEST_F(CliErrorTest, DoneMarksASucceededMaintenanceOnly) {
  install_operator_prerequisites(kubectl_);
  const std::string node = unique_name("node-done");
  const std::string name = unique_name("cli-done");
  const std::string planned_node = unique_name("node-done");
  const std::string planned = unique_name("cli-done");
  const DeleteAtEnd cleanup{kubectl_, {name, planned}};
  auto create = [&](const std::string& nm, const std::string& on, json::object labels) {
    kubectl_.apply(
        json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                                     {"kind", "NodeMaintenance"},
                                     {"metadata", {{"name", nm}, {"labels", std::move(labels)}}},
                                     {"spec", {{"nodeName", on}}}}));
  };
  auto set_phase = [&](const std::string& nm, const std::string& phase) {
    kubectl_.must({"patch", "nodemaintenance", nm, "--subresource=status", "--type=merge", "-p",
                   json::serialize(json::object{{"status", {{"phase", phase}}}})});
  };
  const std::string refused =
      " not Succeeded: its drain has not finished, so the work cannot be "
      "done yet\n";

  const ProcessResult none = cli({"done", node});
  EXPECT_EQ(none.exit_code, 3) << describe(none);
  EXPECT_EQ(none.err, "error: no NodeMaintenance for node " + node + "\n") << describe(none);

  create(name, node, {});
  const ProcessResult fresh = cli({"done", node});
  EXPECT_EQ(fresh.exit_code, 1) << describe(fresh);
  EXPECT_EQ(fresh.err, "error: NodeMaintenance " + name + " on node " + node + " is new," + refused)
      << describe(fresh);
  set_phase(name, "Running");
  const ProcessResult running = cli({"done", node});
  EXPECT_EQ(running.exit_code, 1) << describe(running);
  EXPECT_EQ(running.err,
            "error: NodeMaintenance " + name + " on node " + node + " is Running," + refused)
      << describe(running);
  auto unmarked = kubectl_.get_json({"nodemaintenance", name});
  ASSERT_TRUE(unmarked);
  EXPECT_FALSE(maintenance_of(*unmarked).meta.annotations.contains(op::kDoneAnnotation));

  set_phase(name, "Succeeded");
  const kube::Time before = kube::wall_now() - std::chrono::seconds(1);  // written in seconds
  const ProcessResult marked = cli({"done", node});
  const kube::Time after = kube::wall_now();
  ASSERT_EQ(marked.exit_code, 0) << describe(marked);
  EXPECT_EQ(marked.out,
            "nodemaintenance.nodemaintenance.medik8s.io/" + name + " marked done (node " + node +
                "); delete it to give the node back: kubectl maintenance stop " + node + "\n")
      << describe(marked);
  auto nm = kubectl_.get_json({"nodemaintenance", name});
  ASSERT_TRUE(nm);
  // Kept in a variable: the annotation's pointer points into it.
  const op::NodeMaintenance marked_maintenance = maintenance_of(*nm);
  const std::string* done_at = marked_maintenance.meta.annotations.find(op::kDoneAnnotation);
  ASSERT_NE(done_at, nullptr) << json::serialize(*nm);
  const auto when = kube::parse_time(*done_at);
  ASSERT_TRUE(when.has_value()) << *done_at;
  EXPECT_TRUE(*when >= before && *when <= after) << *done_at;

  // A maintenance of a MaintenancePlan (its label): the plan gives the node back.
  create(planned, planned_node, {{std::string(op::kPlanLabel), "cli-plan"}});
  set_phase(planned, "Succeeded");
  const ProcessResult by_plan = cli({"done", planned_node});
  ASSERT_EQ(by_plan.exit_code, 0) << describe(by_plan);
  EXPECT_EQ(by_plan.out, "nodemaintenance.nodemaintenance.medik8s.io/" + planned +
                             " marked done (node " + planned_node +
                             "); its MaintenancePlan gives the node back\n")
      << describe(by_plan);
}

// An API server for one NodeMaintenance whose watch streams are scripted, for the faults the
// real one will not produce on demand: an expired resourceVersion (410) at the first watch, a
// watch the server ends, and an operator whose progress goes back (a recount).
class ScriptedWatchServer {
 public:
  [[nodiscard]] std::uint16_t port() const { return server_.port(); }

  // "get <rv answered>" and "watch from <rv>" for each request, in order.
  [[nodiscard]] std::vector<std::string> requests() const {
    const std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  static json::value maintenance(const std::string& version, const std::string& phase, int progress,
                                 int evicted) {
    return json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                        {"kind", "NodeMaintenance"},
                        {"metadata",
                         {{"name", "scripted"},
                          {"uid", "u-1"},
                          {"resourceVersion", version},
                          {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
                        {"spec", {{"nodeName", "node-scripted"}}},
                        {"status",
                         {{"phase", phase},
                          {"drainProgress", progress},
                          {"evictionPods", evicted},
                          {"totalPods", 4}}}};
  }
  static std::string event(const std::string& type, const json::value& object) {
    return json::serialize(json::object{{"type", type}, {"object", object}}) + "\n";
  }

  http::Response answer(const http::Request& request) {
    http::Response response;
    response.status = 200;
    response.headers.emplace_back("Content-Type", "application/json");
    const std::lock_guard lock(mu_);
    const std::string& target = request.target;
    if (target.find("watch=true") == std::string::npos) {
      // The object itself: first at version 10, read again after the 410 at version 20.
      const bool again = gets_++ > 0;
      requests_.push_back(std::string("get ") + (again ? "20" : "10"));
      response.body = json::serialize(again ? maintenance("20", "Running", 50, 2)
                                            : maintenance("10", "Running", 25, 1));
      return response;
    }
    const std::size_t at = target.find("resourceVersion=");
    const std::string from =
        at == std::string::npos ? "" : target.substr(at + 16, target.find('&', at) - at - 16);
    requests_.push_back("watch from " + from);
    if (from == "10") {
      response.body =
          event("ERROR", json::object{{"apiVersion", "v1"},
                                      {"kind", "Status"},
                                      {"status", "Failure"},
                                      {"reason", "Expired"},
                                      {"code", 410},
                                      {"message", "too old resource version: 10 (15)"}});
    } else if (from == "20") {
      // 75 %, then a recount to 60 % that must not move the bar back; then the server ends the
      // watch.
      response.body = event("MODIFIED", maintenance("21", "Running", 75, 3)) +
                      event("MODIFIED", maintenance("22", "Running", 60, 2));
    } else {
      response.body = event("MODIFIED", maintenance("23", "Succeeded", 100, 4));
    }
    return response;
  }

  mutable std::mutex mu_;
  int gets_ = 0;                       // guarded by mu_
  std::vector<std::string> requests_;  // guarded by mu_
  FakeApiServer server_{[this](const http::Request& request) { return answer(request); }};
};

TEST_F(CliErrorTest, WatchResumesAfterAnExpiredVersionAndAnEndedStreamAndNeverGoesBack) {
  ScriptedWatchServer server;
  Kubeconfig config("http://127.0.0.1:" + std::to_string(server.port()));
  const ProcessResult watched = cli({"--kubeconfig", config.path(), "watch", "scripted"});
  EXPECT_EQ(watched.exit_code, 0) << describe(watched);
  EXPECT_EQ(server.requests(), (std::vector<std::string>{"get 10", "watch from 10", "get 20",
                                                         "watch from 20", "watch from 22"}));
  std::vector<std::string> percents;
  std::istringstream lines(watched.out);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t bar = line.find("]  ");
    if (bar != std::string::npos) percents.push_back(line.substr(bar + 3, 4));
  }
  EXPECT_EQ(percents, (std::vector<std::string>{" 25%", " 50%", " 75%", "100%"})) << watched.out;
}

TEST_F(CliErrorTest, CtrlCInAWatchRestoresTheTerminal) {
  install_operator_prerequisites(kubectl_);
  const std::string name = unique_name("cli-ctrl-c");
  kubectl_.apply(json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                                              {"kind", "NodeMaintenance"},
                                              {"metadata", {{"name", name}}},
                                              {"spec", {{"nodeName", "node-ctrl-c"}}}}));
  const DeleteAtEnd cleanup{kubectl_, {name}};
  // No operator runs: the maintenance stays new and watch waits on its stream.
  Background watch(std::vector<std::string>{cli_binary(), "watch", name});
  ASSERT_TRUE(watch.started());
  ASSERT_TRUE(wait_until(
      "the first drawing", kReact,
      [&] { return contains(watch.output(), name + " (node-ctrl-c)  New"); },
      [&] { return watch.output(); }));
  EXPECT_TRUE(contains(watch.output(), "\033[?25l")) << "the cursor is not hidden";
  watch.type("\x03");
  ASSERT_TRUE(wait_until(
      "watch exits", kReact, [&] { return watch.finished(); }, [&] { return watch.output(); }));
  EXPECT_EQ(watch.exit_code(), 130) << watch.output();
  const std::string drawn = watch.output();
  const std::size_t shown = drawn.rfind("\033[?25h");
  ASSERT_NE(shown, std::string::npos) << "the cursor is never shown again";
  EXPECT_GT(shown, drawn.rfind("\033[?25l")) << "the cursor stays hidden";
}

// A MaintenancePlan (of a test without an operator, so without its finalizer) deleted when the
// test ends, also when an assertion stops it.
struct DeletePlanAtEnd {
  const Kubectl& kubectl;
  std::string name;
  ~DeletePlanAtEnd() {
    (void)kubectl.run({"delete", "maintenanceplan", name, "--ignore-not-found"});
  }
};

// plan-status --watch on a plan no operator moves: it waits, drawing in a terminal, until the
// plan is deleted (exit 3, the cursor shown again), or until --timeout passes (exit 5).
TEST_F(CliErrorTest, PlanStatusWatchEndsWhenThePlanIsDeletedOrTheTimeoutPasses) {
  install_operator_prerequisites(kubectl_);
  const std::string name = unique_name("cli-plan-gone");
  const DeletePlanAtEnd cleanup{kubectl_, name};
  kubectl_.apply(
      json::serialize(json::object{{"apiVersion", op::kPlanApiVersion},
                                   {"kind", op::kPlanKind},
                                   {"metadata", {{"name", name}}},
                                   {"spec", {{"nodes", json::array{"node-plan-gone"}}}}}));

  const ProcessResult timed_out = cli({"plan-status", name, "--watch", "--timeout", "1s"});
  EXPECT_EQ(timed_out.exit_code, 5) << describe(timed_out);
  EXPECT_EQ(timed_out.err,
            "error: timed out after 1s waiting for MaintenancePlan \"" + name + "\" (phase New)\n")
      << describe(timed_out);
  EXPECT_EQ(timed_out.out,
            "MaintenancePlan " + name + ": not started yet (is the operator running?)\n\n")
      << describe(timed_out);

  Background watch(std::vector<std::string>{cli_binary(), "plan-status", name, "--watch"});
  ASSERT_TRUE(watch.started());
  ASSERT_TRUE(wait_until(
      "the first drawing", kReact,
      [&] { return contains(watch.output(), "MaintenancePlan " + name + ": not started yet"); },
      [&] { return watch.output(); }));
  EXPECT_TRUE(contains(watch.output(), "\033[?25l")) << "the cursor is not hidden";
  kubectl_.must({"delete", "maintenanceplan", name});
  ASSERT_TRUE(wait_until(
      "plan-status --watch exits", kReact, [&] { return watch.finished(); },
      [&] { return watch.output(); }));
  EXPECT_EQ(watch.exit_code(), 3) << watch.output();
  const std::string drawn = watch.output();
  EXPECT_TRUE(contains(drawn, "error: MaintenancePlan \"" + name + "\" was deleted")) << drawn;
  const std::size_t shown = drawn.rfind("\033[?25h");
  ASSERT_NE(shown, std::string::npos) << "the cursor is never shown again";
  EXPECT_GT(shown, drawn.rfind("\033[?25l")) << "the cursor stays hidden";
}

}  // namespace
}  // namespace nmo::e2e
