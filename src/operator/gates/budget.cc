#include "operator/gates/budget.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "operator/gates/internal/hashed_name.h"

namespace nmo::op {
namespace {

constexpr std::size_t kMaxNameLength = 253;

bool waits(const BudgetCandidate& candidate) noexcept {
  return (candidate.phase == BudgetPhase::kNew || candidate.phase == BudgetPhase::kPending) &&
         !candidate.holds_slot && !candidate.deleting && !candidate.cleanup_finished;
}

// A CR that holds its slot while still new or Pending was admitted by an earlier run that
// stopped (was killed) between taking the slot and recording Running.
bool resumes(const BudgetCandidate& candidate) noexcept {
  return (candidate.phase == BudgetPhase::kNew || candidate.phase == BudgetPhase::kPending) &&
         candidate.holds_slot && !candidate.deleting && !candidate.cleanup_finished;
}

}  // namespace

bool uses_slot(const BudgetCandidate& candidate) noexcept {
  if (candidate.cleanup_finished) return false;
  return candidate.holds_slot || candidate.phase == BudgetPhase::kRunning ||
         candidate.phase == BudgetPhase::kSucceeded;
}

BudgetDecision decide_admissions(std::span<const BudgetCandidate> candidates,
                                 std::span<const ForeignNodeLease> foreign_leases,
                                 int max_parallel) {
  BudgetDecision decision;
  decision.max_parallel = std::max(max_parallel, 0);
  std::set<std::string, std::less<>> busy_nodes;
  for (const BudgetCandidate& candidate : candidates) {
    if (!uses_slot(candidate)) continue;
    decision.in_use.push_back({.node = candidate.node, .holder = candidate.name, .foreign = false});
    busy_nodes.insert(candidate.node);
  }
  for (const ForeignNodeLease& lease : foreign_leases) {
    if (!busy_nodes.insert(lease.node).second) continue;  // counted already
    decision.in_use.push_back({.node = lease.node, .holder = lease.holder, .foreign = true});
  }
  decision.slots_used = static_cast<int>(decision.in_use.size());

  std::vector<const BudgetCandidate*> queue;
  for (const BudgetCandidate& candidate : candidates) {
    if (waits(candidate)) queue.push_back(&candidate);
    if (!resumes(candidate)) continue;
    // Already counted in slots_used: it needs no free slot, only its node checks.
    if (candidate.node_checks_pass) {
      decision.admit.push_back(candidate.name);
    } else {
      decision.waiting_on_node.push_back(candidate.name);
    }
  }
  std::sort(queue.begin(), queue.end(), [](const BudgetCandidate* a, const BudgetCandidate* b) {
    return std::tie(a->creation_time, a->name) < std::tie(b->creation_time, b->name);
  });
  int free_slots = std::max(decision.max_parallel - decision.slots_used, 0);
  for (const BudgetCandidate* candidate : queue) {
    if (!candidate->node_checks_pass || busy_nodes.contains(candidate->node)) {
      decision.waiting_on_node.push_back(candidate->name);
      continue;
    }
    if (free_slots == 0) {
      decision.waiting_for_slot.push_back(candidate->name);
      continue;
    }
    --free_slots;
    busy_nodes.insert(candidate->node);
    decision.admit.push_back(candidate->name);
  }
  return decision;
}

std::string slot_lease_name(std::string_view cr_name) {
  return internal::fit_name(kSlotLeasePrefix, cr_name, kMaxNameLength);
}

std::string foreign_slot_lease_name(std::string_view node_name) {
  return internal::fit_name(kForeignSlotLeasePrefix, node_name, kMaxNameLength);
}

std::string slot_holder_identity(std::string_view holder, std::string_view node) {
  std::string identity(holder);
  identity += " (node ";
  identity += node;
  identity += ')';
  return identity;
}

bool is_slot_lease_name(std::string_view name) noexcept {
  return name.starts_with(kSlotLeasePrefix) || name.starts_with(kForeignSlotLeasePrefix);
}

}  // namespace nmo::op
