// NodeMaintenanceController: the NodeMaintenance controller with everything it reads and writes.
//
// What it reads, from the process's shared cache (runtime/cache.h, docs/design.md §7):
//   - every NodeMaintenance;
//   - every Node (one informer for all maintenances and plans, not a watch per node);
//   - for each node being drained, the pods bound to it (a scoped informer, field selector
//     spec.nodeName, held while a NodeMaintenance names the node);
//   - the Leases of the lease namespace (medik8s node leases) and of the operator namespace
//     (budget slots);
//   - for the etcd quorum gate: the etcd mirror pods of kube-system and the control-plane nodes.
//   - every PodDisruptionBudget (which cover a refused pod, for its message).
// DaemonSets are read on demand, only for pods that need them.
//
// Every change is turned into the name of the NodeMaintenance it concerns and queued; reconcile
// workers (runtime::Controller) handle one NodeMaintenance at a time each, never blocking on
// evictions, which run as their own coroutines per pod and queue their maintenance again when
// they have an answer.
//
// Threading: start() and stop() are awaited from the executor's thread; the manager runs the
// whole operator on one io_context thread, so the reconciler's state needs no locks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "operator/api/node_maintenance.h"
#include "operator/gates/node_lease.h"
#include "runtime/cache.h"
#include "runtime/controller.h"
#include "runtime/runnable.h"
#include "runtime/work_queue_metrics.h"

namespace nmo::op {

/// What the operator tells a metrics backend (operator/metrics implements it for Prometheus).
/// Every method does nothing by default. Called on the operator's executor.
class OperatorMetrics {
 public:
  OperatorMetrics() = default;
  OperatorMetrics(const OperatorMetrics&) = delete;
  OperatorMetrics& operator=(const OperatorMetrics&) = delete;
  virtual ~OperatorMetrics() = default;

  /// Hooks for the reconcile controller named `controller` and its work queue, asked for once
  /// by the controller's constructor; null means none.
  virtual std::unique_ptr<runtime::ControllerMetrics> controller_metrics(
      const std::string& /*controller*/, int /*workers*/) {
    return nullptr;
  }
  virtual std::unique_ptr<runtime::WorkQueueMetrics> queue_metrics(
      const std::string& /*controller*/) {
    return nullptr;
  }
  /// One eviction answered with `outcome`; std::nullopt when the API server could not be asked.
  virtual void on_eviction(std::optional<kube::EvictionOutcome> /*outcome*/) {}
  /// A drain finished (Running → Succeeded) after `took`.
  virtual void on_drain_completed(std::chrono::nanoseconds /*took*/) {}
  /// A live migration of the operator's (docs/design.md §2.9): `result` is "started",
  /// "succeeded" or "failed".
  virtual void on_migration(std::string_view /*result*/) {}
  /// A pod refused by a PodDisruptionBudget is evicted again `after_allowed` after the budget
  /// was seen to allow a disruption (docs/design.md §2.4).
  virtual void on_budget_retry(std::chrono::nanoseconds /*after_allowed*/) {}
};

/// One NodeMaintenance as the operator sees it now (its own status runs ahead of the API's).
struct MaintenanceView {
  std::string name;
  std::string node;
  std::optional<Phase> phase;  // unset before the first reconcile
  std::int64_t drain_progress = 0;
  std::int64_t pending_pods = 0;
  /// What holds it up: gate reasons while Pending ("BlockedByNodeHealthCheck",
  /// "BlockedByEtcdQuorum"), pending pods' reasons while Running ("BlockedByPDB",
  /// "EvictionDeferred", "MultiplePDBs", "NamespaceTerminating", "DrainError"); sorted, unique.
  std::vector<std::string> blocked;
};

struct OperatorOptions {
  /// The operator's namespace: budget slot Leases and the leader Lease.
  std::string namespace_ =
      "node-maintenance-operator-system";  // NOLINT(readability-identifier-naming)
  /// Namespace of the medik8s node leases (shared with Node Health Check, Self Node Remediation).
  std::string lease_namespace = "medik8s-leases";
  /// Nodes under maintenance at once (docs/design.md §2.2).
  int max_parallel_maintenances = 1;
  /// Keep control-plane nodes Pending while taking them would break etcd quorum.
  bool etcd_quorum_check = true;
  /// How long quorum must have stayed safe before a control-plane node is taken.
  std::chrono::seconds etcd_quorum_stable_for{30};
  /// Concurrent reconciles (each of a different NodeMaintenance).
  int workers = 4;
  /// Evictions in flight per node.
  int evictions_in_flight = 32;
  /// Evictions in flight across every maintenance at once (docs/design.md §2.4).
  int evictions_in_flight_total = 64;
  /// This process, for Event sources and logs (the pod name in a cluster).
  std::string identity = "node-maintenance-operator";
  /// Metrics hooks; null means none. Must outlive the controller.
  std::shared_ptr<OperatorMetrics> metrics;
  /// Where Events are written; null: the operator's client. The manager gives Events a client
  /// of their own, with its own rate limit, so that they never hold back an eviction. Must
  /// outlive the controller.
  kube::Client* events_client = nullptr;
  /// Asked right before each eviction is sent; an error holds it back (logged, retried later).
  /// With leader election it is the leader's lease check (LeaderElector::check_leading): a
  /// leader paused past its lease must not send the evictions it had queued. Unset: always.
  std::function<Result<void>()> may_evict;
  /// Write the node lifecycle conditions (MaintenanceInProgress, DrainInProgress, Drained) on
  /// each maintenance's node (docs/design.md §2.10); false: write none, and remove ours where a
  /// maintenance finds them.
  bool node_lifecycle_conditions = true;
  /// How often the node lease of a held node is renewed; shortened only by tests.
  std::chrono::seconds node_lease_renew_interval = kNodeLeaseRenewInterval;
  /// Test hook: reconciles of the NodeMaintenance with this name never finish (they wait until
  /// stop()), so /healthz can be shown to fail when the loop is wedged. Empty: off.
  std::string wedge_reconcile_of;
};

namespace internal {
class ControllerImpl;
}  // namespace internal

// A runtime::Runnable: the manager starts it on the leader (docs/design.md §3.2).
class NodeMaintenanceController final : public runtime::Runnable {
 public:
  /// Everything runs on `executor`; `client`, `cache` and `clock` must outlive the operator.
  /// Declares its informers in `cache` (the process's shared one, started by the Manager).
  NodeMaintenanceController(asio::any_io_executor executor, kube::Client& client,
                            runtime::Cache& cache, OperatorOptions options,
                            const Clock& clock = system_clock());
  ~NodeMaintenanceController() override;

  NodeMaintenanceController(const NodeMaintenanceController&) = delete;
  NodeMaintenanceController& operator=(const NodeMaintenanceController&) = delete;

  /// Starts the watches, waits until the caches are synced (or fails after a minute, naming
  /// the cache), then starts the reconcile workers.
  asio::awaitable<Result<void>> start() override;

  /// Stops the workers (in-flight reconciles finish; evictions in flight are cancelled), writes
  /// the queued Events and stops the watches. Idempotent.
  asio::awaitable<void> stop() override;

  /// True once start() succeeded and until stop().
  [[nodiscard]] bool ready() const;

  /// Why node leases cannot be taken, while the last attempt found the lease namespace missing
  /// and could not create it ("the lease namespace medik8s-leases does not exist, and creating
  /// it was refused: ..."); std::nullopt otherwise. For /readyz.
  [[nodiscard]] std::optional<std::string> lease_problem() const;

  /// False while one reconcile has been running for longer than `max_stall` (a wedged worker).
  [[nodiscard]] bool healthy(std::chrono::nanoseconds max_stall) const;

  /// Workers inside a reconcile right now.
  [[nodiscard]] int active_workers() const;

  /// Every NodeMaintenance known to the cache, by name (empty before start()).
  [[nodiscard]] std::vector<MaintenanceView> maintenances() const;

 private:
  std::unique_ptr<internal::ControllerImpl> impl_;
};

}  // namespace nmo::op
