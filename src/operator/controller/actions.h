// The actions the state machine (state_machine.h) decides, as a sum type: each kind is a small
// struct carrying only its own payload, and the reconcile executes a list of them in order with
// one handler per kind. Each says how the reconcile treats its failure.
//
// Threading: plain values and pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "kube/api/pod.h"
#include "operator/api/node_maintenance.h"
#include "operator/controller/events.h"

namespace nmo::op {

// What a CreateMigration asks for.
struct MigrationRequest {
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  std::string vmi;
  int attempt = 1;

  friend bool operator==(const MigrationRequest&, const MigrationRequest&) = default;
};

// A log line of a decision.
struct LogNote {
  enum class Level { kInfo, kWarn } level = Level::kInfo;
  std::string message;
  std::vector<log::Field> fields;

  friend bool operator==(const LogNote& a, const LogNote& b);
};

namespace actions {

// Our finalizer onto the object; a conflict: again after kConflictRetry.
struct AddFinalizer {
  friend bool operator==(const AddFinalizer&, const AddFinalizer&) = default;
};
// `status` through /status: at once on a phase change, else coalesced.
struct WriteStatus {
  NodeMaintenanceStatus status;
  // A write delayed by the coalescer requeues for then (else the requeue of the decision stands
  // alone).
  bool wake_for_delayed_write = true;
  friend bool operator==(const WriteStatus&, const WriteStatus&) = default;
};
// Hold `status` as the believed one before it is written.
struct Believe {
  NodeMaintenanceStatus status;
  friend bool operator==(const Believe&, const Believe&) = default;
};
// `event`, once the status of the preceding WriteStatus is on record.
struct Announce {
  events::Event event;
  friend bool operator==(const Announce&, const Announce&) = default;
};
// `event` now: about the Node when `on_node`, else about the maintenance with `pod` as the
// related object.
struct EmitEvent {
  events::Event event;
  bool on_node = false;
  std::optional<kube::Pod> pod;
  friend bool operator==(const EmitEvent&, const EmitEvent&) = default;
};
// Cordon and taint the node (docs/design.md §2.3); a conflict: again after kConflictRetry. When
// the patch really changed the cordon or the drain taint (the cache may lag behind a node already
// right), `event_if_changed` is sent about the maintenance and `note_if_changed` logged.
struct Cordon {
  std::optional<events::Event> event_if_changed;
  std::optional<LogNote> note_if_changed;
  friend bool operator==(const Cordon&, const Cordon&) = default;
};
// Undo Cordon. `for_removal`: the deletion's restore (docs/design.md §2.6): a conflict means
// again after kConflictRetry, and what it found is remembered for the decision that removes the
// finalizer (Removal, state_machine.h).
struct RestoreNode {
  bool for_removal = false;
  friend bool operator==(const RestoreNode&, const RestoreNode&) = default;
};
// The budget slot Lease.
struct TakeSlot {
  friend bool operator==(const TakeSlot&, const TakeSlot&) = default;
};
struct ReleaseSlot {
  friend bool operator==(const ReleaseSlot&, const ReleaseSlot&) = default;
};
// Admission: refused or failed, the slot goes back and the reconcile stops.
struct TakeNodeLease {
  friend bool operator==(const TakeNodeLease&, const TakeNodeLease&) = default;
};
// Best effort: a failure is logged and tried again after kNodeLeaseRetryInterval (or the renew
// interval, when shorter), not a stop;
// the answer (renewed, or held by another holder) is remembered for the next decision
// (DrainMemory::renewal).
struct RenewNodeLease {
  friend bool operator==(const RenewNodeLease&, const RenewNodeLease&) = default;
};
// When we hold it.
struct ReleaseNodeLease {
  friend bool operator==(const ReleaseNodeLease&, const ReleaseNodeLease&) = default;
};
// Evictions in flight drop their answers.
struct StopEvictions {
  friend bool operator==(const StopEvictions&, const StopEvictions&) = default;
};
// The same, and later ones report again (a fresh drain).
struct ResetEvictions {
  friend bool operator==(const ResetEvictions&, const ResetEvictions&) = default;
};
// Evict `pod` (its bookkeeping is in the decision's DrainMemory).
struct StartEviction {
  kube::Pod pod;
  // Sent before its refusal's backoff ran out, because the budget that refused it allows a
  // disruption again: how long after the controller saw that (docs/design.md §2.4).
  std::optional<Clock::duration> budget_allowed_for;
  friend bool operator==(const StartEviction&, const StartEviction&) = default;
};
// Create a live migration (docs/design.md §2.9); its answer comes to the inbox.
struct CreateMigration {
  MigrationRequest request;
  friend bool operator==(const CreateMigration&, const CreateMigration&) = default;
};
// Metrics: a migration seen running ended.
struct MigrationEnded {
  bool succeeded = false;
  friend bool operator==(const MigrationEnded&, const MigrationEnded&) = default;
};
// Delete the maintenance's unfinished migrations. `for_removal`: the deletion's, whose names are
// remembered for the decision that removes the finalizer (Removal, state_machine.h).
struct CancelMigrations {
  bool for_removal = false;
  friend bool operator==(const CancelMigrations&, const CancelMigrations&) = default;
};
// Queue the maintenance again after `after`, whatever the reconcile returns.
struct WakeAfter {
  Clock::duration after{};
  friend bool operator==(const WakeAfter&, const WakeAfter&) = default;
};
// Metrics: the drain took `took`.
struct DrainCompleted {
  Clock::duration took{};
  friend bool operator==(const DrainCompleted&, const DrainCompleted&) = default;
};
// The etcd quorum stability window of this maintenance is over.
struct ForgetQuorum {
  friend bool operator==(const ForgetQuorum&, const ForgetQuorum&) = default;
};
// Our finalizer off the object: it is finalized, and everything remembered about it but that is
// forgotten.
struct RemoveFinalizer {
  friend bool operator==(const RemoveFinalizer&, const RemoveFinalizer&) = default;
};
// Every decision is explained (docs/design.md §6).
struct Log {
  LogNote note;
  friend bool operator==(const Log&, const Log&) = default;
};
// Reconcile again at `at` (the earliest wins; none: done).
struct Requeue {
  Clock::time_point at{};
  friend bool operator==(const Requeue&, const Requeue&) = default;
};
}  // namespace actions

using Action =
    std::variant<actions::AddFinalizer, actions::WriteStatus, actions::Believe, actions::Announce,
                 actions::EmitEvent, actions::Cordon, actions::RestoreNode, actions::TakeSlot,
                 actions::ReleaseSlot, actions::TakeNodeLease, actions::RenewNodeLease,
                 actions::ReleaseNodeLease, actions::StopEvictions, actions::ResetEvictions,
                 actions::StartEviction, actions::CreateMigration, actions::MigrationEnded,
                 actions::CancelMigrations, actions::WakeAfter, actions::DrainCompleted,
                 actions::ForgetQuorum, actions::RemoveFinalizer, actions::Log, actions::Requeue>;

// One line naming the action and its payload's gist, e.g. "WriteStatus(Running)",
// "Event(DrainError about web-1)", "Requeue(+5000ms)": times are shown relative to `now`, so
// that tests and logs compare lists of actions as lists of strings.
[[nodiscard]] std::string describe(const Action& action, Clock::time_point now);

}  // namespace nmo::op
