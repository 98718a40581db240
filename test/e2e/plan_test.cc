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
// it and is migrating again; MaintenancePlanned on the nodes a plan will take, gone with the plan.
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
#include "operator/fleet/rollout.h"
#include "operator/node/steering_taint.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/kubevirt.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/plans.h"
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
  OperatorProcess& start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(), {"--test-hook-plan-poll", "1"});
    flags.insert(flags.end(), extra.begin(), extra.end());
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
    apply_plan(kubectl_, name, std::move(spec));
  }

  json::object selector() const { return {{"matchLabels", {{"fleet", fleet_id_}}}}; }

  std::optional<op::MaintenancePlan> plan(const std::string& name) {
    return get_plan(kubectl_, name);
  }

  std::optional<op::MaintenancePlan> wait_plan(
      const std::string& name, const std::string& what, std::chrono::milliseconds timeout,
      const std::function<bool(const op::MaintenancePlan&)>& check) {
    return e2e::wait_plan(kubectl_, name, what, timeout, check);
  }

  // "status/reason/message" of the node's MaintenancePlanned condition, "-" when absent.
  static std::string planned_condition(const std::optional<json::value>& node) {
    if (!node) return "no node";
    boost::system::error_code ec;
    const json::value* conditions = node->find_pointer("/status/conditions", ec);
    if (conditions == nullptr || !conditions->is_array()) return "-";
    for (const json::value& c : conditions->as_array()) {
      const json::object& o = c.as_object();
      const auto text = [&](const char* key) {
        const json::value* v = o.if_contains(key);
        return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
      };
      if (text("type") == "MaintenancePlanned") {
        return text("status") + "/" + text("reason") + "/" + text("message");
      }
    }
    return "-";
  }

  // Whether the node carries the plans' steering taint (docs/design.md §10, "Steering").
  static bool steering_tainted(const std::optional<json::value>& node) {
    return node && has_taint(*node, std::string(op::kSteeringTaintKey) + ":" +
                                        std::string(op::kPreferNoScheduleEffect));
  }

  // Waits until planned_condition() of the node is `expected`, and the node carries the steering
  // taint exactly while it is planned by a Running plan.
  bool wait_planned(const std::string& node, const std::string& expected) {
    return wait_planned(node, expected, expected != "-");
  }
  bool wait_planned(const std::string& node, const std::string& expected, bool tainted) {
    std::optional<json::value> seen;
    return wait_until(
        "node " + node + " MaintenancePlanned " + expected +
            (tainted ? ", steering taint" : ", no steering taint"),
        kReact,
        [&] {
          seen = get_node(node);
          return planned_condition(seen) == expected && steering_tainted(seen) == tainted;
        },
        [&] {
          return planned_condition(seen) +
                 (steering_tainted(seen) ? ", steering taint" : ", no steering taint");
        });
  }

  static std::string describe(const op::MaintenancePlan& plan) { return describe_plan(plan); }

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
    EXPECT_GE(seen->status.nodes[i].took_seconds, 1) << "soakTime 1s";
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
  // Every node is planned, with the window it waits for (docs/design.md §2.10); a plan waiting
  // for its window steers no pod yet.
  EXPECT_TRUE(wait_planned(
      nodes[0],
      "True/MaintenancePlan/plan " + name + ", node 1 of 3, window " + later + " 00:00 UTC",
      false));
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
  // The window is open: the queued node's message names no window any more.
  EXPECT_TRUE(wait_planned(nodes[2], "True/MaintenancePlan/plan " + name + ", node 3 of 3"));
  EXPECT_EQ(entry(*running, nodes[0])->message,
            "drained; waiting for `kubectl maintenance done " + nodes[0] + "`");
  const std::string first = entry(*running, nodes[0])->maintenance;
  const std::string second = entry(*running, nodes[1])->maintenance;
  EXPECT_EQ(first, op::fleet::maintenance_name(name, nodes[0]));
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
  EXPECT_EQ(annotation(*kept, std::string(op::kPlanUidAnnotation)), "");
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

TEST_F(MaintenancePlanTest, AHealthGateThatNeverPassesStopsThePlanAndAGitOpsReapplyCannotResumeIt) {
  const std::vector<std::string> nodes = fleet("gate", 2);
  const std::string name = unique_name("gate-plan");
  start();
  const json::object spec{{"nodes", json::array{nodes[0].c_str(), nodes[1].c_str()}},
                          {"healthGateTimeout", "3s"},
                          {"paused", false}};
  create_plan(name, spec);
  auto drained = wait_plan(name, "first node drained", 60s, [&](const auto& p) {
    return node_phase_is(p, nodes[0], op::PlanNodePhase::kInMaintenance);
  });
  ASSERT_TRUE(drained);
  // The node does not come back healthy from its repair.
  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, nodes[0], 30s));
  mark_done(nodes[0]);
  auto paused = wait_plan(name, "stopped by its health gate", 60s, [](const auto& p) {
    return p.status.phase == op::PlanPhase::kPaused && op::plan_stopped(p.status);
  });
  ASSERT_TRUE(paused);
  EXPECT_FALSE(paused->spec.paused) << "the operator wrote the user's spec";
  const std::string stopped_because = "node " + nodes[0] +
                                      " is not healthy 3s after it was given back (node " +
                                      nodes[0] + " is not Ready)";
  const kube::Condition* stopped =
      kube::find_condition(paused->status.conditions, op::kStoppedCondition);
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->reason, "HealthGateTimeout");
  EXPECT_EQ(stopped->message, stopped_because);
  EXPECT_TRUE(node_phase_is(*paused, nodes[0], op::PlanNodePhase::kHealthCheck));
  EXPECT_EQ(paused->status.message, "stopped: " + stopped_because +
                                        " (kubectl maintenance resume " + name + "); " + nodes[0] +
                                        ": health gate: node " + nodes[0] + " is not Ready");
  EXPECT_TRUE(node_phase_is(*paused, nodes[1], op::PlanNodePhase::kWaiting));
  EXPECT_TRUE(plan_maintenances(name).empty()) << "the second node must not start";
  EXPECT_EQ(verdict_of("mp/" + name),
            "stopped by its health gate: " + nodes[0] + ": health gate: node " + nodes[0] +
                " is not Ready; once the node is healthy, resume: kubectl maintenance resume " +
                name);
  const std::vector<Event> timeouts = plan_events(name, "HealthGateTimeout");
  ASSERT_EQ(timeouts.size(), 1U);
  EXPECT_EQ(timeouts[0].type, "Warning");
  EXPECT_EQ(timeouts[0].message, stopped_because +
                                     "; the plan is stopped (once the node is healthy, "
                                     "kubectl maintenance resume " +
                                     name + " goes on)");

  // Repaired. A GitOps tool re-applies the manifest it holds (spec.paused false, a changed
  // field so the plan is looked at again), and a second client patches spec.paused false:
  // once the operator has seen that generation, the plan is still stopped.
  kubectl_.must({"label", "node", nodes[0], std::string(kNotReadyLabel) + "-"});
  ASSERT_TRUE(wait_node_ready(nodes[0]));
  json::object reapplied = spec;
  reapplied["healthGateTimeout"] = "4s";
  const ProcessResult gitops = kubectl_.run(
      {"apply", "--server-side", "--field-manager=gitops", "--force-conflicts", "-f", "-"},
      json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1alpha1"},
                                   {"kind", "MaintenancePlan"},
                                   {"metadata", {{"name", name}}},
                                   {"spec", reapplied}}));
  ASSERT_EQ(gitops.exit_code, 0) << gitops.err;
  kubectl_.must(
      {"patch", "maintenanceplan", name, "--type=merge", "-p", R"({"spec":{"paused":false}})"});
  auto still = wait_plan(name, "the re-applied generation seen", kReact, [](const auto& p) {
    return p.status.observed_generation == p.meta.generation;
  });
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status.phase, op::PlanPhase::kPaused) << describe(*still);
  EXPECT_TRUE(op::plan_stopped(still->status));
  EXPECT_TRUE(plan_maintenances(name).empty()) << "the second node must not start";

  // The admin resumes with the plugin: the gate passes, the second node goes.
  const ProcessResult resumed = run_process({NMO_CLI_BIN, "resume", name});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out,
            "maintenanceplan/" + name + " resumed (it stopped: " + stopped_because + ")\n");
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
  auto paused = wait_plan(name, "stopped by its health gate", 60s, [](const auto& p) {
    return p.status.phase == op::PlanPhase::kPaused && op::plan_stopped(p.status);
  });
  ASSERT_TRUE(paused);
  const std::string warning =
      "Warning NodeNotRestored from the operator: could not uncordon node " + node;
  EXPECT_EQ(paused->status.message, "stopped: node " + node +
                                        " is not healthy 3s after it was given back (" + warning +
                                        ") (kubectl maintenance resume " + name + "); " + node +
                                        ": health gate: " + warning);
  // Dealt with: the admin deletes the Warning and resumes.
  kubectl_.must({"delete", "event", event_name, "-n", "default"});
  const ProcessResult resumed = run_process({NMO_CLI_BIN, "resume", name});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
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

// ---- 10. Deletion with any propagation policy --------------------------------------------------

TEST_F(MaintenancePlanTest,
       AForegroundDeleteOfThePlanLeavesTheDrainedNodeCordonedWithItsMaintenance) {
  const std::vector<std::string> nodes = fleet("cascade", 1);
  const std::string& node = nodes[0];
  const std::string name = unique_name("cascade-plan");
  start();
  create_plan(name, {{"nodes", json::array{node.c_str()}}, {"doneWhen", "Confirmed"}});
  auto drained = wait_plan(name, "drained", 60s, [&](const auto& p) {
    return node_phase_is(p, node, op::PlanNodePhase::kInMaintenance);
  });
  ASSERT_TRUE(drained);
  const std::string maintenance = entry(*drained, node)->maintenance;
  auto created = get_node_maintenance(maintenance);
  ASSERT_TRUE(created);
  EXPECT_FALSE(created->at("metadata").as_object().contains("ownerReferences"))
      << "an owner reference lets the garbage collector delete it with the plan";
  EXPECT_EQ(annotation(*created, std::string(op::kPlanUidAnnotation)), drained->meta.uid);

  // What Argo CD does when it prunes the plan.
  kubectl_.must(
      {"delete", "maintenanceplan", name, "--cascade=foreground", "--wait=true", "--timeout=60s"});
  EXPECT_FALSE(plan(name).has_value());
  auto kept = get_node_maintenance(maintenance);
  ASSERT_TRUE(kept) << "the drained node's maintenance was deleted with the plan";
  EXPECT_FALSE(kept->at("metadata").as_object().contains("deletionTimestamp"));
  EXPECT_EQ(label(*kept, kPlanLabel), "");
  EXPECT_EQ(annotation(*kept, std::string(op::kPlanUidAnnotation)), "");
  auto cordoned = get_node(node);
  ASSERT_TRUE(cordoned);
  EXPECT_TRUE(unschedulable(*cordoned)) << describe_node(*cordoned);
  // Nobody's now: the admin deletes it once the work is done.
  remove(maintenance);
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
}

// ---- 11. Only its own NodeMaintenances ----------------------------------------------------------

TEST_F(MaintenancePlanTest, TwoPlansWhoseOldNamesCollidedAndAUsersMaintenanceOfThePlansName) {
  // Plan P with node "n-X" and plan "P-n" with node X: "<plan>-<node>" was the same for both.
  const std::string first_plan = unique_name("clash");
  const std::string second_plan = first_plan + "-n";
  const std::string x = unique_name("edge-clash");
  const std::string n_x = "n-" + x;
  // A third plan, and the node a user's NodeMaintenance of that plan's name drains.
  const std::string third_plan = unique_name("clash-user");
  const std::string third_node = unique_name("edge-clash-third");
  const std::string users_node = unique_name("edge-clash-user");
  ASSERT_TRUE(create_nodes({x, n_x, third_node, users_node}));

  const std::string users = op::fleet::maintenance_name(third_plan, third_node);
  ASSERT_TRUE(create_node_maintenance(users, users_node, "the user's own"));
  // Room for the user's maintenance and both plans' at once.
  start({"--max-parallel-maintenances", "4"});
  create_plan(first_plan, {{"nodes", json::array{n_x.c_str()}}});
  create_plan(second_plan, {{"nodes", json::array{x.c_str()}}});
  create_plan(third_plan, {{"nodes", json::array{third_node.c_str()}}});

  // Each plan drains its own node under a NodeMaintenance of its own.
  for (const auto& [plan_name, node] : {std::pair{first_plan, n_x}, std::pair{second_plan, x}}) {
    auto drained = wait_plan(plan_name, "drained", 60s, [&](const auto& p) {
      return node_phase_is(p, node, op::PlanNodePhase::kInMaintenance);
    });
    ASSERT_TRUE(drained);
    EXPECT_EQ(entry(*drained, node)->maintenance, op::fleet::maintenance_name(plan_name, node));
    EXPECT_EQ(plan_maintenances(plan_name),
              (std::map<std::string, std::string>{{entry(*drained, node)->maintenance, node}}));
  }
  EXPECT_NE(op::fleet::maintenance_name(first_plan, n_x),
            op::fleet::maintenance_name(second_plan, x));

  // The third plan finds the user's NodeMaintenance under the name it wants: it waits, says
  // why, and never takes it over.
  const std::string waits = "NodeMaintenance " + users +
                            " exists and is not this plan's (it carries no "
                            "nodemaintenance.medik8s.io/plan-uid of this plan); the node waits "
                            "until it is gone";
  auto waiting = wait_plan(third_plan, "waiting on the collision", kReact, [&](const auto& p) {
    const op::PlanNodeStatus* e = entry(p, third_node);
    return e != nullptr && e->phase == op::PlanNodePhase::kWaiting && e->message == waits;
  });
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->status.message, "next node: " + waits);
  const std::vector<Event> collisions = plan_events(third_plan, "NameCollision");
  ASSERT_EQ(collisions.size(), 1U);
  EXPECT_EQ(collisions[0].type, "Warning");
  EXPECT_EQ(collisions[0].message, "node " + third_node + ": " + waits);
  auto untouched = get_node_maintenance(users);
  ASSERT_TRUE(untouched);
  EXPECT_EQ(label(*untouched, kPlanLabel), "");
  auto third = get_node(third_node);
  ASSERT_TRUE(third);
  EXPECT_FALSE(unschedulable(*third)) << describe_node(*third);

  // The user's maintenance ends: the plan creates its own.
  remove(users);
  EXPECT_TRUE(wait_plan(third_plan, "drained", 60s, [&](const auto& p) {
    return node_phase_is(p, third_node, op::PlanNodePhase::kInMaintenance);
  }));
}

// ---- 12. `kubectl maintenance stop` on a plan's node -----------------------------------------

TEST_F(MaintenancePlanTest, StopOnAPlansNodeMidDrainStopsThePlanBeforeTheNextNodeStarts) {
  const std::vector<std::string> nodes = fleet("stop", 2);
  const std::string name = unique_name("stop-plan");
  // A pod the drain of the first node cannot evict: its NodeMaintenance stays Running.
  TestNamespace ns(kubectl_, "stop");
  kubectl_.apply(pod_manifest(ns.name(), "guarded", nodes[0]));
  ASSERT_TRUE(wait_running(ns.name(), "app=guarded", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "guarded-pdb", 1, "guarded"));
  ASSERT_TRUE(wait_pdb(ns.name(), "guarded-pdb", 1, 0));
  start();
  create_plan(name, {{"nodeSelector", selector()}});
  auto draining = wait_plan(name, "first node draining", kReact, [&](const auto& p) {
    return node_phase_is(p, nodes[0], op::PlanNodePhase::kDraining);
  });
  ASSERT_TRUE(draining);

  const ProcessResult stopped = run_process({NMO_CLI_BIN, "stop", nodes[0]});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  auto failed = wait_plan(name, "the first node failed", kReact, [&](const auto& p) {
    return node_phase_is(p, nodes[0], op::PlanNodePhase::kFailed);
  });
  ASSERT_TRUE(failed);
  // In the same status write: the plan stopped and the second node did not start.
  EXPECT_EQ(failed->status.phase, op::PlanPhase::kPaused) << describe(*failed);
  const kube::Condition* condition =
      kube::find_condition(failed->status.conditions, op::kStoppedCondition);
  ASSERT_NE(condition, nullptr);
  EXPECT_EQ(condition->reason, "NodeFailed");
  EXPECT_EQ(condition->message, "node " + nodes[0] + ": NodeMaintenance " +
                                    entry(*failed, nodes[0])->maintenance +
                                    " was deleted by someone else before the drain finished");
  EXPECT_TRUE(node_phase_is(*failed, nodes[1], op::PlanNodePhase::kWaiting));
  EXPECT_TRUE(plan_maintenances(name).empty()) << "the second node must not start";
  EXPECT_TRUE(wait_node_restored(nodes[0], /*stays_cordoned=*/false, kReact));
}

// ---- 13. The schema refuses what the plan cannot use -------------------------------------------

TEST_F(MaintenancePlanTest, TheSchemaRefusesWhatThePlanCannotUseWithItsMessage) {
  const std::string name = unique_name("schema-plan");
  // What the API server says when it refuses a plan with `spec` (created with --dry-run=server).
  const auto refusal = [&](const json::object& spec) {
    const ProcessResult r = kubectl_.run(
        {"create", "--dry-run=server", "-f", "-"},
        json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1alpha1"},
                                     {"kind", "MaintenancePlan"},
                                     {"metadata", {{"name", name}}},
                                     {"spec", spec}}));
    EXPECT_NE(r.exit_code, 0) << json::serialize(spec);
    return r.err;
  };
  // Whether `err` is the refusal of plan `plan` with `message` (alone, or first of a list, as
  // newer API servers add that the CEL rules were not run).
  const auto refused_with = [](const std::string& err, const std::string& plan,
                               const std::string& message) {
    const std::string head = "The MaintenancePlan \"" + plan + "\" is invalid: ";
    return err == head + message + "\n" || err.rfind(head + "\n* " + message + "\n", 0) == 0;
  };
  const json::array one{"node-a"};
  // Long enough for a NodeMaintenance's reason, and no longer.
  const std::string too_long(1025, 'r');
  std::string err = refusal({{"nodes", one}, {"reason", too_long}});
  EXPECT_TRUE(refused_with(
      err, name,
      "spec.reason: Too long: may not be " +
          std::string(server_minor(kubectl_) < 32 ? "longer than 1024" : "more than 1024 bytes")))
      << err;
  const std::string duration_pattern = R"('^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')";
  err = refusal({{"nodes", one}, {"doneWhen", "Soaked"}, {"soakTime", "1d"}});
  EXPECT_TRUE(
      refused_with(err, name,
                   "spec.soakTime: Invalid value: \"1d\": spec.soakTime in body should match " +
                       duration_pattern))
      << err;
  err = refusal({{"nodes", one}, {"healthGateTimeout", "ten minutes"}});
  EXPECT_TRUE(refused_with(err, name,
                           "spec.healthGateTimeout: Invalid value: \"ten minutes\": "
                           "spec.healthGateTimeout in body should match " +
                               duration_pattern))
      << err;
  // What a CEL rule's refusal shows as the value changed between 1.34 and 1.37: the schema's type
  // before ("" for an int-or-string, "object", "array"), the value itself since (nothing for an
  // object or an array).
  const bool shows_value = server_minor(kubectl_) >= 35;
  const auto cel_value = [&](const std::string& type, const std::string& value) {
    if (!shows_value) return "Invalid value: \"" + type + "\": ";
    return value.empty() ? std::string("Invalid value: ") : "Invalid value: " + value + ": ";
  };
  // Counts and percentages.
  const std::string limit = "must be a count of at least 1 or a percentage from 1% to 100%";
  err = refusal({{"nodes", one}, {"maxParallel", "150%"}});
  EXPECT_TRUE(refused_with(err, name, "spec.maxParallel: " + cel_value("", "\"150%\"") + limit))
      << err;
  err = refusal({{"nodes", one}, {"maxUnavailable", 0}});
  EXPECT_TRUE(refused_with(err, name, "spec.maxUnavailable: " + cel_value("", "0") + limit)) << err;
  json::array windows;
  for (int i = 0; i < 33; ++i) {
    windows.push_back(json::object{{"start", "22:00"}, {"end", "06:00"}});
  }
  err = refusal({{"nodes", one}, {"windows", windows}});
  EXPECT_TRUE(refused_with(err, name, "spec.windows: Too many: 33: must have at most 32 items"))
      << err;

  // nodes and nodeSelector stay as the plan was created: the plan fixed its nodes at once.
  create_plan(name, {{"nodes", one}, {"paused", true}});
  const auto edit = [&](const std::string& plan, const std::string& patch) {
    const ProcessResult r =
        kubectl_.run({"patch", "maintenanceplan", plan, "--type=merge", "-p", patch});
    EXPECT_NE(r.exit_code, 0) << patch;
    return r.err;
  };
  err = edit(name, R"({"spec":{"nodes":["node-a","node-b"]}})");
  EXPECT_TRUE(refused_with(err, name,
                           "spec.nodes: " + cel_value("array", "") +
                               "nodes is immutable; create a new plan for other nodes"))
      << err;
  err = edit(name, R"({"spec":{"nodes":null,"nodeSelector":{"matchLabels":{"a":"b"}}}})");
  EXPECT_TRUE(refused_with(err, name,
                           "spec: " + cel_value("object", "") +
                               "nodes and nodeSelector are immutable; create a new plan for other "
                               "nodes"))
      << err;
  const std::string selected = unique_name("schema-selector");
  create_plan(selected, {{"nodeSelector", {{"matchLabels", {{"a", "b"}}}}}, {"paused", true}});
  err = edit(selected, R"({"spec":{"nodeSelector":{"matchLabels":{"a":"c"}}}})");
  EXPECT_TRUE(refused_with(err, selected,
                           "spec.nodeSelector: " + cel_value("object", "") +
                               "nodeSelector is immutable; create a new plan for other nodes"))
      << err;
  // What the plan may still change: its reason, windows, limits.
  kubectl_.must({"patch", "maintenanceplan", name, "--type=merge", "-p",
                 R"({"spec":{"reason":"memory upgrade","maxParallel":"50%"}})"});
}

// ---- 14. MaintenancePlanned on the nodes the plan will take -----------------------------------

// While the first of three nodes is drained (maxParallel 1, doneWhen Confirmed), the two queued
// ones say MaintenancePlanned=True with the plan, their place and the plan's size; the drained
// one does not (its NodeMaintenance's conditions say it). The second node's turn clears its
// condition. Once the plan is deleted, no node says it.
TEST_F(MaintenancePlanTest, TheNodesAPlanWillTakeSayMaintenancePlannedUntilThePlanIsDeleted) {
  const std::vector<std::string> nodes = fleet("planned", 3);
  const std::string name = unique_name("planned-plan");
  start();
  create_plan(name, {{"nodeSelector", selector()}, {"maxParallel", 1}, {"doneWhen", "Confirmed"}});
  auto drained = wait_plan(name, "the first node drained", 60s, [&](const auto& p) {
    return node_phase_is(p, nodes[0], op::PlanNodePhase::kInMaintenance);
  });
  ASSERT_TRUE(drained) << "no plan";
  const std::vector<std::string> expected{
      "-",
      "True/MaintenancePlan/plan " + name + ", node 2 of 3",
      "True/MaintenancePlan/plan " + name + ", node 3 of 3",
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_TRUE(wait_planned(nodes[i], expected[i]));
  }

  // The technician is done with the first node: the second one's turn clears its condition, the
  // third one still waits.
  mark_done(nodes[0]);
  ASSERT_TRUE(wait_plan(name, "the second node taken", 60s, [&](const auto& p) {
    return node_phase_is(p, nodes[1], op::PlanNodePhase::kInMaintenance);
  }));
  EXPECT_TRUE(wait_planned(nodes[1], "-"));
  EXPECT_TRUE(wait_planned(nodes[2], "True/MaintenancePlan/plan " + name + ", node 3 of 3"));

  kubectl_.must({"delete", "maintenanceplan", name, "--wait=true", "--timeout=60s"});
  for (const std::string& node : nodes) {
    EXPECT_TRUE(wait_planned(node, "-"));
  }
}

}  // namespace
}  // namespace nmo::e2e
