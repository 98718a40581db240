#include "cli/plan_status_text.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "cli/maintenance_text.h"
#include "cli/text.h"

namespace nmo::cli {

namespace {

// The bar of plan-status: twice the width of watch's, as a plan runs for hours.
constexpr std::size_t kBarWidth = 40;

std::string or_dash(const std::string& text) { return text.empty() ? "-" : text; }

// Between its NodeMaintenance's creation and its health gate passing: its duration runs on.
bool in_progress(op::PlanNodePhase phase) {
  switch (phase) {
    case op::PlanNodePhase::kDraining:
    case op::PlanNodePhase::kInMaintenance:
    case op::PlanNodePhase::kRestoring:
    case op::PlanNodePhase::kHealthCheck:
      return true;
    case op::PlanNodePhase::kWaiting:
    case op::PlanNodePhase::kDone:
    case op::PlanNodePhase::kFailed:
      return false;
  }
  return false;
}

std::string duration_of(const op::PlanNodeStatus& node, kube::Time now) {
  if (node.phase == op::PlanNodePhase::kDone && node.took_seconds > 0) {
    return format_elapsed(std::chrono::seconds{node.took_seconds});
  }
  if (!node.started_at) return "-";
  kube::Time end;
  if (node.finished_at) {
    end = *node.finished_at;
  } else if (in_progress(node.phase)) {
    end = now;
  } else {
    return "-";
  }
  return format_elapsed(std::chrono::duration_cast<std::chrono::seconds>(end - *node.started_at));
}

}  // namespace

bool plan_not_started(const op::MaintenancePlan& plan) {
  return !plan.status.phase && plan.status.nodes.empty();
}

std::int64_t plan_percent(const op::MaintenancePlanStatus& status) {
  if (status.total <= 0) return 0;
  return std::clamp<std::int64_t>(status.done * 100 / status.total, 0, 100);
}

std::string plan_header(const op::MaintenancePlan& plan) {
  if (plan_not_started(plan)) {
    return fmt::format("MaintenancePlan {}: not started yet (is the operator running?)",
                       plan.meta.name);
  }
  const auto& st = plan.status;
  // A status with nodes but no phase is a half-written one; it reads as "Unknown".
  const std::string phase = st.phase ? std::string(op::to_string(*st.phase)) : "Unknown";
  return fmt::format(
      "MaintenancePlan {}: {} — {} of {} done, {} in progress, {} waiting, {} failed",
      plan.meta.name, phase, st.done, st.total, st.in_progress, st.waiting, st.failed);
}

std::vector<std::string> plan_node_header() {
  return {"NODE", "PHASE", "MAINTENANCE", "STARTED", "DURATION", "MESSAGE"};
}

std::vector<std::string> plan_node_row(const op::PlanNodeStatus& node, kube::Time now) {
  return {or_dash(node.name),        std::string(op::to_string(node.phase)),
          or_dash(node.maintenance), node.started_at ? kube::format_time(*node.started_at) : "-",
          duration_of(node, now),    or_dash(node.message)};
}

std::string plan_status_report(const op::MaintenancePlan& plan, kube::Time now) {
  std::string out = plan_header(plan) + "\n";
  if (plan_not_started(plan)) return out;
  const auto& st = plan.status;
  const std::int64_t percent = plan_percent(st);
  out += fmt::format("{} {}%\n", progress_bar(percent, kBarWidth), percent);
  if (st.next_window || !st.next_window_text.empty()) {
    if (st.next_window_text.empty()) {
      out += "Next window: " + kube::format_time(*st.next_window) + "\n";
    } else if (!st.next_window) {
      out += "Next window: " + st.next_window_text + "\n";
    } else {
      out += fmt::format("Next window: {} ({})\n", st.next_window_text,
                         kube::format_time(*st.next_window));
    }
  }
  if (st.eta) out += "ETA: " + kube::format_time(*st.eta) + "\n";
  if (!st.message.empty()) out += "Message: " + st.message + "\n";
  if (!st.nodes.empty()) {
    std::vector<std::vector<std::string>> rows;
    rows.reserve(st.nodes.size());
    for (const auto& node : st.nodes) rows.push_back(plan_node_row(node, now));
    out += "\n" + format_table(plan_node_header(), rows);
  }
  return out;
}

}  // namespace nmo::cli
