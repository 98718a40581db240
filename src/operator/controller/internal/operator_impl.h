// OperatorImpl: the state behind op::Operator (operator.h), one file per concern:
//   operator.cc      the watches and the plumbing from changes to queued names
//   reconciler.cc    the reconcile of one NodeMaintenance: gathers the inputs of the state
//                    machine (state_machine.h), and executes the actions it decides
//   admission.cc     the facts behind the gates of a Pending maintenance
//   drain.cc         the pods that must leave, and the evictions (answers through the inbox)
//   node_changes.cc  the node patches (cordon and taint, restore, lifecycle conditions)
//   leases.cc        the node lease, the budget slots and housekeeping
//   status.cc        the per-maintenance state, the believed status, the coalesced status
//                    writes and the Events they announce
// and the pure pieces beside them: state_machine.h (the lifecycle), failure.h (typed failure
// kinds), events.h (every Event).
//
// Threading: everything runs on the one executor of the Operator (a single io_context thread in
// the manager), so the members below are only touched between suspension points of coroutines
// on that thread. Eviction coroutines only append their answers to a Maintenance's inbox, after
// checking its `alive` flag; the reconcile applies them, so it is the only writer of the rest.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/time.h"
#include "kube/client/client.h"
#include "operator/api/node_maintenance.h"
#include "operator/controller/events.h"
#include "operator/controller/failure.h"
#include "operator/controller/operator.h"
#include "operator/controller/state_machine.h"
#include "operator/drain/ledger.h"
#include "operator/drain/status_coalescer.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/node/lifecycle_conditions.h"
#include "runtime/cache.h"
#include "runtime/controller.h"
#include "runtime/event_recorder.h"
#include "runtime/own_writes.h"
#include "runtime/reflector.h"
#include "runtime/store.h"

namespace nmo::op::internal {

// The reconcile key that keeps the budget's slot Leases for foreign node-lease holders in step
// and releases node leases we hold without a NodeMaintenance behind them. Not a valid object
// name, so it never collides with a NodeMaintenance.
inline constexpr std::string_view kHousekeepingKey = "#housekeeping";

// The label of slot Leases: "true" on a maintenance's, "foreign" on one a foreign node lease
// uses. The slot cache watches only Leases that carry it, so the leader Lease's renewals (every
// two seconds, in the same namespace) wake no waiting maintenance.
inline constexpr std::string_view kSlotLabel = "nodemaintenance.medik8s.io/slot";

// The indexes of the NodeMaintenance cache: by spec.nodeName, and by the name of that node's
// node lease; of the node cache: "true" for a control-plane node (either role label).
inline constexpr std::string_view kNodeIndex = "node";
inline constexpr std::string_view kLeaseIndex = "lease";
inline constexpr std::string_view kControlPlaneIndex = "control-plane";
// The index of the PodDisruptionBudget cache: by namespace.
inline constexpr std::string_view kNamespaceIndex = "namespace";
// The index of the migration cache: by the maintenance uid of kMigrationOwnerLabel.
inline constexpr std::string_view kOwnerIndex = "owner";
// How this controller's informers are named in errors ("... did not sync").
inline constexpr std::string_view kNodeCache = "the node cache";
inline constexpr std::string_view kPodDisruptionBudgetCache = "the PodDisruptionBudget cache";
// How long start() waits for the caches' first lists, and a drain for its node's pods.
inline constexpr std::chrono::seconds kSyncTimeout{60};
// How long the first drain step that meets a VM waits for KubeVirt's caches; later steps do not
// wait (their VMs are held as unknown until the caches have listed).
inline constexpr std::chrono::seconds kKubeVirtSyncTimeout{10};
// KubeVirt's API, and how long its being served (and its default eviction strategy) is trusted
// before the next drain step that meets a VM asks again; "not served" is asked again every time.
inline constexpr std::string_view kKubeVirtApiRoot = "/apis/kubevirt.io/v1";
inline constexpr std::chrono::seconds kKubeVirtRecheck{30};

using kube::wall_now;

// What the operator remembers about one NodeMaintenance between reconciles. Memory only:
// everything needed after a restart is in the cluster (status, node annotation, Leases).
struct Maintenance {
  std::string uid;
  // The status as the reconciler wants it, and as last written (or read at first sight). The
  // operator means to be the only writer of the status, so these are fresher than the cache,
  // which lags behind our own writes; `status` runs ahead of `written` while a write is
  // coalesced.
  std::optional<NodeMaintenanceStatus> status;
  std::optional<NodeMaintenanceStatus> written;
  // The resourceVersions the cache may show without news: the one seen before our status writes
  // and those they produced, the newest last (the precondition of the next write). A cached
  // object at any other version was written after them; when its status is not `written`,
  // someone else wrote it (a deposed leader that has not noticed yet, an admin) and `written`
  // is no longer what is on record (see current_status()).
  std::vector<std::string> own_versions;
  // The resourceVersion our finalizer was added to: a cache still showing it has not seen the
  // patch yet (a reconcile queued while it was in flight), and the watch will bring it.
  std::string finalizer_added_to;
  // The drain's bookkeeping and the inbox of eviction answers (state_machine.h).
  DrainMemory drain;
  // Set to false when the drain stops (deletion, failure): eviction coroutines still running
  // then drop their answers.
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  // Events announcing what the next status write records (BeginMaintenance, BlockedBy...,
  // BeginEviction, SucceedMaintenance, FailedMaintenance), sent once it is written: a successor
  // (after a crash or a failover) that finds the status on record does not announce them again.
  // At most once, like the actions themselves.
  std::vector<events::Event> announcements;
  // Another writer's node conditions of our types were logged (once per maintenance).
  bool said_foreign_conditions = false;
};

class OperatorImpl {
 public:
  OperatorImpl(asio::any_io_executor executor, kube::Client& client, runtime::Cache& cache,
               OperatorOptions options, const Clock& clock);
  ~OperatorImpl();

  asio::awaitable<Result<void>> start();
  asio::awaitable<void> stop();
  [[nodiscard]] bool ready() const { return ready_; }
  [[nodiscard]] bool healthy(std::chrono::nanoseconds max_stall) const {
    return controller_.healthy(max_stall);
  }
  [[nodiscard]] int active_workers() const { return controller_.active_workers(); }
  [[nodiscard]] const std::optional<std::string>& lease_problem() const { return lease_problem_; }
  [[nodiscard]] std::vector<MaintenanceView> maintenances() const;

 private:
  // ---- operator.cc: watches and queueing ----
  // OpenShift: watches the etcd guard PDB and its pods in openshift-etcd.
  void watch_openshift_guard();
  // Logs a warning when upstream medik8s NMO's webhook or Deployment is still present.
  asio::awaitable<void> warn_about_upstream();
  // Holds the pod informer of `node` if needed and waits until it is synced.
  asio::awaitable<Result<void>> watch_pods(std::string node);
  // Lets go of the pod informers of nodes no NodeMaintenance names any more.
  void prune_watches();
  void enqueue_node(const std::string& node);
  void enqueue_waiting();
  [[nodiscard]] std::shared_ptr<const kube::Node> node(const std::string& name) const;
  [[nodiscard]] std::vector<std::shared_ptr<const kube::Pod>> pods_on(
      const std::string& node) const;
  [[nodiscard]] std::shared_ptr<const kube::Lease> node_lease(const std::string& node) const;
  // The budget slot Lease of the NodeMaintenance named `cr`, or null while it holds none.
  [[nodiscard]] std::shared_ptr<const kube::Lease> slot(const std::string& cr) const;
  // "<lease namespace>/<lease name>" of the node's lease, as Events name it.
  [[nodiscard]] std::string node_lease_ref(const std::string& node) const;
  // The node whose node lease `lease` is: the node of a NodeMaintenance whose lease name it is,
  // else what the Lease tells (node_of_lease()); std::nullopt for a Lease of another kind.
  [[nodiscard]] std::optional<std::string> lease_node(const kube::Lease& lease) const;

  // A reconcile that never finishes (until stop() cancels it), for the /healthz test.
  asio::awaitable<Result<runtime::ReconcileAction>> wedged(std::string key);

  // ---- reconciler.cc ----
  asio::awaitable<Result<runtime::ReconcileAction>> reconcile(std::string key);
  // The inputs of the state machine for `nm` as the caches show them now, with `status`.
  Inputs inputs(const NodeMaintenance& nm, NodeMaintenanceStatus status, Outcomes done);
  // Runs one decision's actions in order, up to the first that fails; the outcomes go into
  // `done`, the earliest requeue into `next`. std::nullopt when they all ran; else what the
  // reconcile returns.
  asio::awaitable<std::optional<Result<runtime::ReconcileAction>>> execute(
      const NodeMaintenance& nm, std::vector<Action> actions, Outcomes& done,
      std::optional<Clock::time_point>& next);
  void log_note(const NodeMaintenance& nm, const LogNote& note) const;
  // Whether we removed our finalizer from this very object (the cache may still show it).
  [[nodiscard]] bool finalized(const NodeMaintenance& nm) const;

  // ---- admission.cc ----
  // The gates of the Pending maintenance `nm` (believed `status`) on `node`.
  GateFacts gate_facts(const NodeMaintenance& nm, const NodeMaintenanceStatus& status,
                       const kube::Node& node);
  // Whether the etcd-quorum gate lets this CR's node go now (with the stability window).
  QuorumStabilityTracker::Verdict quorum_verdict(const NodeMaintenance& nm, const kube::Node& node);
  [[nodiscard]] bool quorum_safe(const kube::Node& node) const;
  // Whether the maintenance holds its node: being admitted, holding a slot, Running or
  // Succeeded (its node is, or is about to be, cordoned and drained).
  [[nodiscard]] bool holds_its_node(const NodeMaintenance& nm) const;

  // ---- leases.cc ----
  // Takes (or renews) the medik8s node lease; false when another holder has it.
  asio::awaitable<Result<bool>> take_node_lease(std::string node);
  // Deletes our node lease; where deleting is forbidden (upstream's RBAC has no lease delete),
  // frees it by an update that clears its holder and times, which every medik8s lease user reads
  // as free (docs/design.md §2.2).
  asio::awaitable<Result<void>> release_node_lease(std::string node);
  // Creates the lease namespace, which a node lease create found missing (upstream's operator
  // creates it at run time; our manifests at install time). Sets or clears lease_problem_.
  asio::awaitable<Result<void>> create_lease_namespace();
  asio::awaitable<Result<void>> take_slot(NodeMaintenance nm);
  asio::awaitable<Result<void>> release_slot(std::string cr_name);
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
  // The one Maintenance of `nm` (a fresh one for a new object under an old name).
  Maintenance& state(const NodeMaintenance& nm);
  // Drops everything remembered about the maintenance `name` (its evictions in flight drop
  // their answers): it is gone, or its cleanup has finished.
  void forget(const std::string& name);
  // Queues every maintenance whose drain waits for the bound across maintenances (an eviction
  // slot freed: an answer applied, a drain stopped, a maintenance forgotten).
  void wake_eviction_waiters();
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
  void start_eviction(const NodeMaintenance& nm, const kube::Pod& pod);
  asio::awaitable<void> evict(std::string cr_name, std::string cr_uid, kube::Pod pod,
                              std::optional<std::int64_t> grace, std::shared_ptr<bool> alive);
  asio::awaitable<bool> daemon_set_exists(std::string ns, std::string name, std::string uid);
  // The verdicts for the KubeVirt VMs' pods among facts.leaving (docs/design.md §2.9).
  asio::awaitable<void> vm_facts(const NodeMaintenance& nm, PodFacts& facts);
  // The VMI behind a VM pod, from the VMI cache; std::nullopt when there is none.
  [[nodiscard]] std::optional<Vmi> read_vmi(const std::string& ns, const std::string& name) const;
  // Declares KubeVirt's informers in the shared cache (once).
  void watch_kubevirt();
  // Refreshes kubevirt_ when older than kKubeVirtRecheck; the first time KubeVirt's API is
  // served, declares its informers (VMIs, the operator's migrations, the KubeVirt CR) in the
  // shared cache and waits for them. An error when it could not.
  asio::awaitable<Result<void>> kubevirt_defaults();
  // The live migrations the operator created for the maintenance of uid `uid` (label
  // kMigrationOwnerLabel), in every namespace, from the migration cache and our own creates it
  // does not show yet; kNotFound when KubeVirt's API is not served.
  asio::awaitable<Result<std::vector<Migration>>> list_migrations(std::string uid);
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

  // The process's shared cache (runtime/cache.h), and the stores of the informers this
  // controller reads from it; start() waits for those in informers_.
  runtime::Cache& cache_;
  std::vector<const runtime::internal::ReflectorLoop*> informers_;
  std::shared_ptr<runtime::Store<NodeMaintenance>> maintenances_;
  // Every Node: one informer for all maintenances (and the plans), not one watch per node.
  std::shared_ptr<runtime::Store<kube::Node>> nodes_;
  std::shared_ptr<runtime::Store<kube::Lease>> node_leases_;
  std::shared_ptr<runtime::Store<kube::Lease>> slots_;
  std::shared_ptr<runtime::Store<kube::Pod>> etcd_pods_;
  // Every PodDisruptionBudget: which cover a refused pod (the Events' and status's messages).
  std::shared_ptr<runtime::Store<kube::PodDisruptionBudget>> budgets_;
  // OpenShift only (config.openshift.io served): the PDBs and pods of openshift-etcd.
  std::shared_ptr<runtime::Store<kube::PodDisruptionBudget>> guard_pdbs_;
  std::shared_ptr<runtime::Store<kube::Pod>> guard_pods_;
  // The pods of each node a maintenance drains, while a NodeMaintenance names the node.
  std::map<std::string, runtime::InformerHandle<kube::Pod>> pod_watches_;

  runtime::EventRecorder recorder_;
  runtime::Controller controller_;
  StatusCoalescer coalescer_;
  QuorumStabilityTracker quorum_;
  std::map<std::string, Maintenance> maintenances_state_;  // by CR name
  // Maintenances whose drain held a due eviction back for --evictions-in-flight-total.
  std::set<std::string> eviction_waiters_;
  // CRs between their admission decision and their Running status in memory (their slot Lease
  // reaches the cache only later), so that a concurrent admission sees their node as held.
  std::set<std::string> admitting_;
  std::map<std::string, bool> daemon_sets_;  // by DaemonSet uid: exists
  // Whether kubevirt.io/v1 is served, and the KubeVirt CR's default eviction strategy.
  struct KubeVirtDefaults {
    bool checked = false;
    Clock::time_point checked_at{};
    bool served = false;
    std::optional<std::string> eviction_strategy;
  };
  KubeVirtDefaults kubevirt_;
  // KubeVirt's informers, declared once its API is served (null before).
  std::shared_ptr<runtime::Store<VmiObject>> vmis_;
  std::shared_ptr<runtime::Store<MigrationObject>> migrations_;
  std::shared_ptr<runtime::Store<KubeVirtConfig>> kubevirt_configs_;
  std::vector<const runtime::internal::ReflectorLoop*> kubevirt_informers_;
  // The migrations we created that the migration cache may not show yet.
  runtime::OwnWrites<MigrationObject> own_migrations_;
  std::map<std::string, std::string> finalized_;  // CR name -> uid whose finalizer we removed
  bool ready_ = false;
  bool stopped_ = false;
  // Set while node leases cannot be taken because the lease namespace is missing.
  std::optional<std::string> lease_problem_;
  bool said_lease_delete_forbidden_ = false;
  bool said_node_status_forbidden_ = false;
};

}  // namespace nmo::op::internal
