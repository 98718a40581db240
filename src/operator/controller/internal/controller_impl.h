// ControllerImpl: the I/O shell behind op::NodeMaintenanceController
// (node_maintenance_controller.h), one file per concern:
//   node_maintenance_controller.cc  start and stop, and the plumbing from the view's changes
//                     to queued names
//   reconciler.cc     the reconcile of one NodeMaintenance: gathers the inputs of the state
//                     machine (state_machine.h), decides once, and executes the decision
//   action_runner.cc  the execution of the decided actions (actions.h), one handler per kind
//   admission.cc      the facts behind the gates of a Pending maintenance
//   drain.cc          the pods that must leave, the VMs' verdicts and the live migrations
//   node_changes.cc   the node patches (cordon and taint, restore, lifecycle conditions)
//   leases.cc         the housekeeping of the Leases (LeaseKeeper holds them)
//   status.cc         the believed status, the coalesced status writes and the Events they
//                     announce
// and the pieces with state of their own, in internal/: what the controller reads of the cluster
// (the shared cache's informers, their indexes and the pods of the nodes being drained) is
// ClusterView's (cluster_view.h), which never writes; everything remembered about a maintenance
// between reconciles is in its MaintenanceMemory (maintenance_registry.h), dropped at once by
// MaintenanceRegistry::forget(); the evictions in flight and their wake-ups are EvictionRunner's
// (eviction_runner.h); the node leases and the budget slots LeaseKeeper's (lease_keeper.h);
// what is read of KubeVirt (its API, default strategy, VMIs, our migrations) KubeVirtReader's
// (kubevirt_reader.h). The pure core (target operator_controller_core) is beside them:
// state_machine.h (the lifecycle), actions.h (what it decides), events.h (every Event).
//
// Threading: everything runs on the one executor of the controller (a single io_context thread in
// the manager), so the members below are only touched between suspension points of coroutines
// on that thread. Eviction coroutines only append their answers to a MaintenanceMemory's inbox,
// after checking its `alive` flag; the reconcile applies them, so it is the only writer of the
// rest.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/api/node.h"
#include "kube/api/time.h"
#include "kube/client/client.h"
#include "operator/api/failure.h"
#include "operator/api/node_maintenance.h"
#include "operator/controller/events.h"
#include "operator/controller/internal/cluster_view.h"
#include "operator/controller/internal/eviction_runner.h"
#include "operator/controller/internal/kubevirt_reader.h"
#include "operator/controller/internal/lease_keeper.h"
#include "operator/controller/internal/maintenance_registry.h"
#include "operator/controller/node_maintenance_controller.h"
#include "operator/controller/state_machine.h"
#include "operator/drain/ledger.h"
#include "operator/gates/admission_gates.h"
#include "operator/node/lifecycle_conditions.h"
#include "runtime/cache.h"
#include "runtime/controller.h"
#include "runtime/event_recorder.h"
#include "runtime/own_writes.h"

namespace nmo::op::internal {

// The reconcile key that keeps the budget's slot Leases for foreign node-lease holders in step
// and releases node leases we hold without a NodeMaintenance behind them. Not a valid object
// name, so it never collides with a NodeMaintenance.
inline constexpr std::string_view kHousekeepingKey = "#housekeeping";

using kube::wall_now;

class ControllerImpl {
 public:
  ControllerImpl(asio::any_io_executor executor, kube::Client& client, runtime::Cache& cache,
                 OperatorOptions options, const Clock& clock);
  ~ControllerImpl();

  asio::awaitable<Result<void>> start();
  asio::awaitable<void> stop();
  [[nodiscard]] bool ready() const { return ready_; }
  [[nodiscard]] bool healthy(std::chrono::nanoseconds max_stall) const {
    return controller_.healthy(max_stall);
  }
  [[nodiscard]] int active_workers() const { return controller_.active_workers(); }
  [[nodiscard]] const std::optional<std::string>& lease_problem() const {
    return leases_->problem();
  }
  [[nodiscard]] std::vector<MaintenanceView> maintenances() const;

 private:
  // ---- node_maintenance_controller.cc: wake-ups and queueing ----
  // Who the view wakes on which change (cluster_view.h).
  ClusterView::Wakeups wakeups();
  // Logs a warning when upstream medik8s NMO's webhook or Deployment is still present.
  asio::awaitable<void> warn_about_upstream();
  void enqueue_node(const std::string& node);
  void enqueue_waiting();

  // A reconcile that never finishes (until stop() cancels it), for the /healthz test.
  asio::awaitable<Result<runtime::ReconcileAction>> wedged(std::string key);

  // ---- reconciler.cc ----
  asio::awaitable<Result<runtime::ReconcileAction>> reconcile(std::string key);
  // The inputs of the state machine for `nm` as the caches show them now, with `status`.
  Inputs inputs(const NodeMaintenance& nm, NodeMaintenanceStatus status);
  // The facts that cost a look (state_machine.h: needs_gates(), needs_pods()) for `nm`, believed
  // to have `status`; false when the maintenance stopped meanwhile (deleted, or no longer
  // remembered) and the reconcile is over.
  asio::awaitable<Result<bool>> gather(const NodeMaintenance& nm,
                                       const NodeMaintenanceStatus& status,
                                       std::optional<GateFacts>& gates,
                                       std::optional<PodFacts>& pods);
  // What an action's handler returns: std::nullopt to go on with the next action, else what the
  // reconcile returns.
  using Stop = std::optional<Result<runtime::ReconcileAction>>;
  // ---- action_runner.cc: one handler per kind of action ----
  class ActionRunner;
  // Runs one decision's actions in order, up to the first that fails; the earliest requeue goes
  // into `next`.
  asio::awaitable<Stop> execute(const NodeMaintenance& nm, std::vector<Action> actions,
                                std::optional<Clock::time_point>& next);
  void log_note(const NodeMaintenance& nm, const LogNote& note) const;

  // ---- admission.cc ----
  // What the gates read (operator/gates/admission_gates.h), from the caches, with `status` as
  // the believed status of `asking`.
  [[nodiscard]] GateWorld gate_world(const NodeMaintenance& asking,
                                     const NodeMaintenanceStatus& status) const;
  // The gates of the Pending maintenance `nm` (believed `status`), with the etcd stability
  // window of each maintenance the evaluation asks about.
  GateFacts gate_facts(const NodeMaintenance& nm, const NodeMaintenanceStatus& status);

  // ---- leases.cc ----
  // Keeps the slots of foreign node-lease holders, and gives back node leases of ours that no
  // maintenance holds.
  asio::awaitable<Result<runtime::ReconcileAction>> housekeeping();

  // ---- node_changes.cc ----
  // Cordons and taints the node (docs/design.md §2.3) unless it already is; true when it patched.
  asio::awaitable<Result<bool>> apply_node_changes(NodeMaintenance nm);
  // Undoes apply_node_changes() when the node carries this maintenance's prior-state
  // annotation (or upstream's taint without one); true when the node was really uncordoned.
  // Also removes our node lifecycle conditions first.
  asio::awaitable<Result<bool>> restore_node(NodeMaintenance nm, bool* left_cordoned);
  // Makes the node's lifecycle conditions say what `nm` with believed `status` is (docs/design.md
  // §2.10): the cached node decides whether anything is to do, then a fresh read and a
  // resourceVersion-guarded patch of nodes/status; a conflict comes back as an error.
  asio::awaitable<Result<void>> sync_lifecycle_conditions(NodeMaintenance nm,
                                                          NodeMaintenanceStatus status);
  // Writes the patch lifecycle_patch() gives for `current` (read fresh), if any; the node as
  // patched, or std::nullopt when nothing was written (nothing to do, or nodes/status patch is
  // forbidden: said once, and the maintenance goes on without the conditions).
  asio::awaitable<Result<std::optional<kube::Node>>> write_lifecycle_conditions(
      const NodeMaintenance& nm, const kube::Node& current, const LifecycleIntent& intent);

  // ---- status.cc ----
  // The status this operator believes `nm` has: its own (ahead of the cache, which lags behind
  // our writes) when it knows this very object, else the cache's. Valid until the next write.
  [[nodiscard]] const NodeMaintenanceStatus& believed_status(const NodeMaintenance& nm) const;
  // The status to reconcile from: believed_status(), after noticing another writer's.
  [[nodiscard]] NodeMaintenanceStatus current_status(const NodeMaintenance& nm);
  // Writes `status` when it differs from the last written one: at once on a phase change,
  // otherwise coalesced; returns when to come back for a delayed write.
  asio::awaitable<Result<std::optional<Clock::time_point>>> write_status(
      NodeMaintenance nm, NodeMaintenanceStatus status);
  void event(const NodeMaintenance& nm, events::Event what,
             std::optional<runtime::ObjectRef> related = std::nullopt);
  void event(runtime::ObjectRef regarding, events::Event what,
             std::optional<runtime::ObjectRef> related = std::nullopt);
  // An Event about what the next status write records, sent once the status is on record
  // (written, or found already so): a successor that finds it there never repeats it, and a
  // write that fails announces nothing.
  void announce(const NodeMaintenance& nm, events::Event what);
  void flush_announcements(const NodeMaintenance& nm);
  [[nodiscard]] log::Logger log_for(const NodeMaintenance& nm) const;

  // ---- drain.cc ----
  // Watches the pods of the node (synced) and tells which must leave.
  asio::awaitable<Result<PodFacts>> pod_facts(const NodeMaintenance& nm);
  asio::awaitable<bool> daemon_set_exists(std::string ns, std::string name, std::string uid);
  // The verdicts for the KubeVirt VMs' pods among facts.leaving (docs/design.md §2.9).
  asio::awaitable<void> vm_facts(const NodeMaintenance& nm, PodFacts& facts);
  // The budget of each pod that must leave and that exactly one budget covers.
  void budget_facts(PodFacts& facts) const;
  // Creates the migration `request` asks for; the answer goes into the maintenance's inbox.
  void start_migration(const NodeMaintenance& nm, MigrationRequest request);
  asio::awaitable<void> create_migration(std::string cr_name, std::string cr_uid,
                                         MigrationRequest request, std::shared_ptr<bool> alive);
  // Deletes the maintenance's migrations that have not finished; their "<ns>/<name>". Without
  // KubeVirt's API, or when it cannot be read, none (the garbage collector deletes them with
  // the maintenance, which owns them).
  asio::awaitable<std::vector<std::string>> cancel_migrations(NodeMaintenance nm);

  asio::any_io_executor executor_;
  kube::Client& client_;
  const OperatorOptions options_;
  const Clock& clock_;
  const log::Logger logger_;

  // The process's shared cache (runtime/cache.h), and what this controller reads of it.
  runtime::Cache& cache_;
  ClusterView view_;

  runtime::EventRecorder recorder_;
  runtime::Controller controller_;
  // Everything remembered about each maintenance between reconciles.
  MaintenanceRegistry registry_;
  // The evictions in flight, and the wake-ups of maintenances waiting for an eviction slot.
  EvictionRunner evictions_;
  // The node leases and the budget slots (made once the Lease caches are declared).
  std::unique_ptr<LeaseKeeper> leases_;
  std::map<std::string, bool> daemon_sets_;  // by DaemonSet uid: exists
  // KubeVirt's API, its default eviction strategy, the VMIs and the operator's migrations.
  KubeVirtReader kubevirt_;
  bool ready_ = false;
  bool stopped_ = false;
  bool said_node_status_forbidden_ = false;
};

}  // namespace nmo::op::internal
