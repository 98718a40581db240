// NodeMaintenanceMetrics: the operator's own Prometheus series (docs/design.md §6), next to the
// controller-runtime ones of runtime::ManagerMetrics, which it also hands to the controller:
//
//   nodemaintenance_phase{name,node,phase}            1 for the current phase, 0 for the others
//   nodemaintenance_drain_progress_percent{name,node}
//   nodemaintenance_pending_pods{name,node}
//   nodemaintenance_blocked{name,node,reason}         1 while that reason holds it up
//   nodemaintenance_evictions_total{result}           every result pre-set to 0
//   nodemaintenance_vm_migrations_total{result}       started, succeeded, failed (pre-set to 0)
//   nodemaintenance_drain_duration_seconds            histogram, Running (cordon) -> Succeeded
//   nodemaintenance_budget_retry_delay_seconds        histogram, a PodDisruptionBudget seen to
//                                                     allow a disruption -> the refused pod's
//                                                     eviction sent again
//
// No pod names as labels: a label set is bounded by the NodeMaintenances that exist. The
// per-maintenance gauges are rebuilt from NodeMaintenanceController::maintenances() at every
// scrape, so a deleted NodeMaintenance's series disappear with it; a replica that does not lead has
// none.
//
// Threading: on_* hooks may be called from any thread; the scrape refresher runs where
// ManagerMetrics::serialize() runs, which must be the operator's executor thread.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "kube/client/eviction.h"
#include "operator/controller/node_maintenance_controller.h"
#include "operator/metrics/live_gauges.h"
#include "runtime/metrics.h"

namespace nmo::op {

/// The `result` label of nodemaintenance_evictions_total: "evicted", "not_found",
/// "blocked_by_pdb", "deferred", "throttled", "multiple_pdbs", "namespace_terminating", and
/// "error" for a refusal of any other kind or no answer at all (std::nullopt).
[[nodiscard]] std::string_view eviction_result_label(std::optional<kube::EvictionOutcome> outcome);

class NodeMaintenanceMetrics : public OperatorMetrics {
 public:
  /// Registers the families in `manager`, which must outlive this object.
  explicit NodeMaintenanceMetrics(runtime::ManagerMetrics& manager);

  /// From now on each scrape reports the maintenances `views` returns
  /// (NodeMaintenanceController::maintenances) and the active workers `active_workers` counts
  /// (NodeMaintenanceController::active_workers).
  void track(std::function<std::vector<MaintenanceView>()> views,
             std::function<int()> active_workers);

  /// Rebuilds the per-maintenance gauges from `views` (what each scrape does after track()).
  void refresh(const std::vector<MaintenanceView>& views);

  std::unique_ptr<runtime::ControllerMetrics> controller_metrics(const std::string& controller,
                                                                 int workers) override;
  std::unique_ptr<runtime::WorkQueueMetrics> queue_metrics(const std::string& controller) override;
  void on_eviction(std::optional<kube::EvictionOutcome> outcome) override;
  void on_drain_completed(std::chrono::nanoseconds took) override;
  void on_migration(std::string_view result) override;
  void on_budget_retry(std::chrono::nanoseconds after_allowed) override;

 private:
  runtime::ManagerMetrics& manager_;
  prometheus::Family<prometheus::Gauge>& phase_;
  prometheus::Family<prometheus::Gauge>& progress_;
  prometheus::Family<prometheus::Gauge>& pending_;
  prometheus::Family<prometheus::Gauge>& blocked_;
  prometheus::Family<prometheus::Counter>& evictions_;
  prometheus::Family<prometheus::Counter>& migrations_;
  prometheus::Histogram& drain_duration_;
  prometheus::Histogram& budget_retry_delay_;
  // The per-maintenance gauges of the last scrape, removed at the next one.
  LiveGauges live_;
};

}  // namespace nmo::op
