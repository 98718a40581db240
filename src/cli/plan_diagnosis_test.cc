#include "cli/plan_diagnosis.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::cli {
namespace {

// A plan named memory-upgrade in `phase`, with `nodes` (a JSON array of status.nodes entries).
PlanDiagnosisInput input_of(std::string_view phase, std::string_view nodes,
                            std::string_view extra_status = "") {
  const std::string json = std::string(R"({"metadata": {"name": "memory-upgrade"},
    "spec": {"nodes": ["worker-07", "worker-08", "worker-09"]},
    "status": {"phase": ")") +
                           std::string(phase) + R"(", "total": 3, )" + std::string(extra_status) +
                           R"("nodes": )" + std::string(nodes) + "}}";
  auto plan = op::decode_maintenance_plan(boost::json::parse(json));
  EXPECT_OK(plan);
  PlanDiagnosisInput input;
  if (plan) input.plan = *plan;
  input.now = *kube::parse_time("2026-03-07T16:00:00Z");
  return input;
}

constexpr std::string_view kResume = "kubectl maintenance resume memory-upgrade";
constexpr std::string_view kUnpause =
    R"(kubectl patch mp memory-upgrade --type=merge -p '{"spec":{"paused":false}}')";

// status.conditions with Stopped True for `reason`, and its token.
std::string stopped_by(std::string_view reason, std::string_view message) {
  return std::string(R"("conditions": [{"type": "Stopped", "status": "True", "reason": ")") +
         std::string(reason) + R"(", "message": ")" + std::string(message) +
         R"(", "lastTransitionTime": "2026-03-07T15:00:00Z"}], "stopToken": "0123456789abcdef", )";
}

TEST(PlanDiagnosis, ADrainInProgressGivesItsOwnVerdict) {
  PlanDiagnosisInput input = input_of("Running", R"([
      {"name": "worker-07", "phase": "Done"},
      {"name": "worker-08", "phase": "Draining", "maintenance": "memory-upgrade-worker-08",
       "message": "draining: 1 pod left"},
      {"name": "worker-09", "phase": "Waiting"}])");
  input.drain_verdicts["worker-08"] =
      "pod shop/web-1 is protected by PDB shop/web-pdb (0 disruptions allowed: 2 healthy, 3 "
      "desired): scale up, migrate the VM, or relax the PDB";
  EXPECT_EQ(plan_diagnosis_verdict(input),
            "worker-08 is draining (NodeMaintenance memory-upgrade-worker-08): pod shop/web-1 is "
            "protected by PDB shop/web-pdb (0 disruptions allowed: 2 healthy, 3 desired): scale "
            "up, migrate the VM, or relax the PDB");
  const std::string report = plan_diagnosis_report(input, 20);
  EXPECT_NE(report.find("Drains in progress:\n  worker-08: pod shop/web-1 is protected"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Events (oldest first):\n  none\n"), std::string::npos) << report;
  const boost::json::value json = plan_diagnosis_to_json(input);
  EXPECT_EQ(json.at("nodesInProgress").as_array().size(), 1U);
  EXPECT_EQ(json.at("nodesInProgress").at(0).at("drainVerdict").as_string(),
            input.drain_verdicts["worker-08"]);
  EXPECT_EQ(json.at("verdict").as_string(), plan_diagnosis_verdict(input));
}

TEST(PlanDiagnosis, TheTechniciansTurnAndTheHealthGate) {
  EXPECT_EQ(plan_diagnosis_verdict(input_of("Running", R"([
      {"name": "worker-07", "phase": "InMaintenance",
       "message": "drained; waiting for `kubectl maintenance done worker-07`"}])")),
            "worker-07 is drained and waits for the work on it: drained; waiting for `kubectl "
            "maintenance done worker-07`");
  EXPECT_EQ(plan_diagnosis_verdict(input_of("Running", R"([
      {"name": "worker-07", "phase": "HealthCheck",
       "message": "health gate: PDB shop/web-pdb 2 of 3 healthy"}])")),
            "worker-07: health gate: PDB shop/web-pdb 2 of 3 healthy (after "
            "spec.healthGateTimeout the plan stops itself)");
  EXPECT_EQ(plan_diagnosis_verdict(
                input_of("Running", R"([{"name": "worker-07",
      "phase": "Waiting"}])",
                         R"x("message": "waiting: 1 of 1 unavailable (maxUnavailable)", )x")),
            "no node in progress: waiting: 1 of 1 unavailable (maxUnavailable)");
}

TEST(PlanDiagnosis, PausedWindowFailedAndDone) {
  EXPECT_EQ(plan_diagnosis_verdict(input_of("Paused", R"([
      {"name": "worker-07", "phase": "HealthCheck",
       "message": "health gate: node worker-07 is not Ready"}])",
                                            stopped_by("HealthGateTimeout", "not healthy"))),
            "stopped by its health gate: worker-07: health gate: node worker-07 is not Ready; "
            "once the node is healthy, resume: " +
                std::string(kResume));
  EXPECT_EQ(
      plan_diagnosis_verdict(input_of("Paused", R"([
      {"name": "worker-07", "phase": "Failed", "message": "drain failed"}])",
                                      stopped_by("NodeFailed", "node worker-07: drain failed"))),
      "stopped after node worker-07: drain failed; resume: " + std::string(kResume));
  EXPECT_EQ(plan_diagnosis_verdict(input_of("Paused", R"([{"name": "worker-07",
      "phase": "Waiting"}])")),
            "paused (spec.paused, yours to change); resume: " + std::string(kUnpause));
  EXPECT_EQ(plan_diagnosis_verdict(input_of("WaitingForWindow", R"([{"name": "worker-07",
      "phase": "Waiting"}])",
                                            R"("nextWindow": "2026-03-14T14:00:00Z",
      "nextWindowText": "Sat 22:00 Asia/Taipei", )")),
            "waiting for window Sat 22:00 Asia/Taipei (2026-03-14T14:00:00Z): no node starts "
            "before then");
  EXPECT_EQ(plan_diagnosis_verdict(input_of("WaitingForWindow", R"([{"name": "worker-07",
      "phase": "Draining"}, {"name": "worker-08", "phase": "Waiting"}])",
                                            R"("nextWindow": "2026-03-14T14:00:00Z",
      "nextWindowText": "Sat 22:00 Asia/Taipei", )")),
            "waiting for window Sat 22:00 Asia/Taipei (2026-03-14T14:00:00Z): no node starts "
            "before then; the drain of worker-07 is held until then");
  EXPECT_EQ(plan_diagnosis_verdict(input_of(
                "Failed", "[]", R"("message": "spec.timeZone: unknown time zone \"Mars\"", )")),
            "the operator cannot act on the plan: spec.timeZone: unknown time zone \"Mars\"; fix "
            "it: kubectl edit mp memory-upgrade");
  EXPECT_EQ(plan_diagnosis_verdict(input_of("Failed", R"([
      {"name": "worker-07", "phase": "Done"},
      {"name": "worker-08", "phase": "Failed", "message": "drain failed"}])")),
            "node worker-08: drain failed; the plan took every other node it could. Delete it "
            "when you are done with it");
  EXPECT_EQ(plan_diagnosis_verdict(input_of("Succeeded", R"([{"name": "worker-07",
      "phase": "Done"}])")),
            "nothing to do: every node is done");
}

TEST(PlanDiagnosis, APlanTheOperatorHasNotSeen) {
  PlanDiagnosisInput input;
  input.plan.meta.name = "fresh";
  EXPECT_EQ(plan_diagnosis_verdict(input),
            "the operator has not looked at this plan yet: is it running, and is it the leader? "
            "(kubectl get pods -n node-maintenance-operator-system)");
}

}  // namespace
}  // namespace nmo::cli
