// `kubectl maintenance diagnose mp/<name>`: why a MaintenancePlan does not move (docs/cli.md,
// "diagnose on a plan"). One report — the plan-status view, the plan's recent Events in order,
// the nodes in progress with, for a node still draining, the verdict of its NodeMaintenance's own
// diagnosis — and a one-line verdict with the next action, e.g.
//   stopped by its health gate: node-worker-08: health gate: PDB shop/web-pdb 2 of 3 healthy;
//   once the node is healthy, resume: kubectl maintenance resume memory-upgrade
//   waiting for window Sat 22:00 Asia/Taipei (2026-03-14T14:00:00Z): no node starts before then
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <boost/json/fwd.hpp>

#include "cli/diagnosis.h"
#include "kube/api/time.h"
#include "operator/api/maintenance_plan.h"

namespace nmo::cli {

struct PlanDiagnosisInput {
  op::MaintenancePlan plan;
  kube::Time now{};
  std::vector<EventLine> events;  // about the plan, oldest first
  // For each node of the plan that is Draining: the verdict of its NodeMaintenance's diagnosis
  // (diagnosis_verdict), by node name.
  std::map<std::string, std::string> drain_verdicts;
};

// The one-line verdict with the next action: the plan's phase decides (not started, Succeeded,
// Failed, Paused, WaitingForWindow); while Running, the first node in progress in plan order
// does (a drain's own verdict, the work to be done, the health gate), else what holds the next
// node (status.message).
[[nodiscard]] std::string plan_diagnosis_verdict(const PlanDiagnosisInput& input);

// The human report, lines ending in '\n': plan_status_report(), the Events (at most
// `max_events`, the most recent), "Drains in progress:" with each drain's verdict, and
// "Verdict: ...".
[[nodiscard]] std::string plan_diagnosis_report(const PlanDiagnosisInput& input,
                                                std::size_t max_events);

// For -o json|yaml: {name, phase, message, nextWindow, total, done, inProgress, waiting, failed,
// nodesInProgress: [{name, phase, maintenance, message, drainVerdict}], events: [...], verdict}.
[[nodiscard]] boost::json::value plan_diagnosis_to_json(const PlanDiagnosisInput& input);

}  // namespace nmo::cli
