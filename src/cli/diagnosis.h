// `kubectl maintenance diagnose <name>` (docs/design.md §8, S7): one report — the
// maintenance's status, its recent Events in order, who holds the node lease and the budget
// slots, the node's taints and schedulability, each pod still pending with the PDBs that cover
// it — and a one-line verdict with the next action, e.g.
//   pod default/vm-db is protected by PDB default/db-pdb (0 disruptions allowed: 1 healthy,
//   1 desired): scale up, migrate the VM, or relax the PDB
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/time.h"
#include "kube/api/version.h"
#include "operator/api/node_maintenance.h"

namespace nmo::cli {

// One core/v1 Event about the maintenance.
struct EventLine {
  std::string type;  // Normal, Warning
  std::string reason;
  std::string message;
  std::int64_t count = 1;
  std::optional<kube::Time> last_seen;  // lastTimestamp, else eventTime, else firstTimestamp
  std::uint64_t resource_version = 0;   // tie-break inside one second; 0 when not a number

  friend bool operator==(const EventLine&, const EventLine&) = default;
};

// A pod the maintenance still waits for, with the budgets that select it.
struct StuckPod {
  op::PendingPodRef ref;
  bool exists = true;  // the Pod object was found
  std::vector<kube::PodDisruptionBudget> pdbs;

  friend bool operator==(const StuckPod&, const StuckPod&) = default;
};

struct DiagnosisInput {
  op::NodeMaintenance nm;
  kube::Time now{};
  std::vector<EventLine> events;  // oldest first
  std::string lease_ref;          // "medik8s-leases/node-<node>"
  std::optional<kube::Lease> node_lease;
  std::vector<std::string> slot_holders;  // holderIdentity of each slot Lease
  int max_parallel = 1;
  std::optional<kube::Node> node;  // std::nullopt: the node does not exist
  std::vector<StuckPod> pods;
  std::optional<kube::ServerVersion> server;  // GET /version; std::nullopt when unreadable
};

// The Events about an object of `kind` in an EventList (other kinds are skipped), oldest first.
// Timestamps have one-second granularity, so Events of the same second are ordered by their
// resourceVersion, which the API server takes from etcd's revision (later write, larger number).
[[nodiscard]] std::vector<EventLine> events_from_list(const boost::json::value& list,
                                                      std::string_view kind = op::kKind);

// "Events (oldest first):" and a line per Event (at most the `max_events` most recent), or
// "  none"; lines end in '\n'.
[[nodiscard]] std::string events_section(const std::vector<EventLine>& events,
                                         std::size_t max_events);

// For -o json|yaml: [{type, reason, message, count, lastSeen}].
[[nodiscard]] boost::json::array events_to_json(const std::vector<EventLine>& events);

// The one-line verdict with the next action. While Running, the pod it names is the first one
// blocked by a PDB, else by several PDBs, a deferring webhook, a terminating namespace, an
// eviction error, and last a pod still terminating.
[[nodiscard]] std::string diagnosis_verdict(const DiagnosisInput& input);

// The human report, lines ending in '\n'; at most `max_events` events (the most recent).
[[nodiscard]] std::string diagnosis_report(const DiagnosisInput& input, std::size_t max_events);

// For -o json|yaml: {name, node, phase, progress, totalPods, evictionPods, lastError, events:
// [...], nodeLease: {name, holder, state}, slots: [...], nodeState: {exists, unschedulable,
// taints}, pendingPods: [{namespace, name, reason, message, pdbs: [{name, disruptionsAllowed,
// currentHealthy, desiredHealthy}]}], verdict}.
[[nodiscard]] boost::json::value diagnosis_to_json(const DiagnosisInput& input);

}  // namespace nmo::cli
