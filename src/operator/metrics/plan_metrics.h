// MaintenancePlanMetrics: the Prometheus series of MaintenancePlans (docs/design.md §10), read
// from the plans' statuses at every scrape:
//
//   maintenanceplan_phase{plan,phase}               1 for the plan's phase, 0 for the others
//   maintenanceplan_nodes{plan,phase}               the plan's nodes in each node phase
//   maintenanceplan_eta_timestamp_seconds{plan}     the estimated end (while the plan has one)
//   maintenanceplan_next_window_timestamp_seconds{plan}
//                                                   when nodes may start again (while waiting)
//
// A plan's series disappear with it; a replica that does not lead has none. Node names are not
// labels: a plan of thousands of nodes adds nine series per phase set, not one per node.
//
// Threading: the refresher runs where ManagerMetrics::serialize() runs, which must be the
// thread the `plans` function may be called on (the operator's executor).
#pragma once

#include <functional>
#include <vector>

#include <prometheus/family.h>
#include <prometheus/gauge.h>

#include "operator/api/maintenance_plan.h"
#include "operator/metrics/live_gauges.h"
#include "runtime/metrics.h"

namespace nmo::op {

class MaintenancePlanMetrics {
 public:
  /// Registers the families in `manager`, which must outlive this object.
  explicit MaintenancePlanMetrics(runtime::ManagerMetrics& manager);

  /// From now on each scrape reports the plans `plans` returns.
  void track(std::function<std::vector<MaintenancePlan>()> plans);

  /// Rebuilds the gauges from `plans` (what each scrape does after track()).
  void refresh(const std::vector<MaintenancePlan>& plans);

 private:
  runtime::ManagerMetrics& manager_;
  prometheus::Family<prometheus::Gauge>& phase_;
  prometheus::Family<prometheus::Gauge>& nodes_;
  prometheus::Family<prometheus::Gauge>& eta_;
  prometheus::Family<prometheus::Gauge>& next_window_;
  // The gauges of the last scrape, removed at the next one.
  LiveGauges live_;
};

}  // namespace nmo::op
