#include "operator/metrics/plan_metrics.h"

#include <array>
#include <chrono>
#include <map>
#include <string>

#include <prometheus/registry.h>

namespace nmo::op {
namespace {

constexpr std::array kPlanPhases = {PlanPhase::kRunning, PlanPhase::kWaitingForWindow,
                                    PlanPhase::kPaused, PlanPhase::kSucceeded, PlanPhase::kFailed};
constexpr std::array kNodePhases = {PlanNodePhase::kWaiting,       PlanNodePhase::kDraining,
                                    PlanNodePhase::kInMaintenance, PlanNodePhase::kRestoring,
                                    PlanNodePhase::kHealthCheck,   PlanNodePhase::kDone,
                                    PlanNodePhase::kFailed};

double seconds_since_epoch(kube::Time time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

}  // namespace

MaintenancePlanMetrics::MaintenancePlanMetrics(runtime::ManagerMetrics& manager)
    : manager_(manager),
      phase_(prometheus::BuildGauge()
                 .Name("maintenanceplan_phase")
                 .Help("1 for the phase a MaintenancePlan is in, 0 for the other phases.")
                 .Register(manager.registry())),
      nodes_(prometheus::BuildGauge()
                 .Name("maintenanceplan_nodes")
                 .Help("Nodes of a MaintenancePlan in each node phase.")
                 .Register(manager.registry())),
      eta_(prometheus::BuildGauge()
               .Name("maintenanceplan_eta_timestamp_seconds")
               .Help("When a MaintenancePlan is estimated to end, from its measured node "
                     "durations (Unix time).")
               .Register(manager.registry())),
      next_window_(prometheus::BuildGauge()
                       .Name("maintenanceplan_next_window_timestamp_seconds")
                       .Help("When a MaintenancePlan waiting for its window may start nodes "
                             "again (Unix time).")
                       .Register(manager.registry())) {}

void MaintenancePlanMetrics::track(std::function<std::vector<MaintenancePlan>()> plans) {
  manager_.add_refresher([this, plans = std::move(plans)] { refresh(plans()); });
}

void MaintenancePlanMetrics::refresh(const std::vector<MaintenancePlan>& plans) {
  live_.clear();
  auto add = [this](prometheus::Family<prometheus::Gauge>& family, const prometheus::Labels& labels,
                    double value) { live_.set(family, labels, value); };
  for (const MaintenancePlan& plan : plans) {
    const std::string& name = plan.meta.name;
    if (plan.status.phase) {
      for (const PlanPhase phase : kPlanPhases) {
        add(phase_, {{"plan", name}, {"phase", std::string(to_string(phase))}},
            phase == *plan.status.phase ? 1 : 0);
      }
    }
    std::map<PlanNodePhase, int> counts;
    for (const PlanNodeStatus& node : plan.status.nodes) ++counts[node.phase];
    for (const PlanNodePhase phase : kNodePhases) {
      add(nodes_, {{"plan", name}, {"phase", std::string(to_string(phase))}},
          static_cast<double>(counts[phase]));
    }
    if (plan.status.eta) add(eta_, {{"plan", name}}, seconds_since_epoch(*plan.status.eta));
    if (plan.status.next_window) {
      add(next_window_, {{"plan", name}}, seconds_since_epoch(*plan.status.next_window));
    }
  }
}

}  // namespace nmo::op
