// MaintenancePlans against the real local cluster (docs/design.md §10): the story's 22 workers
// taken out by one plan within maxParallel and maxUnavailable (a node cordoned by hand counts),
// through an operator killed mid-plan, with a PodDisruptionBudget the health gate waits for; a
// plan outside its window that resumes at the right node when the window opens, and whose
// deletion stops the drain in progress and leaves the drained node to the admin; a health gate
// that never passes pausing the plan with its reason; a spec the controller cannot act on; a plan
// made with `kubectl maintenance rollout`; `kubectl maintenance diagnose` on a plan waiting for its
// window, drained and draining, and paused by its gate; a node given back once it rebooted
// (doneWhen NodeRebooted); a drain held while the window is closed (onWindowClose Pause); and a
// health gate that holds on a Warning the operator reported about the node, and on a VM that ran on
// it and is migrating again.
//
// The tests play the technician: they mark a node's work done with `kubectl maintenance done`
// (the plugin built beside the operator), make a node NotReady, reboot one (they play its kubelet:
// kwok leaves a node labelled test.node-maintenance/not-ready alone). Each test has kwok nodes of
// its own (deleted at the end).
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/api/time.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/kubevirt.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/subprocess.h"

#ifndef NMO_CLI_BIN
#error "NMO_CLI_BIN must be defined by the build (test/CMakeLists.txt)"
#endif

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kPlanLabel = "nodemaintenance.medik8s.io/plan";

class MaintenancePlanTest : public OperatorFixture {
 protected:
  OperatorProcess& start() {
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(), {"--test-hook-plan-poll", "1"});
    return start_operator(flags);
  }

  // Nodes of this test, labelled `fleet=<id>` so a plan can select them; sorted by name (the
  // order of a plan by selector).
  std::vector<std::string> fleet(const std::string& prefix, std::size_t count) {
    fleet_id_ = unique_name(prefix);
    std::vector<std::string> nodes = fresh_nodes(prefix, count);
    std::sort(nodes.begin(), nodes.end());
    std::vector<std::string> args{"label", "node"};
    args.insert(args.end(), nodes.begin(), nodes.end());
    args.push_back("fleet=" + fleet_id_);
    kubectl_.must(args);
    return nodes;
  }

  // At the end of the test: deletes the plan `name`, and its NodeMaintenances with it.
  void delete_plan_at_end(const std::string& name) {
    defer([this, name] {
      (void)kubectl_.run({"delete", "maintenanceplan", name, "--ignore-not-found", "--wait=true",
                          "--timeout=60s"});
      (void)kubectl_.run({"delete", "nodemaintenance", "-l", std::string(kPlanLabel) + "=" + name,
                          "--ignore-not-found", "--wait=true", "--timeout=60s"});
    });
  }

  // Creates the plan (deleted at the end, and its NodeMaintenances with it).
  void create_plan(const std::string& name, json::object spec) {
    delete_plan_at_end(name);
    kubectl_.apply(
        json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1alpha1"},
                                     {"kind", "MaintenancePlan"},
                                     {"metadata", {{"name", name}}},
                                     {"spec", std::move(spec)}}));
  }

  json::object selector() const { return {{"matchLabels", {{"fleet", fleet_id_}}}}; }

  std::optional<op::MaintenancePlan> plan(const std::string& name) {
    auto object = kubectl_.get_json({"maintenanceplan", name});
    if (!object) return std::nullopt;
    auto decoded = op::decode_maintenance_plan(*object);
    EXPECT_TRUE(decoded.has_value()) << decoded.error().message;
    if (!decoded.has_value()) return std::nullopt;
    return std::move(decoded).value();
  }

  // Waits until `check` holds for the plan; returns it as last seen.
  std::optional<op::MaintenancePlan> wait_plan(
      const std::string& name, const std::string& what, std::chrono::milliseconds timeout,
      const std::function<bool(const op::MaintenancePlan&)>& check) {
    std::optional<op::MaintenancePlan> seen;
    const bool ok = wait_until(
        "plan " + name + ": " + what, timeout,
        [&] {
          seen = plan(name);
          return seen && check(*seen);
        },
        [&] { return seen ? describe(*seen) : std::string("no plan"); });
    if (!ok) return std::nullopt;
    return seen;
  }

  static std::string describe(const op::MaintenancePlan& plan) {
    std::string out = "phase " +
                      (plan.status.phase ? std::string(op::to_string(*plan.status.phase)) : "-") +
                      ", message \"" + plan.status.message + "\", nodes:";
    for (const op::PlanNodeStatus& node : plan.status.nodes) {
      out += " " + node.name + "=" + std::string(op::to_string(node.phase));
    }
    return out;
  }

  static const op::PlanNodeStatus* entry(const op::MaintenancePlan& plan, const std::string& node) {
    for (const op::PlanNodeStatus& entry : plan.status.nodes) {
      if (entry.name == node) return &entry;
    }
    return nullptr;
  }

  static bool node_phase_is(const op::MaintenancePlan& plan, const std::string& node,
                            op::PlanNodePhase phase) {
    const op::PlanNodeStatus* e = entry(plan, node);
    return e != nullptr && e->phase == phase;
  }

  // The NodeMaintenances of the plan (by its label): name -> node.
  std::map<std::string, std::string> plan_maintenances(const std::string& name) {
    std::map<std::string, std::string> out;
    auto list = kubectl_.get_json({"nodemaintenances", "-l", std::string(kPlanLabel) + "=" + name});
    if (!list) return out;
    for (const json::value& item : list->at("items").as_array()) {
      boost::system::error_code ec;
      const json::value* node = item.find_pointer("/spec/nodeName", ec);
      out[name_of(item)] =
          node != nullptr && node->is_string() ? std::string(node->get_string()) : "";
    }
    return out;
  }

  // The technician's word, through the plugin as an admin types it.
  void mark_done(const std::string& node) {
    const ProcessResult done = run_process({NMO_CLI_BIN, "done", node});
    EXPECT_EQ(done.exit_code, 0) << done.err;
    EXPECT_NE(done.out.find("its MaintenancePlan gives the node back"), std::string::npos)
        << done.out;
  }

  // The verdict line of `kubectl maintenance diagnose TARGET` (exit 0 expected).
  std::string verdict_of(const std::string& target) {
    const ProcessResult diagnosed = run_process({NMO_CLI_BIN, "diagnose", target});
    EXPECT_EQ(diagnosed.exit_code, 0) << diagnosed.err;
    const std::size_t at = diagnosed.out.rfind("\nVerdict: ");
    if (at == std::string::npos) return "no verdict in: " + diagnosed.out;
    std::string verdict = diagnosed.out.substr(at + 10);
    while (!verdict.empty() && verdict.back() == '\n') verdict.pop_back();
    return verdict;
  }

  // The plan's Events with `reason`.
  std::vector<Event> plan_events(const std::string& name, const std::string& reason) {
    std::vector<Event> out;
    for (Event& event : events_matching(kubectl_,
                                        "involvedObject.kind=MaintenancePlan,"
                                        "involvedObject.name=" +
                                            name)) {
      if (event.reason == reason) out.push_back(std::move(event));
    }
    return out;
  }

  // Plays the node's kubelet from now on (kwok leaves a node with kNotReadyLabel alone): reports
  // it Ready or not, with boot ID `boot_id`, heartbeat now.
  void report_kubelet(const std::string& node, bool ready, const std::string& boot_id) {
    kubectl_.must({"label", "node", node, std::string(kNotReadyLabel) + "=true", "--overwrite"});
    const std::string now = kube::format_time(kube::wall_now());
    const json::object status{
        {"status",
         {{"nodeInfo", {{"bootID", boot_id}}},
          {"conditions",
           json::array{json::object{{"type", "Ready"},
                                    {"status", ready ? "True" : "False"},
                                    {"reason", ready ? "KubeletReady" : "KubeletNotReady"},
                                    {"message", "reported by the test"},
                                    {"lastHeartbeatTime", now},
                                    {"lastTransitionTime", now}}}}}}};
    kubectl_.must({"patch", "node", node, "--subresource=status", "-p", json::serialize(status)});
  }

  // The NodeMaintenance `name` as decoded, or std::nullopt.
  std::optional<op::NodeMaintenance> maintenance_of(const std::string& name) {
    auto object = get_node_maintenance(name);
    if (!object) return std::nullopt;
    auto decoded = op::decode_node_maintenance(*object);
    if (!decoded.has_value()) return std::nullopt;
    return std::move(decoded).value();
  }

  std::string fleet_id_;
};

// ---- 1. The story's 22 workers ---------------------------------------------------------------

TEST_F(MaintenancePlanTest, TheStorysTwentyTwoWorkersRollOutWithinTheLimitsThroughARestart) {
  const std::vector<std::string> nodes = fleet("fleet22", 22);
  const std::string name = unique_name("memory-upgrade");
  // A web tier on the fleet, protected by a PDB: the health gate waits until it is whole again.
  TestNamespace ns(kubectl_, "fleet-web");
  json::value web = json::parse(deployment_manifest(ns.name(), "web", 3, "web"));
  web.at("spec").at("template").at("spec").as_object()["nodeSelector"] =
      json::object{{"fleet", fleet_id_}};
  kubectl_.apply(json::serialize(web));
  ASSERT_TRUE(wait_running(ns.name(), "app=web", 3));
  kubectl_.apply(pdb_manifest(ns.name(), "web-pdb", 2, "web"));
  ASSERT_TRUE(wait_pdb(ns.name(), "web-pdb", 3, 1));

  // The last node is cordoned by someone else: it counts against maxUnavailable.
  const std::string cordoned = nodes.back();
  kubectl_.must({"cordon", cordoned});

  OperatorProcess* operator_process = &start();
  create_plan(name, {{"nodeSelector", selector()},
                     {"reason", "Hardware memory upgrade"},
                     {"maxParallel", 3},
                     {"maxUnavailable", 3},
                     {"doneWhen", "Soaked"},
                     {"soakTime", "1s"},
                     {"healthGateTimeout", "5m"}});

  // Watch the limits on every look until the plan is done; restart the operator a third of the
  // way in, and give the hand-cordoned node back half-way.
  std::size_t most_in_progress = 0;
  std::size_t most_in_progress_while_cordoned = 0;
  bool restarted = false;
  bool uncordoned = false;
  std::optional<op::MaintenancePlan> seen;
  const bool finished = wait_until(
      "the plan to finish", 300s,
      [&] {
        const std::map<std::string, std::string> live = plan_maintenances(name);
        most_in_progress = std::max(most_in_progress, live.size());
        if (!uncordoned) {
          most_in_progress_while_cordoned = std::max(most_in_progress_while_cordoned, live.size());
        }
        seen = plan(name);
        if (!seen) return false;
        if (!restarted && seen->status.done >= 7) {
          operator_process->kill();
          operator_process = &start();
          restarted = true;
        }
        if (!uncordoned && seen->status.done >= 11) {
          kubectl_.must({"uncordon", cordoned});
          uncordoned = true;
        }
        return seen->status.phase == op::PlanPhase::kSucceeded;
      },
      [&] { return seen ? describe(*seen) : std::string("no plan"); });
  ASSERT_TRUE(finished);
  EXPECT_TRUE(restarted);
  EXPECT_LE(most_in_progress, 3U) << "maxParallel 3";
  EXPECT_LE(most_in_progress_while_cordoned, 2U)
      << "maxUnavailable 3 with one node cordoned by hand leaves room for 2";
  EXPECT_GE(most_in_progress, 2U) << "the plan never ran nodes in parallel";

  EXPECT_EQ(seen->status.done, 22);
  EXPECT_EQ(seen->status.failed, 0);
  ASSERT_EQ(seen->status.nodes.size(), 22U);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(seen->status.nodes[i].name, nodes[i]) << "plan order is by name";
    EXPECT_EQ(seen->status.nodes[i].phase, op::PlanNodePhase::kDone);
    EXPECT_TRUE(seen->status.nodes[i].finished_at.has_value());
    auto node = get_node(nodes[i]);
    ASSERT_TRUE(node);
    EXPECT_FALSE(unschedulable(*node)) << describe_node(*node);
    EXPECT_FALSE(drain_tainted(*node)) << describe_node(*node);
  }
  EXPECT_TRUE(plan_maintenances(name).empty());
  // Neither repeated nor skipped across the restart: each node started exactly once.
  std::map<std::string, int> started;
  for (const Event& event : plan_events(name, "NodeStarted")) {
    for (const std::string& node : nodes) {
      if (event.message.rfind("node " + node + " (", 0) == 0)
        started[node] += static_cast<int>(event.count);
    }
  }
  for (const std::string& node : nodes) EXPECT_EQ(started[node], 1) << node;
  EXPECT_EQ(plan_events(name, "PlanSucceeded").size(), 1U);
  // The web tier is whole at the end, as the gate required after each node.
  EXPECT_TRUE(wait_pdb(ns.name(), "web-pdb", 3, 1));
}

// ---- 2. Windows, pause, deletion ---------------------------------------------------------------

TEST_F(MaintenancePlanTest, OutsideItsWindowNothingStartsAndDeletionLeavesNoHalfDoneNode) {
  const std::vector<std::string> nodes = fleet("window", 3);
  const std::string name = unique_name("window-plan");
  // A pod the drain of the second node cannot evict: its NodeMaintenance stays Running.
  TestNamespace ns(kubectl_, "window");
  kubectl_.apply(pod_manifest(ns.name(), "guarded", nodes[1]));
  ASSERT_TRUE(wait_running(ns.name(), "app=guarded", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "guarded-pdb", 1, "guarded"));
  ASSERT_TRUE(wait_pdb(ns.name(), "guarded-pdb", 1, 0));

  // Two days from now (UTC), all day: the window is closed now, whatever the hour.
  const auto today =
      std::chrono::weekday{std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now())};
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  const std::string later = kDays[(today + std::chrono::days{2}).c_encoding()];
  start();
  create_plan(name, {{"nodeSelector", selector()},
                     {"maxParallel", 2},
                     {"windows", json::array{json::object{{"days", json::array{later.c_str()}},
                                                          {"start", "00:00"},
                                                          {"end", "00:00"}}}}});
  auto waiting = wait_plan(name, "waiting for its window", kReact, [](const auto& p) {
    return p.status.phase == op::PlanPhase::kWaitingForWindow;
  });
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->status.next_window_text, later + " 00:00 UTC");
  EXPECT_EQ(waiting->status.message, "waiting for window " + later + " 00:00 UTC");
  EXPECT_TRUE(waiting->status.next_window.has_value());
  EXPECT_TRUE(plan_maintenances(name).empty());
  EXPECT_EQ(plan_events(name, "WaitingForWindow").size(), 1U);
  EXPECT_EQ(verdict_of(name), "waiting for window " + later + " 00:00 UTC (" +
                                  kube::format_time(*waiting->status.next_window) +
                                  "): no node starts before then");

  // The admin opens the window (every day, all day): the first two nodes start, in order.
  kubectl_.must({"patch", "maintenanceplan", name, "--type=merge", "-p",
                 R"({"spec":{"windows":[{"start":"00:00","end":"00:00"}]}})"});
  auto running = wait_plan(name, "first node drained, second draining", 60s, [&](const auto& p) {
    return node_phase_is(p, nodes[0], op::PlanNodePhase::kInMaintenance) &&
           node_phase_is(p, nodes[1], op::PlanNodePhase::kDraining);
  });
  ASSERT_TRUE(running);
  EXPECT_TRUE(node_phase_is(*running, nodes[2], op::PlanNodePhase::kWaiting));
  EXPECT_EQ(entry(*running, nodes[0])->message,
            "drained; waiting for `kubectl maintenance done " + nodes[0] + "`");
  const std::string first = entry(*running, nodes[0])->maintenance;
  const std::string second = entry(*running, nodes[1])->maintenance;
  EXPECT_EQ(first, name + "-" + nodes[0]);
  // `diagnose` on the plan (a bare name that is no NodeMaintenance): the technician's turn for
  // the first node, and what holds the second node's NodeMaintenance, from its own diagnosis:
  // the operator's budget (--max-parallel-maintenances 1) is below the plan's maxParallel.
  std::string diagnosis;
  EXPECT_TRUE(wait_until(
      "diagnose says what holds the second node", kReact,
      [&] {
        const ProcessResult diagnosed = run_process({NMO_CLI_BIN, "diagnose", name});
        diagnosis = diagnosed.out + diagnosed.err;
        return diagnosed.exit_code == 0 &&
               diagnosis.find("Drains in progress:\n  " + nodes[1] +
                              ": waiting for a maintenance slot (1 in use: " + first) !=
                   std::string::npos;
      },
      [&] { return diagnosis; }));
  EXPECT_NE(diagnosis.find("\nVerdict: " + nodes[0] +
                           " is drained and waits for the work on it: drained; waiting for "
                           "`kubectl maintenance done " +
                           nodes[0] + "`\n"),
            std::string::npos)
      << diagnosis;

  // Deleting the plan: the drain in progress stops and its node comes back; the drained node
  // stays drained under a NodeMaintenance of its own, for the admin to delete after the work.
  kubectl_.must({"delete", "maintenanceplan", name, "--wait=true", "--timeout=60s"});
  EXPECT_TRUE(wait_gone(second, kReact));
  EXPECT_TRUE(wait_node_restored(nodes[1], /*stays_cordoned=*/false, kReact));
  auto kept = get_node_maintenance(first);
  ASSERT_TRUE(kept) << "the drained node's maintenance was deleted with the plan";
  EXPECT_EQ(label(*kept, kPlanLabel), "");
  EXPECT_FALSE(kept->at("metadata").as_object().contains("ownerReferences"));
  auto drained = get_node(nodes[0]);
  ASSERT_TRUE(drained);
  EXPECT_TRUE(unschedulable(*drained)) << describe_node(*drained);
  auto untouched = get_node(nodes[2]);
  ASSERT_TRUE(untouched);
  EXPECT_FALSE(unschedulable(*untouched)) << describe_node(*untouched);
  const std::vector<Event> deleted = plan_events(name, "PlanDeleted");
  ASSERT_EQ(deleted.size(), 1U);
  EXPECT_EQ(deleted[0].message, "plan deleted; drain stopped and node given back: " + nodes[1] +
                                    "; left drained, delete when the work is done: "
                                    "NodeMaintenance " +
                                    first);
  // The admin ends the drained node's maintenance the usual way.
  remove(first);
  EXPECT_TRUE(wait_node_restored(nodes[0], /*stays_cordoned=*/false, kReact));
}

// ---- 3. The health gate ---------------------------------------------------------------------

TEST_F(MaintenancePlanTest, AHealthGateThatNeverPassesPausesThePlanWithItsReason) {
  const std::vector<std::string> nodes = fleet("gate", 2);
  const std::string name = unique_name("gate-plan");
  start();
  create_plan(name, {{"nodes", json::array{nodes[0].c_str(), nodes[1].c_str()}},
                     {"healthGateTimeout", "3s"}});
  auto drained = wait_plan(name, "first node drained", 60s, [&](const auto& p) {
    return node_phase_is(p, nodes[0], op::PlanNodePhase::kInMaintenance);
  });
  ASSERT_TRUE(drained);
  // The node does not come back healthy from its repair.
  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, nodes[0], 30s));
  mark_done(nodes[0]);
  auto paused = wait_plan(name, "paused by its health gate", 60s, [](const auto& p) {
    return p.status.phase == op::PlanPhase::kPaused && p.spec.paused;
  });
  ASSERT_TRUE(paused);
  EXPECT_TRUE(node_phase_is(*paused, nodes[0], op::PlanNodePhase::kHealthCheck));
  EXPECT_EQ(paused->status.message, "paused (spec.paused); " + nodes[0] + ": health gate: node " +
                                        nodes[0] + " is not Ready");
  EXPECT_TRUE(node_phase_is(*paused, nodes[1], op::PlanNodePhase::kWaiting));
  EXPECT_TRUE(plan_maintenances(name).empty()) << "the second node must not start";
  EXPECT_EQ(verdict_of("mp/" + name),
            "paused by its health gate: " + nodes[0] + ": health gate: node " + nodes[0] +
                " is not Ready; once the node is healthy, resume: kubectl patch mp " + name +
                R"( --type=merge -p '{"spec":{"paused":false}}')");
  const std::vector<Event> timeouts = plan_events(name, "HealthGateTimeout");
  ASSERT_EQ(timeouts.size(), 1U);
  EXPECT_EQ(timeouts[0].type, "Warning");
  EXPECT_EQ(timeouts[0].message, "node " + nodes[0] +
                                     " is not healthy 3s after it was given back (node " +
                                     nodes[0] + " is not Ready); the plan is paused");

  // Repaired: the admin resumes, the gate passes, the second node goes.
  kubectl_.must({"label", "node", nodes[0], std::string(kNotReadyLabel) + "-"});
  ASSERT_TRUE(wait_node_ready(nodes[0]));
  kubectl_.must(
      {"patch", "maintenanceplan", name, "--type=merge", "-p", R"({"spec":{"paused":false}})"});
  auto second = wait_plan(name, "second node drained", 60s, [&](const auto& p) {
    return node_phase_is(p, nodes[0], op::PlanNodePhase::kDone) &&
           node_phase_is(p, nodes[1], op::PlanNodePhase::kInMaintenance);
  });
  ASSERT_TRUE(second);
  mark_done(nodes[1]);
  EXPECT_TRUE(wait_plan(name, "Succeeded", 60s,
                        [](const auto& p) { return p.status.phase == op::PlanPhase::kSucceeded; }));
}

// ---- 4. A plan the schema accepts but the controller cannot act on -----------------------------

TEST_F(MaintenancePlanTest, AnUnknownTimeZoneFailsThePlanAndTheSchemaRefusesTheRest) {
  const std::vector<std::string> nodes = fleet("tz", 1);
  const std::string name = unique_name("tz-plan");
  start();
  create_plan(name, {{"nodes", json::array{nodes[0].c_str()}}, {"timeZone", "Asia/Taipeii"}});
  auto failed = wait_plan(name, "Failed", kReact,
                          [](const auto& p) { return p.status.phase == op::PlanPhase::kFailed; });
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status.message, "spec.timeZone: unknown time zone \"Asia/Taipeii\"");
  EXPECT_TRUE(plan_maintenances(name).empty());
  const std::vector<Event> invalid = plan_events(name, "InvalidPlan");
  ASSERT_EQ(invalid.size(), 1U);
  EXPECT_EQ(invalid[0].type, "Warning");

  // Both nodes and a selector: refused by the API server, with the schema's message.
  const ProcessResult both =
      kubectl_.run({"apply", "-f", "-"},
                   json::serialize(json::object{
                       {"apiVersion", "nodemaintenance.medik8s.io/v1alpha1"},
                       {"kind", "MaintenancePlan"},
                       {"metadata", {{"name", unique_name("both")}}},
                       {"spec", {{"nodes", json::array{"a"}}, {"nodeSelector", selector()}}}}));
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("exactly one of nodes and nodeSelector must be set"), std::string::npos)
      << both.err;
}

// ---- 5. A plan from the command line ------------------------------------------------------------

TEST_F(MaintenancePlanTest, TheRolloutCommandCreatesAPlanThatRunsToTheEnd) {
  const std::vector<std::string> nodes = fleet("rollout", 2);
  const std::string name = unique_name("rollout-plan");
  start();
  delete_plan_at_end(name);
  const std::vector<std::string> command{NMO_CLI_BIN,
                                         "rollout",
                                         name,
                                         "--selector",
                                         "fleet=" + fleet_id_,
                                         "--window",
                                         "Mon-Sun 00:00-00:00",
                                         "--time-zone",
                                         "Asia/Taipei",
                                         "--max-parallel",
                                         "2",
                                         "--reason",
                                         "memory upgrade",
                                         "--done-when",
                                         "Soaked",
                                         "--soak-time",
                                         "1s"};
  const std::string described =
      "nodes by selector fleet=" + fleet_id_ +
      ", by name, 2 at a time, window Mon,Tue,Wed,Thu,Fri,Sat,Sun 00:00-00:00 (Asia/Taipei), "
      "each node done 1s after its drain\n";

  // A typo in a flag: refused before anything is sent.
  std::vector<std::string> typo = command;
  typo[6] = "Mon-Sun 00:00";
  const ProcessResult refused = run_process(typo);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_EQ(refused.err,
            "error: --window \"Mon-Sun 00:00\": expected [DAYS ]HH:MM-HH:MM, e.g. \"Sat,Sun "
            "22:00-06:00\"\n");

  // --dry-run: the API server checks it, nothing is created.
  std::vector<std::string> dry = command;
  dry.emplace_back("--dry-run");
  const ProcessResult checked = run_process(dry);
  EXPECT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_EQ(checked.out,
            "maintenanceplan/" + name +
                " accepted by the API server (dry run, nothing created): " + described);
  EXPECT_FALSE(plan(name).has_value()) << "--dry-run created the plan";

  const ProcessResult created = run_process(command);
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_EQ(created.out, "maintenanceplan/" + name + " created: " + described +
                             "follow it: kubectl maintenance plan-status " + name + "\n");
  auto done = wait_plan(name, "Succeeded", 60s,
                        [](const auto& p) { return p.status.phase == op::PlanPhase::kSucceeded; });
  ASSERT_TRUE(done);
  EXPECT_EQ(done->spec.reason, "memory upgrade");
  EXPECT_EQ(done->spec.time_zone, "Asia/Taipei");
  ASSERT_EQ(done->spec.windows.size(), 1U);
  EXPECT_EQ(done->spec.windows[0].days.size(), 7U);
  EXPECT_EQ(done->status.done, 2);
  for (const std::string& node : nodes) {
    EXPECT_TRUE(node_phase_is(*done, node, op::PlanNodePhase::kDone)) << describe(*done);
  }

  // The same name again: the API server refuses the write.
  const ProcessResult again = run_process(command);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
}

// ---- 6. doneWhen NodeRebooted ------------------------------------------------------------------

TEST_F(MaintenancePlanTest, ARebootedNodeIsGivenBackOnceItsBootIdChangedAndItIsReady) {
  const std::vector<std::string> nodes = fleet("reboot", 1);
  const std::string& node = nodes[0];
  const std::string name = unique_name("reboot-plan");
  report_kubelet(node, true, "boot-1");
  start();
  create_plan(name, {{"nodes", json::array{node.c_str()}}, {"doneWhen", "NodeRebooted"}});
  auto drained = wait_plan(name, "drained, waiting for the reboot", 60s, [&](const auto& p) {
    return node_phase_is(p, node, op::PlanNodePhase::kInMaintenance);
  });
  ASSERT_TRUE(drained);
  EXPECT_EQ(entry(*drained, node)->boot_id, "boot-1");
  EXPECT_EQ(entry(*drained, node)->message,
            "drained; waiting for the node to reboot (boot ID boot-1) and be Ready");
  const std::string maintenance = entry(*drained, node)->maintenance;

  // The technician reboots it: down, then up with a new boot ID (a node that is down, or up with
  // its old boot ID, is not done: rollout_test.cc).
  report_kubelet(node, false, "boot-1");
  report_kubelet(node, true, "boot-2");
  auto done = wait_plan(name, "Succeeded", 60s,
                        [](const auto& p) { return p.status.phase == op::PlanPhase::kSucceeded; });
  ASSERT_TRUE(done);
  EXPECT_TRUE(node_phase_is(*done, node, op::PlanNodePhase::kDone)) << describe(*done);
  const std::vector<Event> work_done = plan_events(name, "NodeWorkDone");
  ASSERT_EQ(work_done.size(), 1U);
  EXPECT_EQ(work_done[0].message,
            "node " + node + ": work done; deleting NodeMaintenance " + maintenance);
  EXPECT_TRUE(wait_gone(maintenance, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
}

// ---- 7. onWindowClose Pause -------------------------------------------------------------------

TEST_F(MaintenancePlanTest, ADrainUnderWayIsHeldWhileTheWindowIsClosedAndGoesOnWhenItOpens) {
  const std::vector<std::string> nodes = fleet("held", 1);
  const std::string& node = nodes[0];
  const std::string name = unique_name("held-plan");
  // A pod the drain cannot evict yet: the drain is under way when the window closes.
  TestNamespace ns(kubectl_, "held");
  kubectl_.apply(pod_manifest(ns.name(), "guarded", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=guarded", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "guarded-pdb", 1, "guarded"));
  ASSERT_TRUE(wait_pdb(ns.name(), "guarded-pdb", 1, 0));
  start();
  create_plan(name, {{"nodes", json::array{node.c_str()}},
                     {"onWindowClose", "Pause"},
                     {"windows", json::array{json::object{{"start", "00:00"}, {"end", "00:00"}}}}});
  auto draining = wait_plan(name, "draining, blocked by the PDB", 60s, [&](const auto& p) {
    const op::PlanNodeStatus* e = entry(p, node);
    return e != nullptr && e->phase == op::PlanNodePhase::kDraining &&
           e->message == "draining: 1 pods left";
  });
  ASSERT_TRUE(draining);
  const std::string maintenance = entry(*draining, node)->maintenance;

  // The window closes (the admin moves it two days on): the drain is held, its state kept.
  const auto today =
      std::chrono::weekday{std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now())};
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  const std::string later = kDays[(today + std::chrono::days{2}).c_encoding()];
  kubectl_.must(
      {"patch", "maintenanceplan", name, "--type=merge", "-p",
       R"({"spec":{"windows":[{"days":[")" + later + R"("],"start":"00:00","end":"00:00"}]}})"});
  const std::string hold = "MaintenancePlan " + name +
                           " is outside its maintenance windows until " + later + " 00:00 UTC";
  auto waiting =
      wait_plan(name, "waiting for its window, the drain held", kReact,
                [](const auto& p) { return p.status.phase == op::PlanPhase::kWaitingForWindow; });
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->status.message, "waiting for window " + later + " 00:00 UTC; " + node +
                                         ": drain held until the next window (" + later +
                                         " 00:00 UTC); draining: 1 pods left");
  std::optional<op::NodeMaintenance> held;
  EXPECT_TRUE(wait_until(
      "the pod held", kReact,
      [&] {
        held = maintenance_of(maintenance);
        return held && held->status.pending_pods_refs.size() == 1 &&
               held->status.pending_pods_refs[0].reason == op::PendingPodReason::kHeld;
      },
      [&] { return held ? held->status.last_error : std::string("no maintenance"); }));
  ASSERT_TRUE(held);
  EXPECT_EQ(held->meta.annotations.find(std::string(op::kHoldAnnotation)) != nullptr
                ? *held->meta.annotations.find(std::string(op::kHoldAnnotation))
                : std::string(),
            hold);
  EXPECT_EQ(held->status.pending_pods_refs[0].message, "eviction held: " + hold);
  EXPECT_EQ(held->status.phase, op::Phase::kRunning);
  auto cordoned = get_node(node);
  ASSERT_TRUE(cordoned);
  EXPECT_TRUE(unschedulable(*cordoned)) << "a held drain keeps its node cordoned";
  const std::vector<Event> held_events = plan_events(name, "NodeHeld");
  ASSERT_EQ(held_events.size(), 1U);
  EXPECT_EQ(held_events[0].message, "node " + node + ": drain held until the next window (" +
                                        later +
                                        " 00:00 UTC); the node stays cordoned and no new "
                                        "eviction starts");

  // The window opens: the hold goes, the drain goes on (the PDB refuses again), and once the
  // PDB allows it the node is drained.
  kubectl_.must({"patch", "maintenanceplan", name, "--type=merge", "-p",
                 R"({"spec":{"windows":[{"start":"00:00","end":"00:00"}]}})"});
  std::optional<op::NodeMaintenance> resumed;
  EXPECT_TRUE(wait_until(
      "the drain goes on", kReact,
      [&] {
        resumed = maintenance_of(maintenance);
        return resumed &&
               resumed->meta.annotations.find(std::string(op::kHoldAnnotation)) == nullptr &&
               resumed->status.pending_pods_refs.size() == 1 &&
               resumed->status.pending_pods_refs[0].reason == op::PendingPodReason::kBlockedByPdb;
      },
      [&] { return resumed ? resumed->status.last_error : std::string("no maintenance"); }));
  EXPECT_EQ(plan_events(name, "NodeResumed").size(), 1U);
  kubectl_.must({"patch", "pdb", "guarded-pdb", "-n", ns.name(), "--type=merge", "-p",
                 R"({"spec":{"minAvailable":0}})"});
  EXPECT_TRUE(wait_plan(name, "drained", 60s, [&](const auto& p) {
    return node_phase_is(p, node, op::PlanNodePhase::kInMaintenance);
  }));
}

// ---- 8. The health gate and the operator's Warnings ---------------------------------------------

TEST_F(MaintenancePlanTest, TheHealthGateHoldsOnAWarningTheOperatorReportedAboutTheNode) {
  const std::vector<std::string> nodes = fleet("warned", 1);
  const std::string& node = nodes[0];
  const std::string name = unique_name("warned-plan");
  start();
  create_plan(name, {{"nodes", json::array{node.c_str()}}, {"healthGateTimeout", "3s"}});
  ASSERT_TRUE(wait_plan(name, "drained", 60s, [&](const auto& p) {
    return node_phase_is(p, node, op::PlanNodePhase::kInMaintenance);
  }));
  // A Warning of the operator's about the node, as its recorder writes one (playing the
  // operator: nothing in a kwok cluster makes the restore fail on demand). Stamped a minute
  // ahead, so it is newer than the hand-back whenever the plan looks.
  const std::string event_name = unique_name(node + ".warning");
  defer([this, event_name] {
    (void)kubectl_.run({"delete", "event", event_name, "-n", "default", "--ignore-not-found"});
  });
  const std::string stamp = kube::format_time(kube::wall_now() + 60s);
  kubectl_.apply(json::serialize(
      json::object{{"apiVersion", "v1"},
                   {"kind", "Event"},
                   {"metadata", {{"name", event_name}, {"namespace", "default"}}},
                   {"involvedObject", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}},
                   {"type", "Warning"},
                   {"reason", "NodeNotRestored"},
                   {"message", "could not uncordon node " + node},
                   {"source", {{"component", "node-maintenance-operator"}}},
                   {"firstTimestamp", stamp},
                   {"lastTimestamp", stamp},
                   {"count", 1}}));
  mark_done(node);
  auto paused = wait_plan(name, "paused by its health gate", 60s, [](const auto& p) {
    return p.status.phase == op::PlanPhase::kPaused && p.spec.paused;
  });
  ASSERT_TRUE(paused);
  EXPECT_EQ(paused->status.message,
            "paused (spec.paused); " + node +
                ": health gate: Warning NodeNotRestored from the operator: could not uncordon "
                "node " +
                node);
  // Dealt with: the admin deletes the Warning and resumes.
  kubectl_.must({"delete", "event", event_name, "-n", "default"});
  kubectl_.must(
      {"patch", "maintenanceplan", name, "--type=merge", "-p", R"({"spec":{"paused":false}})"});
  EXPECT_TRUE(wait_plan(name, "Succeeded", 60s,
                        [](const auto& p) { return p.status.phase == op::PlanPhase::kSucceeded; }));
}

// ---- 9. The health gate and a migrated VM -------------------------------------------------------

TEST_F(MaintenancePlanTest, TheHealthGateWaitsUntilAVmThatRanOnTheNodeHasSettled) {
  const KubeVirtApi kubevirt(kubectl_);
  ASSERT_TRUE(kubevirt.served());
  const std::vector<std::string> nodes = fleet("vmgate", 2);
  const std::string& node = nodes[0];
  const std::string& other = nodes[1];
  const std::string name = unique_name("vmgate-plan");
  TestNamespace ns(kubectl_, "vmgate");
  place_vm(kubectl_, ns.name(), "db", node, "", "True");
  ASSERT_TRUE(wait_running(ns.name(), "kubevirt.io=virt-launcher", 1));
  const VirtControllerStandIn virt(kubectl_, ns.name());
  start();
  create_plan(name, {{"nodes", json::array{node.c_str()}}});
  // The drain live-migrates the VM (the operator's migration, played to its end here).
  const std::optional<std::string> migration = virt.wait_for_migration("db", 1, kReact);
  ASSERT_TRUE(migration);
  virt.run(*migration);
  virt.succeed(*migration, "db", "virt-launcher-db-x", other);
  auto drained = wait_plan(name, "drained", 60s, [&](const auto& p) {
    return node_phase_is(p, node, op::PlanNodePhase::kInMaintenance);
  });
  ASSERT_TRUE(drained);
  EXPECT_EQ(entry(*drained, node)->vms, std::vector<std::string>{ns.name() + "/db"});

  // As the node comes back, KubeVirt is moving the VM again (a rebalance): the gate waits.
  const std::string started = kube::format_time(kube::wall_now());
  kubectl_.must(
      {"patch", "virtualmachineinstances.kubevirt.io", "db", "-n", ns.name(), "--type=merge", "-p",
       json::serialize(json::object{
           {"status",
            {{"migrationState", {{"targetNode", node}, {"startTimestamp", started}}}}}})});
  mark_done(node);
  const std::string waiting = "health gate: VM " + ns.name() + "/db is still migrating";
  auto gate = wait_plan(name, "the gate waits for the VM", 60s, [&](const auto& p) {
    const op::PlanNodeStatus* e = entry(p, node);
    return e != nullptr && e->phase == op::PlanNodePhase::kHealthCheck && e->message == waiting;
  });
  ASSERT_TRUE(gate);
  kubectl_.must({"patch", "virtualmachineinstances.kubevirt.io", "db", "-n", ns.name(),
                 "--type=merge", "-p", R"({"status":{"migrationState":{"completed":true}}})"});
  EXPECT_TRUE(wait_plan(name, "Succeeded", 60s,
                        [](const auto& p) { return p.status.phase == op::PlanPhase::kSucceeded; }));
}

}  // namespace
}  // namespace nmo::e2e
