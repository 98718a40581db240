// The cluster disruption budget (docs/design.md §2.2 gate 2): at most --max-parallel-maintenances
// nodes are disrupted at once, admitted oldest first, without head-of-line blocking.
//
// Slots in use:
//   - every CR that holds a slot (a slot Lease names it) until its cleanup has finished, whatever
//     its phase (a Failed maintenance that left its node cordoned still counts);
//   - every CR in phase Running or Succeeded even without a slot Lease (an upstream CR adopted as
//     it is, docs/design.md §2.8), so adopted ones count even above the budget;
//   - every node whose medik8s node lease is held by another component (NHC, SNR, ...), once per
//     node, unless a CR that already counts is on that node.
// Admission: among CRs that wait (phase new or Pending, no slot, not being deleted) and whose
// per-node checks pass (node lease free or ours, etcd quorum safe and stable), the oldest by
// creation time, then by name, get the free slots. A CR whose per-node checks fail takes no place
// in the queue, so it never blocks a younger one. At most one CR per node is admitted, and none on
// a node that already counts. Lowering the budget never takes a slot back: used may exceed N.
// A CR still new or Pending that already holds its slot (an earlier run took the slot and was
// killed before recording Running) is admitted again on that slot, ahead of the queue, once its
// per-node checks pass; it needs no free slot.
//
// Slot Leases live in the operator namespace; their names and holderIdentity texts are given by
// slot_lease_name(), foreign_slot_lease_name() and slot_holder_identity() below, so
// `kubectl get lease -n node-maintenance-operator-system` shows what is in progress.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kube/api/time.h"

namespace nmo::op {

inline constexpr std::string_view kDefaultOperatorNamespace = "node-maintenance-operator-system";
inline constexpr int kDefaultMaxParallelMaintenances = 1;  // docs/design.md §2.2

// A NodeMaintenance's phase as the budget sees it.
enum class BudgetPhase { kNew, kPending, kRunning, kSucceeded, kFailed };

// One NodeMaintenance.
struct BudgetCandidate {
  std::string name;
  std::string uid;
  std::string node;  // spec.nodeName
  kube::Time creation_time{};
  BudgetPhase phase = BudgetPhase::kNew;
  bool holds_slot = false;        // a slot Lease names this CR
  bool cleanup_finished = false;  // its changes are undone (finalizer cleanup, or a failure that
                                  // already restored the node): it no longer counts
  bool deleting = false;          // metadata.deletionTimestamp set: never admitted
  bool node_checks_pass = false;  // per-node gate (§2.2 step 1) passes now

  friend bool operator==(const BudgetCandidate&, const BudgetCandidate&) = default;
};

// A valid node lease held by another medik8s component.
struct ForeignNodeLease {
  std::string node;
  std::string holder;  // e.g. "NodeHealthCheck-x"

  friend bool operator==(const ForeignNodeLease&, const ForeignNodeLease&) = default;
};

// Something that uses a slot, for the slot Leases and for logs.
struct SlotUse {
  std::string node;
  std::string holder;  // the CR name, or the foreign lease holder
  bool foreign = false;

  friend bool operator==(const SlotUse&, const SlotUse&) = default;
};

struct BudgetDecision {
  int max_parallel = 0;
  int slots_used = 0;                         // before the admissions below (may exceed max)
  std::vector<SlotUse> in_use;                // what uses them, CRs first, then foreign leases
  std::vector<std::string> admit;             // CR names to admit now, in admission order
  std::vector<std::string> waiting_for_slot;  // pass their node checks but got no slot
                                              // (BlockedByNodeHealthCheck), oldest first
  std::vector<std::string> waiting_on_node;   // their per-node checks fail (reported by the
                                              // per-node gate itself), or their node already
                                              // counts (a duplicate CR for the node)

  friend bool operator==(const BudgetDecision&, const BudgetDecision&) = default;
};

// True when the CR counts against the budget (see the file comment).
[[nodiscard]] bool uses_slot(const BudgetCandidate& candidate) noexcept;

// The admissions for this round. `max_parallel` below 0 counts as 0.
[[nodiscard]] BudgetDecision decide_admissions(std::span<const BudgetCandidate> candidates,
                                               std::span<const ForeignNodeLease> foreign_leases,
                                               int max_parallel);

// Slot Lease names (valid DNS subdomains, at most 253 characters):
//   nmo-slot-<crName>        a CR's slot
//   nmo-foreign-<nodeName>   a node whose node lease another component holds
// A name that would be too long is cut and suffixed with 16 hex digits of FNV-1a-64 of the full
// CR or node name (internal/hashed_name.h). The two prefixes differ, so a CR named like a node
// never collides with a foreign slot.
inline constexpr std::string_view kSlotLeasePrefix = "nmo-slot-";
inline constexpr std::string_view kForeignSlotLeasePrefix = "nmo-foreign-";
[[nodiscard]] std::string slot_lease_name(std::string_view cr_name);
[[nodiscard]] std::string foreign_slot_lease_name(std::string_view node_name);
// Whether a Lease of the operator namespace named `name` is a slot (either kind).
[[nodiscard]] bool is_slot_lease_name(std::string_view name) noexcept;

// A slot Lease's holderIdentity: `<crName> (node <node>)`, or for a foreign holder
// `<holder> (node <node>)`, e.g. `NodeHealthCheck-x (node node-worker-05)`.
[[nodiscard]] std::string slot_holder_identity(std::string_view holder, std::string_view node);

}  // namespace nmo::op
