// The admission gates of a Pending NodeMaintenance, evaluated once for everyone who asks
// (docs/design.md §2.2): the NodeMaintenance controller feeds it from the shared cache before
// each admission, `kubectl maintenance plan` from lists, so the plugin predicts exactly what
// the operator will do.
//
//   1. per-node checks: the medik8s node lease (node_lease.h) and, for a control-plane node,
//      etcd quorum (etcd_quorum.h) with the members on nodes other maintenances hold counted
//      as down;
//   2. the cluster budget (budget.h), every NodeMaintenance a candidate, oldest first, each
//      with its own per-node checks.
// The stability window of the quorum gate is memory of the controller (QuorumStabilityTracker):
// the caller passes how a safe or unsafe quorum reads for a maintenance (`QuorumWindow`).
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/time.h"
#include "operator/api/node_maintenance.h"
#include "operator/gates/budget.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/gates/node_lease.h"

namespace nmo::op {

// One NodeMaintenance as the gates see it.
struct GateMaintenance {
  std::string name;
  std::string uid;
  std::string node;  // spec.nodeName
  kube::Time created{};
  // The status its controller believes (ahead of the cache while a write is on its way).
  std::optional<Phase> phase;
  bool cleanup_finished = false;  // Failed, and its changes are undone (failure.h)
  bool holds_slot = false;        // its slot Lease exists
  bool deleting = false;
  // Between its admission decision and a Running status (the controller's memory only).
  bool admitting = false;
  bool node_exists = true;  // its Node exists

  // Whether it holds its node: being admitted, holding a slot, Running or Succeeded (the node
  // is, or is about to be, cordoned and drained).
  [[nodiscard]] bool holds_node() const noexcept;
};

// `nm` as the gates see it, with the status believed for it.
[[nodiscard]] GateMaintenance gate_maintenance(const NodeMaintenance& nm,
                                               const NodeMaintenanceStatus& believed,
                                               bool holds_slot, bool node_exists);

// Where etcd health is read (etcd_quorum.h).
struct EtcdView {
  // Every control-plane node (either role label), and whether it is Ready.
  std::map<std::string, bool, std::less<>> control_plane_ready;
  // OpenShift (config.openshift.io served): the guard PDBs and pods of openshift-etcd decide;
  // else the stacked etcd member pods of kube-system.
  bool openshift = false;
  std::vector<kube::Pod> member_pods;
  std::vector<kube::PodDisruptionBudget> guard_pdbs;
  std::vector<kube::Pod> guard_pods;
};

// What the gates read.
struct GateWorld {
  kube::Time now{};
  std::vector<GateMaintenance> maintenances;  // every NodeMaintenance, the one asked about too
  std::vector<kube::Lease> node_leases;       // every Lease of the lease namespace
  EtcdView etcd;
  bool etcd_quorum_check = true;  // --etcd-quorum-check
  int max_parallel = kDefaultMaxParallelMaintenances;
};

// The etcd-quorum check for taking `node` down while the others' held nodes are down.
struct QuorumAnswer {
  bool applies = false;  // a control-plane node, and the check is on
  bool safe = true;
  // Why, for people: "3 etcd members, 2 healthy, 1 left while it is down, 2 needed (node b is
  // held by another maintenance)", "OpenShift etcd guard PDB in openshift-etcd", ...
  std::string detail;
};
[[nodiscard]] QuorumAnswer etcd_quorum_answer(const GateWorld& world,
                                              const GateMaintenance& maintenance);

// How a quorum answer reads for a maintenance: the controller applies its stability window;
// the plugin takes "safe" as open.
using QuorumWindow =
    std::function<QuorumStabilityTracker::Verdict(const GateMaintenance&, bool safe)>;
// The plugin's window: safe is open.
[[nodiscard]] QuorumStabilityTracker::Verdict quorum_without_window(const GateMaintenance&,
                                                                    bool safe);

// The gates' verdict for one maintenance.
struct GateVerdict {
  NodeLeaseState lease = NodeLeaseState::kFree;  // its node's lease
  std::optional<kube::Lease> lease_object;       // that Lease, when it exists
  QuorumAnswer quorum;
  QuorumStabilityTracker::Verdict quorum_window{.open = true, .recheck_at = std::nullopt};
  // The budget: evaluated only when the quorum gate is open.
  bool budget_evaluated = false;
  BudgetDecision budget;
  bool admitted = false;    // the budget admits it now
  bool holds_slot = false;  // its slot Lease exists (an earlier run took it)
  // When the first valid node lease of another holder (this node's, or one that fills the
  // budget) runs out by time; nothing writes the Lease then, so nothing else wakes a waiter.
  std::optional<kube::Time> foreign_lease_expiry;
};

// The gates of the maintenance named `name` (which must be in world.maintenances).
[[nodiscard]] GateVerdict evaluate_gates(const GateWorld& world, std::string_view name,
                                         const QuorumWindow& window);

}  // namespace nmo::op
