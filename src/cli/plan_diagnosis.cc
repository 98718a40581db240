#include "cli/plan_diagnosis.h"

#include <string>
#include <vector>

#include <boost/json.hpp>

#include "base/strings.h"
#include "cli/plan_status_text.h"

namespace nmo::cli {
namespace {

bool in_progress(op::PlanNodePhase phase) {
  return phase == op::PlanNodePhase::kDraining || phase == op::PlanNodePhase::kInMaintenance ||
         phase == op::PlanNodePhase::kRestoring || phase == op::PlanNodePhase::kHealthCheck;
}

std::string resume_command(const std::string& plan) { return "kubectl maintenance resume " + plan; }

std::string unpause_command(const std::string& plan) {
  return "kubectl patch mp " + plan + R"( --type=merge -p '{"spec":{"paused":false}}')";
}

// The first node of the plan in `phase`, in plan order, or null.
const op::PlanNodeStatus* first_in(const op::MaintenancePlan& plan, op::PlanNodePhase phase) {
  for (const op::PlanNodeStatus& node : plan.status.nodes) {
    if (node.phase == phase) return &node;
  }
  return nullptr;
}

std::string with_message(const op::PlanNodeStatus& node) {
  return node.message.empty() ? node.name : node.name + ": " + node.message;
}

std::string verdict_for_node(const PlanDiagnosisInput& input, const op::PlanNodeStatus& node) {
  switch (node.phase) {
    case op::PlanNodePhase::kDraining:
      if (const auto found = input.drain_verdicts.find(node.name);
          found != input.drain_verdicts.end()) {
        return node.name + " is draining (NodeMaintenance " + node.maintenance +
               "): " + found->second;
      }
      return node.name + " is draining (NodeMaintenance " + node.maintenance + ")";
    case op::PlanNodePhase::kInMaintenance:
      return node.name + " is drained and waits for the work on it: " + node.message;
    case op::PlanNodePhase::kRestoring:
      return node.name + " is being given back (its NodeMaintenance is being deleted)";
    case op::PlanNodePhase::kHealthCheck:
      return with_message(node) + " (after spec.healthGateTimeout the plan stops itself)";
    default:
      return with_message(node);
  }
}

}  // namespace

std::string plan_diagnosis_verdict(const PlanDiagnosisInput& input) {
  const op::MaintenancePlan& plan = input.plan;
  const std::string& name = plan.meta.name;
  if (plan_not_started(plan)) {
    return "the operator has not looked at this plan yet: is it running, and is it the leader? "
           "(kubectl get pods -n node-maintenance-operator-system)";
  }
  switch (*plan.status.phase) {
    case op::PlanPhase::kSucceeded:
      return "nothing to do: every node is done";
    case op::PlanPhase::kFailed:
      if (const op::PlanNodeStatus* failed = first_in(plan, op::PlanNodePhase::kFailed)) {
        return "node " + with_message(*failed) +
               "; the plan took every other node it could. Delete it when you are done with it";
      }
      return "the operator cannot act on the plan: " + plan.status.message +
             "; fix it: kubectl edit mp " + name;
    case op::PlanPhase::kPaused: {
      const kube::Condition* stopped =
          kube::find_condition(plan.status.conditions, op::kStoppedCondition);
      if (!op::plan_stopped(plan.status) || stopped == nullptr) {
        return "paused (spec.paused, yours to change); resume: " + unpause_command(name);
      }
      const std::string also =
          plan.spec.paused ? " (and set spec.paused to false, which is yours)" : "";
      if (stopped->reason == op::kStoppedByHealthGate) {
        const op::PlanNodeStatus* gate = first_in(plan, op::PlanNodePhase::kHealthCheck);
        return "stopped by its health gate: " + (gate ? with_message(*gate) : stopped->message) +
               "; once the node is healthy, resume: " + resume_command(name) + also;
      }
      return "stopped after " + stopped->message + "; resume: " + resume_command(name) + also;
    }
    case op::PlanPhase::kWaitingForWindow: {
      std::string out = "waiting for window " + plan.status.next_window_text;
      if (plan.status.next_window) out += " (" + kube::format_time(*plan.status.next_window) + ")";
      std::vector<std::string> held;
      for (const op::PlanNodeStatus& node : plan.status.nodes) {
        if (node.phase == op::PlanNodePhase::kDraining) held.push_back(node.name);
      }
      out += ": no node starts before then";
      if (!held.empty()) out += "; the drain of " + join(held, ", ") + " is held until then";
      return out;
    }
    case op::PlanPhase::kRunning:
      break;
  }
  for (const op::PlanNodeStatus& node : plan.status.nodes) {
    if (in_progress(node.phase)) return verdict_for_node(input, node);
  }
  if (!plan.status.message.empty()) return "no node in progress: " + plan.status.message;
  return "no node in progress; the next one starts at the plan's next look";
}

std::string plan_diagnosis_report(const PlanDiagnosisInput& input, std::size_t max_events) {
  std::string out = plan_status_report(input.plan, input.now);
  out += "\n" + events_section(input.events, max_events);
  if (!input.drain_verdicts.empty()) {
    out += "\nDrains in progress:\n";
    for (const auto& [node, verdict] : input.drain_verdicts) {
      out += "  " + node + ": " + verdict + "\n";
    }
  }
  out += "\nVerdict: " + plan_diagnosis_verdict(input) + "\n";
  return out;
}

boost::json::value plan_diagnosis_to_json(const PlanDiagnosisInput& input) {
  const op::MaintenancePlanStatus& status = input.plan.status;
  boost::json::array nodes;
  for (const op::PlanNodeStatus& node : status.nodes) {
    if (!in_progress(node.phase)) continue;
    boost::json::object entry{{"name", node.name},
                              {"phase", op::to_string(node.phase)},
                              {"maintenance", node.maintenance},
                              {"message", node.message}};
    if (const auto found = input.drain_verdicts.find(node.name);
        found != input.drain_verdicts.end()) {
      entry["drainVerdict"] = found->second;
    }
    nodes.emplace_back(std::move(entry));
  }
  return boost::json::object{
      {"name", input.plan.meta.name},
      {"phase", status.phase ? std::string(op::to_string(*status.phase)) : std::string()},
      {"message", status.message},
      {"nextWindow", status.next_window ? kube::format_time(*status.next_window) : std::string()},
      {"total", status.total},
      {"done", status.done},
      {"inProgress", status.in_progress},
      {"waiting", status.waiting},
      {"failed", status.failed},
      {"nodesInProgress", std::move(nodes)},
      {"events", events_to_json(input.events)},
      {"verdict", plan_diagnosis_verdict(input)}};
}

}  // namespace nmo::cli
