#include "operator/controller/state_machine.h"

#include <algorithm>
#include <utility>

#include "operator/api/failure.h"
#include "operator/drain/eviction_policy.h"
#include "operator/drain/pod_policy.h"
#include "operator/node/node_patch.h"

namespace nmo::op {
namespace {

// How often a node lease found held by another holder is checked (and counted) again.
constexpr std::chrono::seconds kLeaseConflictRecheck{5};
// A pod whose eviction could not even be sent (connection, timeout) is tried again after this.
constexpr std::chrono::seconds kTransportRetry{5};
// After an accepted eviction, the pod is evicted again only if it is still there, not
// terminating, this long after (an eviction whose deletion never came).
constexpr std::chrono::seconds kAcceptedRecheck{30};
// A terminating pod's message counts the seconds: look again while it lingers.
constexpr std::chrono::seconds kTerminatingRecheck{5};
// A pod whose granted eviction was never carried out is looked at again this long after the
// disruption controller should have dropped the grant, should no change of the budget come first.
constexpr std::chrono::seconds kGrantedEvictionMargin{1};
// A drain held back by the bound across maintenances looks again after this, should no freed
// slot wake it first.
constexpr std::chrono::seconds kTotalBoundRecheck{1};
// A maintenance waiting for another holder's node lease looks again this long after the Lease
// runs out (a Lease is valid up to and including renewTime + leaseDurationSeconds).
constexpr std::chrono::seconds kForeignLeaseExpiryMargin{1};

Condition condition(std::string_view type, bool status, std::string_view reason,
                    std::string message) {
  return Condition{.type = std::string(type),
                   .status = status ? ConditionStatus::kTrue : ConditionStatus::kFalse,
                   .reason = std::string(reason),
                   .message = std::move(message)};
}

bool older_than(const Sibling& a, const NodeMaintenance& b) {
  const kube::Time tb = b.meta.creation_timestamp.value_or(kube::Time{});
  if (a.created != tb) return a.created < tb;
  return a.name < b.meta.name;
}

bool older_than(const Sibling& a, const Sibling& b) {
  if (a.created != b.created) return a.created < b.created;
  return a.name < b.name;
}

LedgerSeed seed_of(const NodeMaintenanceStatus& status) {
  LedgerSeed seed;
  seed.total_pods = status.total_pods;
  seed.eviction_pods = status.eviction_pods;
  if (!status.pending_pods_refs.empty()) {
    for (const PendingPodRef& ref : status.pending_pods_refs) {
      seed.pending.push_back(
          LedgerSeed::PendingPod{.namespace_ = ref.namespace_,
                                 .name = ref.name,
                                 .reason = ref.reason.value_or(PendingPodReason::kEvicting),
                                 .message = ref.message});
    }
  } else {
    for (const std::string& name : status.pending_pods) {
      seed.pending.push_back(LedgerSeed::PendingPod{.namespace_ = "", .name = name});
    }
  }
  // A status written by upstream medik8s NMO (no Drained condition, which this operator writes
  // with its first counters) counts in evictionPods the pods to evict, those still pending
  // included; the ledger counts the pods gone (docs/design.md §2.8).
  if (find_condition(status.conditions, kConditionDrained) == nullptr) {
    seed.eviction_pods = std::max<std::int64_t>(
        status.eviction_pods - static_cast<std::int64_t>(seed.pending.size()), 0);
  }
  return seed;
}

std::string pod_key(const kube::Pod& pod) { return pod.meta.namespace_ + "/" + pod.meta.name; }

// The Blocked condition's message during the stability window.
std::string etcd_quorum_stabilizing_message(std::chrono::seconds stable_for) {
  return "etcd quorum is safe; waiting until it has stayed so for " +
         std::to_string(stable_for.count()) + "s";
}

// Builds one Decision. Events announcing a status wait in `announcements_` for the next
// write(), and follow it.
class Step {
 public:
  explicit Step(Inputs& in)
      : in_(in), d_{.status = in.status, .actions = {}, .drain = std::move(in.drain)} {}

  Decision finish() && { return std::move(d_); }
  NodeMaintenanceStatus& status() { return d_.status; }
  DrainMemory& drain() { return d_.drain; }

  // This decision patches the node (Cordon): no eviction starts before the patch has worked,
  // which the node's change in the cache then shows.
  void patch_node(actions::Cordon cordon) {
    add(std::move(cordon));
    patches_node_ = true;
  }
  [[nodiscard]] bool patches_node() const { return patches_node_; }
  // This decision takes the node lease (TakeNodeLease): the cache cannot show it yet.
  void take_node_lease() {
    add(actions::TakeNodeLease{});
    takes_node_lease_ = true;
  }
  [[nodiscard]] bool takes_node_lease() const { return takes_node_lease_; }

  void add(Action action) { d_.actions.push_back(std::move(action)); }
  void event(events::Event what, std::optional<kube::Pod> related = std::nullopt) {
    add(actions::EmitEvent{.event = std::move(what), .on_node = false, .pod = std::move(related)});
  }
  void announce(events::Event what) { announcements_.push_back(std::move(what)); }
  void write(bool wake_for_delayed_write = true) {
    add(actions::WriteStatus{.status = d_.status,
                             .wake_for_delayed_write = wake_for_delayed_write});
    for (events::Event& what : announcements_) add(actions::Announce{.event = std::move(what)});
    announcements_.clear();
  }
  void requeue(Clock::time_point at) { add(actions::Requeue{.at = at}); }
  void info(std::string message, std::vector<log::Field> fields = {}) {
    add(actions::Log{.note = LogNote{.level = LogNote::Level::kInfo,
                                     .message = std::move(message),
                                     .fields = std::move(fields)}});
  }
  void warn(std::string message, std::vector<log::Field> fields = {}) {
    add(actions::Log{.note = LogNote{.level = LogNote::Level::kWarn,
                                     .message = std::move(message),
                                     .fields = std::move(fields)}});
  }

  // The failure into the status (unless it records it already), logged, and FailedMaintenance
  // announced for when it is written.
  void record_failure(FailureKind kind, std::string message, bool undone) {
    NodeMaintenanceStatus& status = d_.status;
    if (failure_of(status) == kind && status.last_error == message) return;
    status.phase = Phase::kFailed;
    status.last_error = message;
    set_condition(status.conditions, failure_condition(kind, message), in_.now.wall);
    warn("maintenance failed",
         {{"error", message}, {"reason", failure_reason(kind)}, {"undone", undone}});
    announce(events::failed_maintenance(std::move(message)));
  }

  // Fails the maintenance (docs/design.md §2.7): `undo` restores the node and gives the node
  // lease and the slot back first (lost lease, node gone), as upstream does.
  void fail(FailureKind kind, std::string message, bool undo) {
    if (undo) {
      add(actions::StopEvictions{});
      add(actions::CancelMigrations{});
      add(actions::RestoreNode{});
      add(actions::ReleaseNodeLease{});
      add(actions::ReleaseSlot{});
      set_condition(
          d_.status.conditions,
          condition(kConditionCordoned, false, kReasonRestored, "the maintenance was undone"),
          in_.now.wall);
    }
    record_failure(kind, std::move(message), undo);
    write();
  }

 private:
  Inputs& in_;
  Decision d_;
  std::vector<events::Event> announcements_;
  bool patches_node_ = false;
  bool takes_node_lease_ = false;
};

// Applies the answers in the inbox: the ledger, the retry times, lastError, DrainError.
void apply_evictions(const Inputs& in, Step& step) {
  DrainMemory& drain = step.drain();
  std::vector<EvictionReport> reports;
  reports.swap(drain.inbox);
  for (EvictionReport& report : reports) {
    const kube::Pod& pod = report.pod;
    PodEviction& eviction = drain.evictions[pod.meta.uid];
    eviction.in_flight = false;
    --drain.in_flight;
    const log::Field pod_field("pod", pod_key(pod));
    if (!report.answer) {
      step.warn("could not send an eviction; retrying",
                {pod_field, {"error", report.answer.error().describe()}});
      eviction.retry_at = in.now.tick + kTransportRetry;
      drain.ledger->set_pending(pod.meta.uid, PendingPodReason::kError,
                                report.answer.error().describe());
      continue;
    }
    const EvictionDecision decision =
        decide_eviction(*report.answer, report.covering, eviction.refusals);
    eviction.refusals = decision.refusals;
    // Refused by the one budget it was sent under: a version of that budget newer than the one
    // it was sent at, and allowing a disruption, retries it early (docs/design.md §2.4).
    const bool by_budget = decision.next == EvictionNext::kRetry &&
                           decision.reason == PendingPodReason::kBlockedByPdb &&
                           !eviction.sent_budget.empty();
    eviction.blocked_by = by_budget ? eviction.sent_budget : std::string();
    eviction.blocked_at_version = by_budget ? eviction.sent_at_version : std::string();
    switch (decision.next) {
      case EvictionNext::kGone:
        drain.ledger->mark_gone(pod.meta.uid);
        step.info("pod already gone", {pod_field});
        break;
      case EvictionNext::kWaitForDeletion:
        drain.ledger->set_pending(pod.meta.uid, decision.reason, decision.message);
        // The pod's deletion reaches the cache a moment later; don't ask twice meanwhile.
        eviction.retry_at = in.now.tick + kAcceptedRecheck;
        step.info("pod evicted", {pod_field});
        break;
      case EvictionNext::kRetry:
        drain.ledger->set_pending(pod.meta.uid, decision.reason, decision.message);
        eviction.retry_at = in.now.tick + decision.retry_after;
        step.info("eviction refused; will retry",
                  {pod_field,
                   {"reason", to_string(decision.reason)},
                   {"message", decision.message},
                   {"retry_after_ms", static_cast<std::int64_t>(decision.retry_after.count())}});
        // A pod waiting for a retry needs a reconcile at its time even without a watch event.
        step.add(actions::WakeAfter{.after = decision.retry_after});
        break;
    }
    if (decision.drain_error) {
      drain.last_drain_error = decision.api_message;
      step.event(events::drain_error(decision.api_message), pod);
    }
  }
}

// Applies the answers of migration creates (docs/design.md §2.9): a created migration is
// running; a refused create is retried after migration_retry_delay(), with a DrainError.
void apply_migration_reports(const Inputs& in, Step& step) {
  DrainMemory& drain = step.drain();
  std::vector<MigrationReport> reports;
  reports.swap(drain.migration_inbox);
  for (MigrationReport& report : reports) {
    const MigrationRequest& request = report.request;
    VmMigration& memory = drain.migrations[request.namespace_ + "/" + request.vmi];
    memory.creating = false;
    const std::string key = request.namespace_ + "/" + request.name;
    // Already there: an earlier create got through (its answer was lost), or a restarted
    // operator asks again for a name it chose before.
    if (report.created || report.created.error().code == ErrorCode::kAlreadyExists) {
      memory.created = request.name;
      memory.created_at = in.now.tick;
      memory.running.insert(request.name);
      step.info("live migration created", {{"migration", key}, {"attempt", request.attempt}});
      continue;
    }
    const std::string message =
        "could not create live migration " + key + ": " + report.created.error().describe();
    memory.retry_at = in.now.tick + migration_retry_delay(request.attempt);
    drain.last_drain_error = message;
    step.warn("could not create a live migration; retrying", {{"error", message}});
    step.event(events::drain_error(message));
  }
}

// How many of the maintenance's migrations run or are being created, before this step starts
// any (the bound of kMaxMigrationsPerMaintenance).
int running_migrations(const Inputs& in, const DrainMemory& drain) {
  int running = 0;
  for (const auto& [key, memory] : drain.migrations) {
    if (memory.creating || !memory.created.empty()) ++running;
  }
  for (const auto& [key, migrations] : in.pods->migrations) {
    const auto memory = drain.migrations.find(key);
    const bool counted = memory != drain.migrations.end() &&
                         (memory->second.creating || !memory->second.created.empty());
    if (!counted && !migrations.empty() && !migrations.back().finished()) ++running;
  }
  return running;
}

// A KubeVirt VM's pod the drain must not evict (docs/design.md §2.9): pending with why, a
// Warning once per hold, and looked at again after kVmRecheck at the latest.
void hold_vm(const Inputs& in, Step& step, const kube::Pod& pod, const VmVerdict& verdict) {
  DrainMemory& drain = step.drain();
  drain.ledger->set_pending(pod.meta.uid, verdict.held_as, verdict.detail);
  PodEviction& eviction = drain.evictions[pod.meta.uid];
  if (eviction.vm_hold != verdict.held_as) {
    eviction.vm_hold = verdict.held_as;
    step.warn("holding a VM's pod: its eviction would shut the VM down",
              {{"pod", pod_key(pod)}, {"reason", verdict.reason}, {"message", verdict.detail}});
    step.event(events::vm_held(verdict.reason, verdict.detail), pod);
  }
  step.requeue(in.now.tick + kVmRecheck);
}

// The pod of a VM the operator live-migrates is pending for `message`.
void migrating(DrainLedger& ledger, const kube::Pod& pod, std::string message) {
  ledger.set_pending(pod.meta.uid, PendingPodReason::kMigratingVm, std::move(message));
}

// Follows the operator's migration of the VMI `key` that is under way or has ended
// (docs/design.md §2.9): the pod's pending reason, the end counted once, a failure announced
// once with its retry time. `ours`: its migrations as listed, lowest attempt first. True when a
// new migration may be started now.
bool follow_migration(const Inputs& in, Step& step, const kube::Pod& pod, const std::string& key,
                      VmMigration& memory, const std::vector<Migration>& ours) {
  DrainMemory& drain = step.drain();
  DrainLedger& ledger = *drain.ledger;
  const Migration* latest = ours.empty() ? nullptr : &ours.back();
  if (!memory.created.empty()) {
    const bool shown = std::any_of(ours.begin(), ours.end(),
                                   [&](const Migration& m) { return m.name == memory.created; });
    if (shown || in.now.tick >= memory.created_at + kMigrationListedWithin) memory.created.clear();
  }
  if (memory.creating || !memory.created.empty()) {
    migrating(ledger, pod, "starting live migration of VMI " + key);
    return false;
  }
  if (latest != nullptr && !latest->finished()) {
    memory.running.insert(latest->name);
    migrating(ledger, pod,
              "live migration " + latest->name + " of VMI " + key + ": " +
                  (latest->phase.empty() ? std::string("Pending") : latest->phase));
    return false;
  }
  if (latest != nullptr && memory.running.erase(latest->name) > 0) {
    step.add(actions::MigrationEnded{.succeeded = latest->succeeded()});
  }
  if (latest != nullptr && latest->succeeded()) {
    migrating(ledger, pod,
              "VMI " + key + " live-migrated (migration " + latest->name +
                  "); waiting for its pod to end");
    return false;
  }
  if (latest == nullptr || !latest->failed()) {
    // A create that was refused waits for its retry.
    if (memory.retry_at <= in.now.tick) return true;
    step.requeue(memory.retry_at);
    return false;
  }
  const int failures = static_cast<int>(
      std::count_if(ours.begin(), ours.end(), [](const Migration& m) { return m.failed(); }));
  const std::string failed = "live migration " + latest->namespace_ + "/" + latest->name +
                             " of VMI " + key + " failed" +
                             (latest->failure.empty() ? "" : ": " + latest->failure);
  if (memory.failure_seen != latest->name) {
    memory.failure_seen = latest->name;
    const std::chrono::seconds delay = migration_retry_delay(failures);
    memory.retry_at = in.now.tick + delay;
    const std::string message = failed + "; attempt " + std::to_string(failures + 1) + " in " +
                                std::to_string(delay.count()) + "s";
    drain.last_drain_error = message;
    step.warn("a live migration failed; retrying",
              {{"migration", latest->name}, {"failures", failures}, {"error", message}});
    step.event(events::migration_failed(message), pod);
  }
  if (memory.retry_at <= in.now.tick) return true;
  migrating(ledger, pod,
            failed + "; trying again (" + std::to_string(failures) + " failed so far)");
  step.requeue(memory.retry_at);
  return false;
}

// A KubeVirt VM's pod whose eviction would shut the VM down, and that can live-migrate
// (docs/design.md §2.9): the operator migrates the VM, at most kMaxMigrationsPerMaintenance at
// once and none once the maintenance has failed, retrying a failed migration after
// migration_retry_delay(); the pod ends by itself once the VM has left. `may_start`: the drain's
// start is on record and the maintenance has not failed. `running` counts the migrations under
// way; one started here adds to it. `hold`: kHoldAnnotation's value when set (nothing new starts).
void migrate_vm(const Inputs& in, Step& step, const kube::Pod& pod, bool may_start,
                const std::string* hold, int& running) {
  DrainMemory& drain = step.drain();
  DrainLedger& ledger = *drain.ledger;
  const std::string vmi = vmi_name(pod);
  const std::string key = pod.meta.namespace_ + "/" + vmi;
  VmMigration& memory = drain.migrations[key];
  drain.evictions[pod.meta.uid].vm_hold.reset();
  step.requeue(in.now.tick + kMigrationRecheck);

  static const std::vector<Migration> kNone;
  const auto listed = in.pods->migrations.find(key);
  const std::vector<Migration>& ours = listed != in.pods->migrations.end() ? listed->second : kNone;
  if (!follow_migration(in, step, pod, key, memory, ours)) return;
  if (!in.pods->migrations_error.empty()) {
    ledger.set_pending(
        pod.meta.uid, PendingPodReason::kError,
        "cannot read the live migrations of VMI " + key + ": " + in.pods->migrations_error);
    return;
  }
  if (hold != nullptr) {
    ledger.set_pending(pod.meta.uid, PendingPodReason::kHeld,
                       "live migration of VMI " + key + " held: " + *hold);
    return;
  }
  if (!may_start) {
    migrating(ledger, pod, "VMI " + key + " is to be live-migrated");
    return;
  }
  if (running >= kMaxMigrationsPerMaintenance) {
    migrating(ledger, pod,
              "waiting to live-migrate VMI " + key + ": " + std::to_string(running) +
                  " live migrations of this maintenance are running");
    return;
  }
  int attempt = 1;
  for (const Migration& m : ours) attempt = std::max(attempt, m.attempt + 1);
  const std::string name = migration_name(vmi, in.nm.meta.uid, attempt);
  memory.creating = true;
  ++running;
  step.add(actions::CreateMigration{
      .request = MigrationRequest{
          .namespace_ = pod.meta.namespace_, .name = name, .vmi = vmi, .attempt = attempt}});
  migrating(ledger, pod, "starting live migration " + name + " of VMI " + key);
  step.info("live-migrating a VM instead of evicting its pod",
            {{"pod", pod_key(pod)}, {"migration", name}, {"attempt", attempt}});
  step.event(events::migrating_vm(key, in.nm.spec.node_name, name), pod);
}

// The conditions of a Succeeded maintenance: Drained, Ready, not Blocked.
void set_succeeded_conditions(NodeMaintenanceStatus& status, kube::Time now) {
  set_condition(status.conditions, condition(kConditionDrained, true, kReasonDrained, ""), now);
  set_condition(status.conditions, condition(kConditionReady, true, kReasonSucceeded, ""), now);
  set_condition(status.conditions, condition(kConditionBlocked, false, kReasonDrained, ""), now);
}

// The ledger of the drain (restored from the status after a restart), the answers in the
// inboxes applied, and the pods that must leave synced into it: the drain's start announced, or
// the newcomers since the last step.
void sync_ledger(const Inputs& in, Step& step) {
  const NodeMaintenance& nm = in.nm;
  NodeMaintenanceStatus& status = step.status();
  DrainMemory& drain = step.drain();
  const bool fresh = !drain.ledger.has_value();
  if (fresh) {
    const bool restored =
        status.total_pods > 0 || status.phase == Phase::kSucceeded || !status.pending_pods.empty();
    drain.ledger = restored ? DrainLedger::restore(seed_of(status)) : DrainLedger();
  }
  apply_evictions(in, step);
  apply_migration_reports(in, step);
  DrainLedger& ledger = *drain.ledger;
  const bool announced = find_condition(status.conditions, kConditionDrained) != nullptr;
  const LedgerChanges changes = ledger.sync(in.pods->leaving);
  if (!announced && status.phase == Phase::kSucceeded) {
    // Drained by upstream medik8s NMO before it was replaced (docs/design.md §2.8): nothing to
    // announce, the conditions say what the phase says.
    set_succeeded_conditions(status, in.now.wall);
  } else if (!announced) {
    step.announce(events::begin_eviction(ledger.total_pods(), nm.spec.node_name));
    set_condition(status.conditions, condition(kConditionDrained, false, kReasonDraining, ""),
                  in.now.wall);
    step.info("drain started", {{"pods_to_evict", ledger.total_pods()}});
  } else if (!fresh) {
    for (const LedgerPodRef& pod : changes.newcomers) {
      const std::string key = pod.namespace_ + "/" + pod.name;
      step.info("a pod arrived on the node; it will be evicted too", {{"pod", key}});
      if (status.phase == Phase::kSucceeded) {
        step.event(events::begin_newcomer_eviction(key, nm.spec.node_name));
      }
    }
  }
}

// What each budget still allows this decision to send early, by key: the disruptions it allows
// less the evictions under it in flight.
using BudgetRoom = std::map<std::string, std::int32_t>;

std::int32_t& room_of(const DrainMemory& drain, BudgetRoom& room, const BudgetFact& budget) {
  auto [at, fresh] = room.try_emplace(budget.key, budget.disruptions_allowed);
  if (fresh) {
    for (const auto& [uid, eviction] : drain.evictions) {
      if (eviction.in_flight && eviction.sent_budget == budget.key) --at->second;
    }
  }
  return at->second;
}

const BudgetFact* budget_of(const Inputs& in, const kube::Pod& pod) {
  const auto found = in.pods->budgets.find(pod.meta.uid);
  return found != in.pods->budgets.end() ? &found->second : nullptr;
}

// Whether the budget that refused the pod has changed since and allows a disruption, with room
// left in this decision: the refusal's backoff is cut short (docs/design.md §2.4). A cache still
// showing the version the refusal contradicted is no news.
bool reopened(const PodEviction& eviction, const BudgetFact* budget, const DrainMemory& drain,
              BudgetRoom& room) {
  if (budget == nullptr || eviction.blocked_by.empty() || budget->key != eviction.blocked_by ||
      !budget->allows || budget->resource_version == eviction.blocked_at_version) {
    return false;
  }
  return room_of(drain, room, *budget) > 0;
}

// The API server granted the pod's eviction but the request was cut off before it deleted the
// pod (status.disruptedPods): the budget counts the pod as disrupted until the disruption
// controller drops the grant, kGrantedEvictionTimeout after it, and refuses another eviction
// meanwhile. Nothing is sent; the budget's change when it frees the grant retries the pod
// (docs/design.md §2.4). True when the pod is held so.
bool hold_granted(const Inputs& in, Step& step, const kube::Pod& pod, const LedgerPod& entry,
                  PodEviction& eviction, const BudgetFact* budget) {
  if (budget == nullptr || !budget->granted_at || budget->allows ||
      entry.reason == PendingPodReason::kWaitingForTermination) {
    return false;
  }
  const kube::Time frees_at = *budget->granted_at + kGrantedEvictionTimeout;
  if (frees_at <= in.now.wall) return false;
  step.drain().ledger->set_pending(pod.meta.uid, PendingPodReason::kBlockedByPdb,
                                   "eviction granted by PodDisruptionBudget " + budget->key +
                                       " at " + kube::format_time(*budget->granted_at) +
                                       " but the pod was not deleted; the budget frees it by " +
                                       kube::format_time(frees_at));
  eviction.blocked_by = budget->key;
  eviction.blocked_at_version = budget->resource_version;
  eviction.retry_at =
      std::max(eviction.retry_at,
               in.now.tick + std::chrono::duration_cast<Clock::duration>(frees_at - in.now.wall) +
                   kGrantedEvictionMargin);
  step.requeue(eviction.retry_at);
  return true;
}

// Evictions that are due, bounded per node and across maintenances; terminating pods are only
// watched, VMs' pods held or migrated. None before the drain's start (Running, totalPods) is on
// record: a successor must find the counters of pods already evicted, and must not announce the
// drain again. None in a decision that patches the node: an eviction from a node that is not
// cordoned lets the pod come back.
void start_due_evictions(const Inputs& in, Step& step) {
  DrainMemory& drain = step.drain();
  DrainLedger& ledger = *drain.ledger;
  const std::vector<kube::Pod>& leaving = in.pods->leaving;
  const bool recorded = find_condition(in.on_record.conditions, kConditionDrained) != nullptr;
  if (!leaving.empty() && step.patches_node()) {
    // The node's change wakes the maintenance once the patch has worked; this only guards
    // against a patch that found the node right already (the cache was behind).
    step.requeue(in.now.tick + kNodeSyncRetry);
  } else if (!leaving.empty() && !recorded) {
    step.requeue(in.now.tick);
  }
  const bool may_start = recorded && !step.patches_node();
  drain.waits_for_total = false;
  const bool may_migrate = may_start && step.status().phase != Phase::kFailed;
  // Held (a MaintenancePlan outside its window): nothing new starts until the annotation goes,
  // which is a change of the object and wakes the maintenance.
  const std::string* hold = in.nm.meta.annotations.find(kHoldAnnotation);
  int migrations = running_migrations(in, drain);
  BudgetRoom room;
  for (const kube::Pod& pod : leaving) {
    const LedgerPod* entry = ledger.find(pod.meta.uid);
    if (entry == nullptr || entry->gone) continue;
    if (is_terminating(pod)) {
      ledger.set_pending(pod.meta.uid, PendingPodReason::kWaitingForTermination,
                         termination_message(pod, in.now.wall));
      step.requeue(in.now.tick + kTerminatingRecheck);
      continue;
    }
    if (const auto vm = in.pods->vms.find(pod.meta.uid); vm != in.pods->vms.end()) {
      if (vm->second.action == VmAction::kHold) {
        hold_vm(in, step, pod, vm->second);
        continue;
      }
      if (vm->second.action == VmAction::kMigrate) {
        migrate_vm(in, step, pod, may_migrate, hold, migrations);
        continue;
      }
    }
    PodEviction& eviction = drain.evictions[pod.meta.uid];
    eviction.vm_hold.reset();
    if (eviction.in_flight) continue;
    if (hold != nullptr) {
      ledger.set_pending(pod.meta.uid, PendingPodReason::kHeld, "eviction held: " + *hold);
      continue;
    }
    const BudgetFact* budget = budget_of(in, pod);
    if (hold_granted(in, step, pod, *entry, eviction, budget)) continue;
    const bool early = eviction.retry_at > in.now.tick;
    if (early && !reopened(eviction, budget, drain, room)) {
      step.requeue(eviction.retry_at);
      continue;
    }
    if (drain.in_flight >= in.evictions_in_flight || !may_start) continue;
    if (drain.in_flight + in.evictions_in_flight_elsewhere >= in.evictions_in_flight_total) {
      drain.waits_for_total = true;
      continue;
    }
    // A retry keeps the pod's last reason (BlockedByPDB, EvictionDeferred, ...) until the
    // answer comes: the status must not flicker to Evicting on every attempt.
    eviction.in_flight = true;
    ++drain.in_flight;
    eviction.sent_budget = budget != nullptr ? budget->key : std::string();
    eviction.sent_at_version = budget != nullptr ? budget->resource_version : std::string();
    std::optional<Clock::duration> allowed_for;
    if (early) {
      --room_of(drain, room, *budget);
      if (budget->allowing_since) allowed_for = in.now.tick - *budget->allowing_since;
    }
    step.add(actions::StartEviction{.pod = pod, .budget_allowed_for = allowed_for});
  }
  // Woken when a slot frees (EvictionRunner::wake_waiters()); the requeue only guards
  // against a missed wake.
  if (drain.waits_for_total) step.requeue(in.now.tick + kTotalBoundRecheck);
}

// The status counters from the ledger, lastError, and the Blocked condition of a Running drain.
void fill_counters(const Inputs& in, Step& step) {
  NodeMaintenanceStatus& status = step.status();
  DrainMemory& drain = step.drain();
  const DrainLedger& ledger = *drain.ledger;
  status.total_pods = ledger.total_pods();
  status.eviction_pods = ledger.eviction_pods();
  status.drain_progress = ledger.drain_progress();
  status.pending_pods = ledger.pending_pod_names();
  status.pending_pods_refs.clear();
  bool blocked = false;
  std::string blocked_reason;
  for (const LedgerPod& pod : ledger.pending_pods()) {
    status.pending_pods_refs.push_back(PendingPodRef{.namespace_ = pod.namespace_,
                                                     .name = pod.name,
                                                     .reason = pod.reason,
                                                     .message = pod.message});
    if (pod.reason != PendingPodReason::kEvicting &&
        pod.reason != PendingPodReason::kWaitingForTermination) {
      blocked = true;
      if (blocked_reason.empty()) blocked_reason = std::string(to_string(pod.reason));
    }
  }
  // Once every pod is gone the refusals are history: a newcomer evicted later (after
  // Succeeded) must not bring back an error it never met.
  if (ledger.all_gone()) drain.last_drain_error.clear();
  if (!drain.last_drain_error.empty()) status.last_error = drain.last_drain_error;
  if (status.phase == Phase::kRunning) {
    set_condition(status.conditions,
                  condition(kConditionBlocked, blocked, blocked ? blocked_reason : kReasonDraining,
                            blocked ? status.last_error : ""),
                  in.now.wall);
  }
}

// One drain step (docs/design.md §2.4): syncs the ledger with the pods that must leave, starts
// the evictions that are due, and fills the status counters.
void drain_step(const Inputs& in, Step& step) {
  sync_ledger(in, step);
  start_due_evictions(in, step);
  fill_counters(in, step);
}

// The node: cordoned and tainted, and kept so (docs/design.md §2.3, §2.5). The Events say what
// the patch really changed: the cache may lag behind a node that is right already.
void node_step(const Inputs& in, Step& step) {
  NodeMaintenanceStatus& status = step.status();
  const bool needs_patch = check_maintenance(*in.node, in.nm.meta.uid).needs_patch();
  const Condition* cordoned = find_condition(status.conditions, kConditionCordoned);
  if (cordoned == nullptr || cordoned->status != ConditionStatus::kTrue) {
    // NodeCordoned goes with a patch that changed the node: when it changes nothing, an earlier
    // run of this maintenance cordoned it and stopped before recording that (and announced it,
    // or not: at most once).
    if (needs_patch) {
      step.patch_node(
          actions::Cordon{.event_if_changed = events::node_cordoned(in.nm.spec.node_name),
                          .note_if_changed = std::nullopt});
    }
    set_condition(status.conditions, condition(kConditionCordoned, true, kReasonCordoned, ""),
                  in.now.wall);
    step.info("node cordoned and tainted");
  } else if (needs_patch) {
    step.patch_node(actions::Cordon{
        .event_if_changed = events::maintenance_reapplied(in.nm.spec.node_name),
        .note_if_changed =
            LogNote{.level = LogNote::Level::kWarn,
                    .message = "someone undid the cordon or the taint; applied again",
                    .fields = {}}});
  }
}

// A node lease found held by another holder after the drain started: one error per check
// (kLeaseConflictRecheck apart, however many events arrive), and more than kMaxLeaseErrors fail
// the maintenance (docs/design.md §3.1). False when the decision ends here.
bool lease_held_by_other(const Inputs& in, Step& step) {
  NodeMaintenanceStatus& status = step.status();
  status.error_on_lease_count = next_error_on_lease_count(
      static_cast<int>(status.error_on_lease_count), LeaseCheck::kHeldByOther, true);
  status.last_error = "the node lease is held by another holder";
  step.warn("the node lease is held by another holder",
            {{"holder", in.node_lease ? lease_holder(*in.node_lease) : std::string()},
             {"error_on_lease_count", status.error_on_lease_count}});
  if (lease_errors_exceeded(static_cast<int>(status.error_on_lease_count))) {
    step.fail(FailureKind::kLeaseLost,
              lease_failure_message(static_cast<int>(status.error_on_lease_count)), true);
    return false;
  }
  step.drain().lease_recheck_at = in.now.tick + kLeaseConflictRecheck;
  step.requeue(step.drain().lease_recheck_at);
  return true;
}

// The node lease, renewed on time (docs/design.md §3.1), and the answer of the last renewal.
// False when the decision ends here.
bool lease_step(const Inputs& in, Step& step) {
  // Taken by this decision: the cache shows it only later, and its change wakes the maintenance.
  if (step.takes_node_lease()) return true;
  const std::optional<LeaseRenewal> renewal = std::exchange(step.drain().renewal, std::nullopt);
  if (renewal == LeaseRenewal::kHeldByOther) return lease_held_by_other(in, step);
  if (renewal == LeaseRenewal::kRenewed) {
    step.status().error_on_lease_count = next_error_on_lease_count(
        static_cast<int>(step.status().error_on_lease_count), LeaseCheck::kAcquired, true);
  }
  const std::optional<kube::Lease>& lease = in.node_lease;
  const bool foreign = lease && lease_holder(*lease) != kNodeLeaseHolder &&
                       classify_node_lease(*lease, in.now.wall) == NodeLeaseState::kHeldByOther;
  if (foreign && in.now.tick < step.drain().lease_recheck_at) {
    step.requeue(step.drain().lease_recheck_at);
    return true;
  }
  if (foreign) return lease_held_by_other(in, step);
  if (!lease || should_renew_node_lease(*lease, in.now.wall, in.node_lease_renew_interval)) {
    // Just renewed, and the cache is behind: the renewal's change wakes the maintenance.
    if (renewal == LeaseRenewal::kRenewed) return true;
    step.add(actions::RenewNodeLease{});
    return true;
  }
  const auto until =
      next_node_lease_renewal(*lease, in.now.wall, in.node_lease_renew_interval) - in.now.wall;
  step.requeue(in.now.tick + std::chrono::duration_cast<Clock::duration>(until));
  return true;
}

// A maintenance that holds its node: Running, Succeeded, or Failed by timeout (docs/design.md
// §2.3 to §2.5).
void maintain(const Inputs& in, Step& step) {
  const NodeMaintenance& nm = in.nm;
  NodeMaintenanceStatus& status = step.status();
  node_step(in, step);
  if (!lease_step(in, step)) return;

  const bool was_running = status.phase == Phase::kRunning;
  drain_step(in, step);

  if (was_running && step.drain().ledger->all_gone()) {
    status.phase = Phase::kSucceeded;
    status.last_error.clear();
    set_succeeded_conditions(status, in.now.wall);
    if (const Condition* cordoned = find_condition(status.conditions, kConditionCordoned)) {
      step.add(actions::DrainCompleted{.took = std::chrono::duration_cast<Clock::duration>(
                                           in.now.wall - cordoned->last_transition_time)});
    }
    step.announce(events::succeed_maintenance(nm.spec.node_name, status.total_pods));
    step.info("maintenance succeeded", {{"total_pods", status.total_pods}});
  } else if (was_running && nm.spec.drain_timeout) {
    const Condition* cordoned = find_condition(status.conditions, kConditionCordoned);
    const kube::Time since = cordoned != nullptr ? cordoned->last_transition_time : in.now.wall;
    const auto elapsed = in.now.wall - since;
    if (elapsed >= *nm.spec.drain_timeout) {
      // The same failure as any other, but the node stays cordoned and tainted and keeps its
      // slot (the safe side), and the maintenance goes on being kept.
      // Its unfinished live migrations are cancelled: nothing more moves off the node.
      step.add(actions::CancelMigrations{});
      step.record_failure(
          FailureKind::kTimeout,
          drain_timeout_message(*nm.spec.drain_timeout, status.total_pods - status.eviction_pods),
          false);
    } else {
      step.requeue(in.now.tick +
                   std::chrono::duration_cast<Clock::duration>(*nm.spec.drain_timeout - elapsed));
    }
  }
  step.write();
}

// Admitted (the slot and the node lease taken): Running is believed, and the maintenance is
// kept from here on (its first drain step).
void enter_running(const Inputs& in, Step& step) {
  const GateFacts& gates = *in.gates;
  NodeMaintenanceStatus& status = step.status();
  // Running is written together with the first counters, so nobody sees "Running, 0 of 0";
  // until then it is believed.
  status.phase = Phase::kRunning;
  status.totalpods = in.pods->bound;
  status.last_error.clear();
  set_condition(status.conditions, condition(kConditionBlocked, false, kReasonAdmitted, ""),
                in.now.wall);
  step.info("admitted: slot and node lease taken",
            {{"slots_used", gates.slots_used + (gates.holds_slot ? 0 : 1)},
             {"resumed", gates.holds_slot}});
  step.add(actions::ForgetQuorum{});
  step.add(actions::Believe{.status = status});
  maintain(in, step);
}

// Gate 1, per node and changing nothing: etcd quorum would be lost, or has been safe for less
// than the stability window.
void wait_for_quorum(const Inputs& in, Step& step) {
  const GateFacts& gates = *in.gates;
  NodeMaintenanceStatus& status = step.status();
  // While the stability window runs the condition says so, so that quorum turning unsafe
  // again is a change of the status on record, and announced as such.
  const bool stabilizing = gates.quorum.recheck_at.has_value();
  const std::string message = stabilizing
                                  ? etcd_quorum_stabilizing_message(in.etcd_quorum_stable_for)
                                  : etcd_quorum_blocked_message(in.nm.spec.node_name);
  const bool changed =
      set_condition(status.conditions,
                    condition(kConditionBlocked, true, kReasonEtcdQuorum, message), in.now.wall);
  if (!stabilizing && changed) {
    step.announce(events::blocked_by_etcd_quorum(message));
    step.info("waiting: etcd quorum would be lost");
  }
  step.write(/*wake_for_delayed_write=*/!stabilizing);
  if (stabilizing) {
    step.info(
        "etcd quorum is safe; waiting for it to stay so",
        {{"stable_for_seconds", static_cast<std::int64_t>(in.etcd_quorum_stable_for.count())}});
    step.requeue(*gates.quorum.recheck_at);
  }
}

// Gate 2: the cluster budget, oldest eligible first, and the node lease; this one waits.
void wait_for_slot(const Inputs& in, Step& step) {
  const GateFacts& gates = *in.gates;
  NodeMaintenanceStatus& status = step.status();
  events::Event blocked = events::blocked_by_node_health_check();
  const bool changed = set_condition(
      status.conditions,
      condition(kConditionBlocked, true, kReasonWaitingForLease, blocked.message), in.now.wall);
  if (changed) {
    step.announce(std::move(blocked));
    step.info("waiting for a maintenance slot or the node lease",
              {{"slots_used", gates.slots_used},
               {"max_parallel_maintenances", in.max_parallel_maintenances},
               {"in_use", gates.slots_in_use},
               {"node_lease", to_string(gates.lease)}});
  }
  step.write();
  // A holder that died leaves its Lease to expire by time (docs/design.md §3.1): look again
  // just after that, when it may be taken over and no longer fills the budget.
  if (gates.foreign_lease_expiry) {
    step.requeue(
        in.now.tick +
        std::chrono::duration_cast<Clock::duration>(*gates.foreign_lease_expiry - in.now.wall) +
        kForeignLeaseExpiryMargin);
  }
}

// The gates of a Pending maintenance (docs/design.md §2.2) and its admission.
void admit(const Inputs& in, Step& step) {
  const GateFacts& gates = *in.gates;
  if (!gates.quorum.open) {
    wait_for_quorum(in, step);
  } else if (!gates.admitted) {
    wait_for_slot(in, step);
  } else if (in.now.tick < step.drain().admission_retry_at) {
    step.requeue(step.drain().admission_retry_at);
  } else {
    // Gate 3: take the slot, then the node lease; only then Running (a refused or failed take
    // stops the list). Announced by whoever took the lease: an earlier run that stopped before
    // recording Running left both to this one.
    step.add(actions::TakeSlot{});
    step.take_node_lease();
    if (!gates.holds_slot || gates.lease != NodeLeaseState::kOurs) {
      step.event(events::lease_acquired(in.node_lease_ref, in.nm.spec.node_name));
    }
    enter_running(in, step);
  }
}

// The node as cached (docs/design.md §2.1): a maintenance whose node is missing fails (undoing
// what it did), one whose node came back starts again as Pending. False when the decision ends
// here.
bool node_present(const Inputs& in, Step& step) {
  NodeMaintenanceStatus& status = step.status();
  if (!in.node_synced) {
    step.requeue(in.now.tick + kNodeSyncRetry);
    return false;
  }
  const std::optional<FailureKind> failure = failure_of(status);
  if (!in.node) {
    if (failure == FailureKind::kNodeMissing) return false;
    const bool touched = status.phase == Phase::kRunning || status.phase == Phase::kSucceeded ||
                         failure == FailureKind::kTimeout;
    step.info("the node does not exist", {{"phase", to_string(*status.phase)}});
    step.fail(FailureKind::kNodeMissing, node_not_found_message(in.nm.spec.node_name), touched);
    return false;
  }
  if (failure == FailureKind::kNodeMissing) {
    step.info("the node exists again; the maintenance waits for its gates");
    // A fresh start: the failure undid everything on the node, so nothing of the earlier drain
    // is true any more (Pending means the node is untouched).
    NodeMaintenanceStatus fresh;
    fresh.phase = Phase::kPending;
    fresh.error_on_lease_count = status.error_on_lease_count;
    for (const Condition& c : status.conditions) {
      if (c.type == kConditionBlocked) fresh.conditions.push_back(c);
    }
    status = std::move(fresh);
    step.add(actions::ResetEvictions{});
    step.drain() = DrainMemory{.lease_recheck_at = step.drain().lease_recheck_at};
    // Recorded first: the next reconcile gathers the gates of a Pending maintenance.
    step.write();
    step.requeue(in.now.tick);
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> duplicate_winner(const NodeMaintenance& nm,
                                            const std::vector<Sibling>& siblings) {
  const Sibling* winner = nullptr;
  bool admitted_sibling = false;
  for (const Sibling& other : siblings) {
    if (other.uid == nm.meta.uid) continue;
    if (failure_of(other.status) == FailureKind::kDuplicate) continue;
    const bool admitted =
        other.status.phase == Phase::kRunning || other.status.phase == Phase::kSucceeded;
    if (admitted && !admitted_sibling) {
      admitted_sibling = true;
      winner = &other;
    } else if (!admitted_sibling && older_than(other, nm) &&
               (winner == nullptr || older_than(other, *winner))) {
      winner = &other;
    }
  }
  if (winner == nullptr) return std::nullopt;
  return winner->name;
}

bool needs_gates(const NodeMaintenanceStatus& status) {
  return !status.phase || *status.phase == Phase::kPending;
}

bool needs_pods(const NodeMaintenanceStatus& status, const GateFacts* gates) {
  if (needs_gates(status)) return gates != nullptr && gates->quorum.open && gates->admitted;
  const std::optional<FailureKind> failure = failure_of(status);
  return !failure || !cleanup_finished(*failure);
}

Decision decide(Inputs in) {
  Step step(in);
  const NodeMaintenance& nm = in.nm;
  NodeMaintenanceStatus& status = step.status();

  // First sight (docs/design.md §2.1): the finalizer, then Pending.
  if (!in.has_finalizer) {
    // Added already, and the watch brings the updated object back with the next reconcile.
    if (!in.finalizer_in_flight) step.add(actions::AddFinalizer{});
    return std::move(step).finish();
  }
  if (!status.phase) {
    status.phase = Phase::kPending;
    step.announce(events::begin_maintenance(nm.spec.node_name, nm.spec.reason));
    step.info("maintenance requested", {{"reason", nm.spec.reason}});
    // Recorded at once, so a reconcile that ends early below never announces it again.
    step.write();
  }

  if (std::string invalid = nm.spec.validation_error();
      !invalid.empty() && status.phase == Phase::kPending) {
    step.fail(FailureKind::kInvalid, std::move(invalid), false);
    return std::move(step).finish();
  }

  // The controller is the final arbiter between two maintenances of one node (docs/design.md
  // §2.7). The cache may show the winner only after another sibling: the message always names
  // the current winner (recording the same failure again changes nothing).
  if (status.phase == Phase::kPending || failure_of(status) == FailureKind::kDuplicate) {
    if (std::optional<std::string> winner = duplicate_winner(nm, in.siblings)) {
      step.fail(FailureKind::kDuplicate, duplicate_message(nm.spec.node_name, *winner), false);
      return std::move(step).finish();
    }
  }

  if (!node_present(in, step)) return std::move(step).finish();

  if (const std::optional<FailureKind> now_failed = failure_of(status);
      now_failed && cleanup_finished(*now_failed)) {
    // A failure that undid everything (or never touched anything): nothing more to do.
    step.write(/*wake_for_delayed_write=*/false);
    return std::move(step).finish();
  }

  const bool pending = status.phase == Phase::kPending;
  if ((pending && in.gates == nullptr) || (needs_pods(status, in.gates) && in.pods == nullptr)) {
    // The reconcile gathers these whenever needs_gates() and needs_pods() say so; without them
    // nothing is decided but to look again.
    step.requeue(in.now.tick + kNodeSyncRetry);
    return std::move(step).finish();
  }
  if (pending) {
    admit(in, step);
  } else {
    maintain(in, step);
  }
  return std::move(step).finish();
}

Decision decide_deletion(Inputs in) {
  Step step(in);
  const NodeMaintenance& nm = in.nm;
  const NodeMaintenanceStatus& status = step.status();
  // The cache may still show the finalizer we removed a moment ago.
  if (!in.has_finalizer || in.finalized) return std::move(step).finish();
  step.add(actions::StopEvictions{});
  if (!in.node_synced) {
    step.requeue(in.now.tick + kNodeSyncRetry);
    return std::move(step).finish();
  }
  // Only a maintenance that was admitted holds the node lease or migrates VMs; a duplicate or
  // one that never left Pending must not release the lease of the maintenance that has it.
  const std::optional<FailureKind> failure = failure_of(status);
  const bool admitted = in.holds_slot || status.phase == Phase::kRunning ||
                        status.phase == Phase::kSucceeded || failure == FailureKind::kTimeout;
  // The live migrations it started and that have not finished are cancelled first: nothing
  // moves off a node that is given back (docs/design.md §2.9). What both found is announced by
  // the next decision, which removes the finalizer.
  const bool cancel = admitted && !in.removal.cancelled;
  const bool restore = in.node && !in.removal.restored;
  if (cancel || restore) {
    if (cancel) step.add(actions::CancelMigrations{.for_removal = true});
    if (restore) step.add(actions::RestoreNode{.for_removal = true});
    step.requeue(in.now.tick);
    return std::move(step).finish();
  }
  const RestoreOutcome restored = in.removal.restored.value_or(RestoreOutcome{});
  if (restored.uncordoned) {
    step.add(actions::EmitEvent{.event = events::uncordon_node(nm.spec.node_name, nm.meta.name),
                                .on_node = true,
                                .pod = std::nullopt});
    step.info("node uncordoned");
  }
  if (admitted && in.node_lease && lease_holder(*in.node_lease) == kNodeLeaseHolder) {
    step.add(actions::ReleaseNodeLease{});
    step.event(events::lease_released(in.node_lease_ref));
  } else if (admitted && !in.node_lease) {
    // The cache shows no node lease, yet this maintenance took one: its watch may lag behind our
    // own create (an API server restarting). The release reads it afresh and deletes it only if
    // it is ours.
    step.add(actions::ReleaseNodeLease{});
  }
  step.add(actions::ReleaseSlot{});
  step.add(actions::RemoveFinalizer{});
  step.event(
      events::removed_maintenance(nm.spec.node_name, restored.left_cordoned,
                                  in.removal.cancelled.value_or(std::vector<std::string>{})));
  step.info("maintenance removed");
  return std::move(step).finish();
}

}  // namespace nmo::op
