// PlanController: carries out the MaintenancePlans (docs/design.md §10). For each plan it reads
// what rollout.h's decide() needs from the shared cache (nodes, NodeMaintenances, the budgets its
// gate names, the medik8s node leases) and wakes on their changes, then creates and deletes
// NodeMaintenances, writes the plan's status and sends its Events, and keeps the nodes' marks of
// the plans (MaintenancePlanned, the steering taint) in step with the plans' statuses. The
// NodeMaintenance controller (operator/controller) does the rest, as for a maintenance an admin
// created by hand.
//
// A cluster without the MaintenancePlan CRD is fine: the Manager starts this controller only once
// the API is served (runtime::Manager::add_when_served), so installing the CRD later turns plans
// on without a restart.
//
// Threading: start() and stop() are awaited from the executor's thread; everything runs on the
// one io_context thread of the manager.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "operator/api/maintenance_plan.h"
#include "runtime/cache.h"
#include "runtime/runnable.h"

namespace nmo::op::fleet {

struct PlanControllerOptions {
  /// Namespace of the medik8s node leases (Node Health Check, Self Node Remediation).
  std::string lease_namespace = "medik8s-leases";
  /// How often a plan with nodes in progress is looked at; shortened only by tests.
  std::chrono::seconds poll{5};
  /// Event source (the pod name in a cluster).
  std::string identity = "node-maintenance-operator";
  /// Where Events are written; null: the controller's client. Must outlive the controller.
  kube::Client* events_client = nullptr;
  /// Write MaintenancePlanned on the nodes a plan will take (--node-lifecycle-conditions,
  /// docs/design.md §2.10); false: write none, and remove the plan's where it finds them.
  bool node_lifecycle_conditions = true;
  /// Put the steering taint (operator/node/steering_taint.h) on the nodes the running plans take
  /// later (--plan-steering-taint, docs/design.md §10 "Steering"); false: put none, and remove
  /// ours wherever it is.
  bool steering_taint = true;
};

namespace internal {
class PlanControllerImpl;
}  // namespace internal

// A runtime::Runnable, started on the leader only.
class PlanController final : public runtime::Runnable {
 public:
  /// Everything runs on `executor`; `client` and `cache` must outlive the controller. Its
  /// informers are declared in `cache`, the process's shared one (runtime/cache.h).
  PlanController(asio::any_io_executor executor, kube::Client& client, runtime::Cache& cache,
                 PlanControllerOptions options);
  ~PlanController() override;

  PlanController(const PlanController&) = delete;
  PlanController& operator=(const PlanController&) = delete;

  /// Declares the plan informer (the MaintenancePlan API must be served) and waits up to a
  /// minute for its caches, then starts the reconcile worker.
  asio::awaitable<Result<void>> start() override;
  /// Stops the workers and the watches, and writes the queued Events. Idempotent.
  asio::awaitable<void> stop() override;

  /// The plans as last seen (for the maintenanceplan_* metrics); none while the controller is
  /// not running (not the leader, or the MaintenancePlan API not served). Executor thread only.
  [[nodiscard]] std::vector<MaintenancePlan> plans() const;

 private:
  std::unique_ptr<internal::PlanControllerImpl> impl_;
};

}  // namespace nmo::op::fleet
