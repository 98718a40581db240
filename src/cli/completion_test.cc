#include "cli/completion.h"

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

namespace nmo::cli {
namespace {

using Kind = CompletionQuery::Kind;
using Words = std::vector<std::string>;

// A command line shaped like kubectl-maintenance's: connection flags on the top level, which
// the subcommands fall through to, each subcommand with one positional argument.
struct CommandLine {
  CommandLine() {
    app.set_version_flag("--version", "kubectl-maintenance test");
    app.add_option("--kubeconfig", text, "kubeconfig file");
    app.add_option("--server,-s", text, "the API server's URL");
    app.add_flag("--insecure-skip-tls-verify", flag, "do not check the server's certificate");
    app.add_option("-v,--v", number, "log client requests");
    CLI::App* start = app.add_subcommand("start", "create a NodeMaintenance for a node");
    start->add_option("node", text, "the node")->required();
    start->add_option("--reason", text, "why (spec.reason)");
    start->add_flag("--wait", flag, "follow it");
    CLI::App* stop = app.add_subcommand("stop", "delete the NodeMaintenance of a node");
    stop->add_option("target", text, "a NodeMaintenance or a node")->required();
    CLI::App* status = app.add_subcommand("status", "a NodeMaintenance's status");
    status->add_option("name", text, "the NodeMaintenance")->required();
    status->add_option("-o,--output", text, "json|yaml|name|jsonpath=TEMPLATE: the object");
    app.add_subcommand("done", "mark its NodeMaintenance done")->add_option("node", text);
    app.add_subcommand("plan-status", "a MaintenancePlan's progress")->add_option("name", text);
    for (CLI::App* sub : app.get_subcommands({})) sub->fallthrough();
  }

  CLI::App app{"kubectl-maintenance", "kubectl-maintenance"};
  std::string text;
  bool flag = false;
  int number = 0;
};

CompletionQuery classify(const Words& words) {
  const CommandLine line;
  return classify_completion(line.app, words);
}

TEST(ClassifyCompletion, OffersTheSubcommandsFirst) {
  const CompletionQuery query = classify({"st"});
  EXPECT_EQ(query.kind, Kind::kStatic);
  EXPECT_EQ(query.prefix, "st");
  EXPECT_EQ(
      query.candidates,
      (Words{"start\tcreate a NodeMaintenance for a node",
             "stop\tdelete the NodeMaintenance of a node", "status\ta NodeMaintenance's status",
             "done\tmark its NodeMaintenance done", "plan-status\ta MaintenancePlan's progress"}));
  EXPECT_EQ(candidate_lines(query.candidates, query.prefix),
            "start\tcreate a NodeMaintenance for a node\n"
            "stop\tdelete the NodeMaintenance of a node\n"
            "status\ta NodeMaintenance's status\n");
}

TEST(ClassifyCompletion, OffersTheSubcommandsFlagsThenTheTopLevelOnesEachOnce) {
  const CompletionQuery query = classify({"start", "--"});
  EXPECT_EQ(query.kind, Kind::kStatic);
  EXPECT_EQ(query.candidates,
            (Words{"--help\tPrint this help message and exit", "--reason\twhy (spec.reason)",
                   "--wait\tfollow it", "--version\tDisplay program version information and exit",
                   "--kubeconfig\tkubeconfig file", "--server\tthe API server's URL",
                   "--insecure-skip-tls-verify\tdo not check the server's certificate",
                   "--v\tlog client requests"}));
}

TEST(ClassifyCompletion, OffersTheOutputFormatsNamedInTheHelp) {
  const CompletionQuery query = classify({"status", "-o", ""});
  EXPECT_EQ(query.kind, Kind::kStatic);
  EXPECT_EQ(query.candidates, (Words{"json", "yaml", "name", "jsonpath="}));
  EXPECT_EQ(classify({"status", "--output", "y"}).candidates,
            (Words{"json", "yaml", "name", "jsonpath="}));
}

TEST(ClassifyCompletion, AsksTheClusterForTheFirstArgumentOfEachSubcommand) {
  EXPECT_EQ(classify({"start", ""}).kind, Kind::kNodes);
  EXPECT_EQ(classify({"stop", "w"}).kind, Kind::kStopTargets);
  EXPECT_EQ(classify({"status", ""}).kind, Kind::kMaintenances);
  EXPECT_EQ(classify({"done", ""}).kind, Kind::kMaintenanceNodes);
  EXPECT_EQ(classify({"plan-status", ""}).kind, Kind::kPlans);
  // Flags and their values before the word do not count as the argument.
  EXPECT_EQ(classify({"start", "--reason", "kernel", "--wait", "w"}).kind, Kind::kNodes);
}

TEST(ClassifyCompletion, KeepsTheConnectionFlagsForTheClusterRead) {
  const CompletionQuery query = classify({"--kubeconfig", "/tmp/k", "status", "-s=https://h:6443",
                                          "--insecure-skip-tls-verify", "--v", "3", "m"});
  EXPECT_EQ(query.kind, Kind::kMaintenances);
  EXPECT_EQ(query.prefix, "m");
  EXPECT_EQ(query.global_args,
            (Words{"--kubeconfig", "/tmp/k", "-s=https://h:6443", "--insecure-skip-tls-verify"}));
}

TEST(ClassifyCompletion, OffersNothingItCannotKnow) {
  EXPECT_EQ(classify({"start", "--reason", ""}).kind, Kind::kNothing);  // a flag's free value
  EXPECT_EQ(classify({"start", "worker-1", ""}).kind, Kind::kNothing);  // after the argument
  EXPECT_EQ(classify({"bogus", ""}).kind, Kind::kNothing);              // an unknown subcommand
}

op::NodeMaintenance maintenance(std::string name, std::string node,
                                std::optional<op::Phase> phase) {
  op::NodeMaintenance nm;
  nm.meta.name = std::move(name);
  nm.spec.node_name = std::move(node);
  nm.status.phase = phase;
  return nm;
}

const std::vector<op::NodeMaintenance> kMaintenances = {
    maintenance("maintenance-w1", "w1", op::Phase::kRunning),
    maintenance("again-w1", "w1", std::nullopt),
    maintenance("maintenance-w2", "w2", op::Phase::kSucceeded)};

TEST(MaintenanceCandidates, NamesEachMaintenanceWithItsNode) {
  EXPECT_EQ(maintenance_candidates(Kind::kMaintenances, kMaintenances),
            (Words{"maintenance-w1\tNodeMaintenance of w1", "again-w1\tNodeMaintenance of w1",
                   "maintenance-w2\tNodeMaintenance of w2"}));
}

TEST(MaintenanceCandidates, StopOffersEachNodeOnceAfterItsFirstMaintenance) {
  EXPECT_EQ(maintenance_candidates(Kind::kStopTargets, kMaintenances),
            (Words{"maintenance-w1\tNodeMaintenance of w1", "w1\tnode under maintenance",
                   "again-w1\tNodeMaintenance of w1", "maintenance-w2\tNodeMaintenance of w2",
                   "w2\tnode under maintenance"}));
}

TEST(MaintenanceCandidates, DoneOffersTheNodesWithTheirFirstMaintenance) {
  EXPECT_EQ(maintenance_candidates(Kind::kMaintenanceNodes, kMaintenances),
            (Words{"w1\tNodeMaintenance maintenance-w1, Running",
                   "w2\tNodeMaintenance maintenance-w2, Succeeded"}));
}

TEST(ClusterCandidates, NodesByNameAndPlansWithTheirPhase) {
  kube::Node node;
  node.meta.name = "worker-1";
  EXPECT_EQ(node_candidates({node}), (Words{"worker-1"}));
  op::MaintenancePlan started;
  started.meta.name = "kernel";
  started.status.phase = op::PlanPhase::kWaitingForWindow;
  op::MaintenancePlan fresh;
  fresh.meta.name = "firmware";
  EXPECT_EQ(plan_candidates({started, fresh}), (Words{"kernel\tMaintenancePlan, WaitingForWindow",
                                                      "firmware\tMaintenancePlan, not started"}));
}

TEST(CompletionAnswer, EndsWithTheNoFileNamesDirective) {
  EXPECT_EQ(candidate_lines({"w1", "w2", "x"}, "w"), "w1\nw2\n");
  EXPECT_EQ(candidate_lines({"w1"}, "z"), "");
  EXPECT_EQ(directive_line(), ":4\n");
}

}  // namespace
}  // namespace nmo::cli
