// The lifecycle of one NodeMaintenance as a pure function (docs/design.md §2): from what the
// controller knows (the object, the status it believes, the node and its lease as cached, the
// gates' verdicts, the pods that must leave, the answers of earlier actions, the clock) to the
// next status and the ordered actions that make it true. The reconcile (reconciler.cc) gathers
// the inputs (needs_gates() and needs_pods() say which facts cost a look), calls decide() once
// and executes the actions, like drain/eviction_policy.h decides one eviction answer.
//
// The reconcile runs the actions in order and stops at the first that fails (a failed write). An
// Event announcing a status (Announce) comes after the WriteStatus that records it and is sent
// once that status is on record: at once when it is written, else with the later write that
// carries it (a coalesced write, or the retry of a failed one, whose status stays believed). So
// a successor leader that finds the status there never sends it again (docs/design.md §2.7).
//
// A decision never waits for an action's answer. What an action's success changes is in the
// same list after it (the list stops at a failure); an Event that depends on what a node patch
// really changed rides on the patch (Cordon); an answer a later step needs (a lease renewal, what
// the deletion's restore found) is remembered and read by the next reconcile, as the evictions'
// answers are. So one reconcile is gather, decide, execute.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "kube/api/eviction.h"
#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/time.h"
#include "operator/api/node_maintenance.h"
#include "operator/controller/actions.h"
#include "operator/controller/events.h"
#include "operator/drain/ledger.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/gates/node_lease.h"
#include "operator/kubevirt/vm_policy.h"

namespace nmo::op {

// Retry pace of steps that wait on something without a watch event (a write that conflicted).
inline constexpr std::chrono::seconds kConflictRetry{1};
// How soon to try again while the lease namespace is missing and may not be created: a steady
// retry, not the error backoff, so a grant or `kubectl create namespace` takes effect within
// seconds.
inline constexpr std::chrono::seconds kLeaseNamespaceRetry{10};
// How soon a maintenance whose node cache is not synced yet looks again.
inline constexpr std::chrono::milliseconds kNodeSyncRetry{200};
// A held VM's pod is looked at again after this at the latest: the VMI cache wakes the
// maintenance when the VM becomes migratable or gets an eviction strategy, and this also catches
// a changed default in the KubeVirt CR.
inline constexpr std::chrono::seconds kVmRecheck{10};
// While the operator live-migrates a VM, its pod is looked at again after this, and its
// migrations read again no sooner (nothing watches them).
inline constexpr std::chrono::seconds kMigrationRecheck{2};
// A migration created but not listed after this is taken as gone (someone deleted it).
inline constexpr std::chrono::seconds kMigrationListedWithin{30};

// The eviction bookkeeping of one pod.
struct PodEviction {
  bool in_flight = false;
  Clock::time_point retry_at{};  // no eviction before this
  int refusals = 0;              // consecutive refusals (eviction_policy.h)
  // The budget covering the pod when its last eviction was sent ("<namespace>/<name>", "" for
  // none), and that budget's resourceVersion then.
  std::string sent_budget;
  std::string sent_at_version;
  // Refused by this budget ("" when not): a version of it other than `blocked_at_version` that
  // allows a disruption retries the pod before `retry_at` (docs/design.md §2.4).
  std::string blocked_by;
  std::string blocked_at_version;
  // Held as a KubeVirt VM's pod for this reason (announced once per hold); unset when not.
  std::optional<PendingPodReason> vm_hold;
};

// An eviction's answer, as its coroutine reports it into the maintenance's inbox.
struct EvictionReport {
  kube::Pod pod;
  // The API's answer; an error when it could not be asked.
  Result<kube::EvictionResult> answer;
  // The budgets covering the pod, for a refusal by one (they shape the message only).
  std::vector<kube::PodDisruptionBudget> covering;
};

// The operator's live migration of one VMI (docs/design.md §2.9).
struct VmMigration {
  bool creating = false;           // a create is in flight
  std::string created;             // the last one created, until the list shows it
  Clock::time_point created_at{};  // when `created` was
  Clock::time_point retry_at{};    // no new attempt before this
  std::string failure_seen;        // the failed migration whose failure was announced
  std::set<std::string> running;   // seen unfinished: their end is counted once (metrics)
};

// A create's answer, as its coroutine reports it into the maintenance's inbox.
struct MigrationReport {
  MigrationRequest request;
  Result<void> created;
};

// What a RenewNodeLease found, for the next decision.
enum class LeaseRenewal {
  kRenewed,      // taken or renewed
  kHeldByOther,  // another holder has it (the cache changed meanwhile)
};

// What the drain remembers between reconciles (memory only: after a restart the ledger is
// rebuilt from the status, docs/design.md §2.7). decide() takes it and returns the next one.
struct DrainMemory {
  std::optional<DrainLedger> ledger;
  std::map<std::string, PodEviction> evictions;  // by pod uid
  int in_flight = 0;
  // Answers of evictions in flight, applied by the next drain step.
  std::vector<EvictionReport> inbox;
  // The API's message of the last refused eviction, for status.lastError.
  std::string last_drain_error;
  // While another holder has the node lease: no new check (and count) before this.
  Clock::time_point lease_recheck_at{};
  // A step of the admission failed (TakeSlot, TakeNodeLease): no new try before this. The slot
  // it took and gave back would otherwise wake it at once, a retry storm while the step keeps
  // failing.
  Clock::time_point admission_retry_at{};
  // The answer of the last RenewNodeLease, until a decision applies it.
  std::optional<LeaseRenewal> renewal;
  // The last drain step held a due eviction back for the bound across maintenances: a slot
  // freed by any of them wakes this one.
  bool waits_for_total = false;
  // The operator's live migrations, by "<namespace>/<vmi>", and the answers of creates.
  std::map<std::string, VmMigration> migrations;
  std::vector<MigrationReport> migration_inbox;
};

// The gates of a Pending maintenance (docs/design.md §2.2), as the gates library judged them.
struct GateFacts {
  NodeLeaseState lease = NodeLeaseState::kFree;  // this node's lease
  QuorumStabilityTracker::Verdict quorum{.open = true, .recheck_at = std::nullopt};
  bool admitted = false;    // decide_admissions() admits this maintenance now
  bool holds_slot = false;  // its slot Lease exists (an earlier run took it)
  int slots_used = 0;
  std::string slots_in_use;  // "holder (node n), ..." for the log
  // When the first valid node lease of another holder (this node's, or one that fills the
  // budget) runs out by time; nothing writes the Lease then, so nothing else wakes a waiter.
  std::optional<kube::Time> foreign_lease_expiry;
};

// How long the disruption controller counts a granted eviction whose pod was not deleted
// (status.disruptedPods) as a disruption: its DeletionTimeout.
inline constexpr std::chrono::minutes kGrantedEvictionTimeout{2};

// The PodDisruptionBudget of a pod that exactly one budget covers, as cached.
struct BudgetFact {
  std::string key;  // "<namespace>/<name>"
  std::string resource_version;
  bool allows = false;  // kube::PodDisruptionBudget::allows_disruption()
  std::int32_t disruptions_allowed = 0;
  // When the API server granted this pod's eviction (status.disruptedPods); the pod still
  // exists, so the request that asked was cut off before it deleted the pod.
  std::optional<kube::Time> granted_at;
  // When the controller's watch saw the budget start allowing a disruption, while it does.
  std::optional<Clock::time_point> allowing_since;
};

// The pods of the node under maintenance (its pod cache is synced).
struct PodFacts {
  std::vector<kube::Pod> leaving;  // the pods that must leave (pod_policy.h)
  std::int64_t bound = 0;          // every pod bound to the node
  // By pod uid: the verdicts for the KubeVirt VMs' pods among `leaving` (docs/design.md §2.9),
  // read only while the kubevirt.io/v1 API is served; a pod without one is evicted as any pod.
  std::map<std::string, VmVerdict> vms;
  // By "<namespace>/<vmi>": the operator's migrations of the VMs it migrates for this
  // maintenance (VmAction::kMigrate), lowest attempt first; read only while there are such VMs.
  std::map<std::string, std::vector<Migration>> migrations;
  // Why they could not be read ("" when they were): no migration is started meanwhile.
  std::string migrations_error;
  // By pod uid: the budget of each pod among `leaving` that exactly one budget covers.
  std::map<std::string, BudgetFact> budgets;
};

// What the node restore found (docs/design.md §2.6).
struct RestoreOutcome {
  bool uncordoned = false;     // the patch really uncordoned the node
  bool left_cordoned = false;  // cordoned before the maintenance, and stays so
};

// What the deletion gave back (docs/design.md §2.6), remembered until the finalizer goes: the
// decision that removes it announces what these found.
struct Removal {
  // The deletion's CancelMigrations ran: the unfinished migrations it deleted ("<ns>/<name>").
  std::optional<std::vector<std::string>> cancelled;
  // The deletion's RestoreNode ran, and what it found.
  std::optional<RestoreOutcome> restored;
};

// Another NodeMaintenance of the same node, with the status the controller believes it has.
struct Sibling {
  std::string name;
  std::string uid;
  kube::Time created;
  NodeMaintenanceStatus status;
};

// The clock, read once by the caller: the monotonic one for timers, the wall for the status.
struct Now {
  Clock::time_point tick;
  kube::Time wall;
};

struct Inputs {
  NodeMaintenance nm;  // as cached
  // The status the controller believes (ahead of the cache), and the last one on record.
  NodeMaintenanceStatus status;
  NodeMaintenanceStatus on_record;
  bool has_finalizer = false;
  // Our finalizer patch went to exactly this resourceVersion (the cache has not caught up).
  bool finalizer_in_flight = false;
  // Its finalizer was removed by us already (the cache may still show it).
  bool finalized = false;
  std::vector<Sibling> siblings;
  bool node_synced = false;        // the node cache has listed (the node may still be missing)
  std::optional<kube::Node> node;  // std::nullopt: the node does not exist
  std::optional<kube::Lease> node_lease;  // the node's medik8s node lease, as cached
  bool holds_slot = false;                // its slot Lease is in the cache
  // Gathered when needs_gates() / needs_pods() say so, else null; borrowed (they outlive the
  // call).
  const GateFacts* gates = nullptr;
  const PodFacts* pods = nullptr;
  DrainMemory drain;
  Removal removal;
  // Configuration (OperatorOptions).
  std::chrono::seconds node_lease_renew_interval = kNodeLeaseRenewInterval;
  std::chrono::seconds etcd_quorum_stable_for{30};
  int max_parallel_maintenances = 1;
  int evictions_in_flight = 32;
  int evictions_in_flight_total = 64;
  int evictions_in_flight_elsewhere = 0;  // the other maintenances' evictions in flight
  std::string node_lease_ref;  // "<namespace>/<name>" of the node lease, as Events name it
  Now now;
};

struct Decision {
  NodeMaintenanceStatus status;  // the status the controller believes next
  std::vector<Action> actions;   // in order
  DrainMemory drain;             // the drain's memory next
};

// Whether decide() reads the gates for a maintenance believed to have `status` (not being
// deleted): while it has not been admitted.
[[nodiscard]] bool needs_gates(const NodeMaintenanceStatus& status);

// Whether decide() reads the pods of the node: a maintenance that holds its node, or one whose
// gates (when needs_gates()) admit it now.
[[nodiscard]] bool needs_pods(const NodeMaintenanceStatus& status, const GateFacts* gates);

// The next step of the maintenance `in.nm` (not being deleted).
[[nodiscard]] Decision decide(Inputs in);

// The next step of the deletion of `in.nm` (docs/design.md §2.6).
[[nodiscard]] Decision decide_deletion(Inputs in);

// The maintenance that keeps the node against `nm` (docs/design.md §2.7): an admitted sibling
// (Running or Succeeded) first, else the oldest older one; never a sibling failed as duplicate.
[[nodiscard]] std::optional<std::string> duplicate_winner(const NodeMaintenance& nm,
                                                          const std::vector<Sibling>& siblings);

}  // namespace nmo::op
