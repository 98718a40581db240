#include "cli/plan_watch.h"

#include <utility>

#include <boost/json.hpp>

#include "cli/exit_code.h"
#include "cli/plan_status_text.h"
#include "kube/api/time.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;

json::value time_or_null(const std::optional<kube::Time>& time) {
  if (!time) return nullptr;
  return json::string(kube::format_time(*time));
}

}  // namespace

std::string plan_phase_text(const op::MaintenancePlan& plan) {
  if (plan.status.phase) return std::string(op::to_string(*plan.status.phase));
  return plan_not_started(plan) ? "New" : "Unknown";
}

json::object plan_watch_json(const op::MaintenancePlan& plan) {
  const op::MaintenancePlanStatus& st = plan.status;
  json::array current;
  for (const std::string& node : st.current_nodes) current.emplace_back(node);
  json::array nodes;
  for (const op::PlanNodeStatus& node : st.nodes) {
    nodes.push_back(json::object{{"name", node.name},
                                 {"phase", op::to_string(node.phase)},
                                 {"maintenance", node.maintenance},
                                 {"message", node.message}});
  }
  return json::object{{"name", plan.meta.name},
                      {"phase", plan_phase_text(plan)},
                      {"total", st.total},
                      {"done", st.done},
                      {"inProgress", st.in_progress},
                      {"waiting", st.waiting},
                      {"failed", st.failed},
                      {"currentNodes", std::move(current)},
                      {"message", st.message},
                      {"nextWindow", time_or_null(st.next_window)},
                      {"nextWindowText", st.next_window_text},
                      {"eta", time_or_null(st.eta)},
                      {"nodes", std::move(nodes)}};
}

std::string plan_watch_signature(const op::MaintenancePlan& plan) {
  json::object line = plan_watch_json(plan);
  line.erase("eta");
  return json::serialize(line);
}

std::optional<PlanWatchEnd> plan_watch_end(const op::MaintenancePlan& plan) {
  if (!plan.status.phase) return std::nullopt;
  switch (*plan.status.phase) {
    case op::PlanPhase::kSucceeded:
      return PlanWatchEnd{.exit_code = kExitOk, .error = {}};
    case op::PlanPhase::kFailed: {
      std::string error = "MaintenancePlan \"" + plan.meta.name + "\" failed";
      if (!plan.status.message.empty()) error += ": " + plan.status.message;
      return PlanWatchEnd{.exit_code = kExitFailed, .error = std::move(error)};
    }
    case op::PlanPhase::kRunning:
    case op::PlanPhase::kWaitingForWindow:
    case op::PlanPhase::kPaused:
      break;
  }
  return std::nullopt;
}

}  // namespace nmo::cli
