// DrainLedger: the book of pods that must leave a node during one maintenance, and the status
// counters derived from it (docs/design.md §1.2):
//
//   totalPods      pods that must leave (classify_pod() == kEvict), newcomers included
//   evictionPods   pods of totalPods that are gone: deleted, replaced by a new uid, or finished
//                  by themselves (phase Succeeded/Failed, see pod_policy.h)
//   pendingPods    names of the others, always totalPods - evictionPods of them
//   drainProgress  evictionPods * 100 / totalPods, integer; 100 when totalPods is 0
//
// Pods are keyed by uid: a pod deleted and recreated under the same name (a StatefulSet pod) is a
// new pod, and the old one counts as gone. A pod once gone never comes back.
//
// Usage: the reconciler keeps one ledger per CR. It calls sync() with the node's must-leave pods
// whenever its view of them changes, set_pending() after each eviction answer, and copies the
// counters into the status. A fresh drain starts from an empty ledger: the first sync() adds every
// pod as a newcomer.
//
// After an operator restart (docs/design.md §2.7: counters are not recomputed) the ledger is
// rebuilt with restore() from the status, and the next sync() reconciles it with the pods on the
// node:
//   - a pending pod is matched to a pod on the node by namespace and name (any namespace when the
//     status only had pendingPods names) and takes over its uid; a pending pod with no match is
//     gone (it went away while the operator was down);
//   - a must-leave pod on the node that matches no pending pod is a newcomer, except a finished
//   one:
//     it is assumed to be a pod already counted as gone (it stays known and is never counted);
//   - when the status is inconsistent (pendingPods.size() != totalPods - evictionPods),
//     evictionPods and the pending list are trusted and totalPods becomes their sum.
// A pod recreated under a pending pod's name while the operator was down is taken for that pod
// (there is no uid in the status to tell them apart); either way it is evicted.
//
// Threading: a plain value type, not synchronised; use one ledger from one strand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kube/api/pod.h"
#include "operator/api/node_maintenance.h"

namespace nmo::op {

// A pod the ledger has counted.
struct LedgerPod {
  std::string uid;         // empty for a restored pending pod not yet matched to a pod
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  bool gone = false;
  PendingPodReason reason = PendingPodReason::kEvicting;  // while not gone
  std::string message;                                    // while not gone

  friend bool operator==(const LedgerPod&, const LedgerPod&) = default;
};

// A pod named in a LedgerChanges list.
struct LedgerPodRef {
  std::string uid;
  std::string namespace_;  // NOLINT(readability-identifier-naming)
  std::string name;

  friend bool operator==(const LedgerPodRef&, const LedgerPodRef&) = default;
};

// What one sync() changed.
struct LedgerChanges {
  std::vector<LedgerPodRef> newcomers;  // added to totalPods (a finished one is also in `gone`)
  std::vector<LedgerPodRef> gone;       // became gone (a restored pod may have no uid)

  [[nodiscard]] bool empty() const noexcept { return newcomers.empty() && gone.empty(); }
};

// The status fields restore() starts from.
struct LedgerSeed {
  struct PendingPod {
    std::string namespace_;  // NOLINT(readability-identifier-naming); empty: match any namespace
    std::string name;
    PendingPodReason reason = PendingPodReason::kEvicting;
    std::string message;
  };
  std::int64_t total_pods = 0;     // status.totalPods
  std::int64_t eviction_pods = 0;  // status.evictionPods
  // status.pendingPodsRefs (reason via parse_pending_reason(), kEvicting when unknown), or the
  // names of status.pendingPods with an empty namespace when the refs are missing.
  std::vector<PendingPod> pending;
};

class DrainLedger {
 public:
  // An empty ledger (a drain that has not looked at the node yet): 0 pods, progress 100.
  DrainLedger() = default;

  // The ledger of a drain in progress, from its CR's status (see the file comment).
  [[nodiscard]] static DrainLedger restore(const LedgerSeed& seed);

  // Reconciles with `must_leave`: every pod currently bound to the node for which
  // classify_pod() == kEvict (terminating and finished ones included). Tracked pods that are
  // missing from it, or have finished, become gone; unknown ones are added as newcomers.
  LedgerChanges sync(std::span<const kube::Pod> must_leave);

  // Marks one pod gone at once (e.g. its eviction answered 404 before the watch said so).
  // Returns false when the uid is unknown or already gone.
  bool mark_gone(std::string_view uid);

  // Records why a pod is still pending. Returns true when reason or message changed (the status
  // then needs a write); false when unchanged, unknown, or gone.
  bool set_pending(std::string_view uid, PendingPodReason reason, std::string message);

  // status.totalPods, status.evictionPods, status.drainProgress.
  [[nodiscard]] std::int64_t total_pods() const noexcept;
  [[nodiscard]] std::int64_t eviction_pods() const noexcept;
  [[nodiscard]] std::int64_t pending_count() const noexcept;
  [[nodiscard]] int drain_progress() const noexcept;
  // True when every pod of totalPods is gone (the drain has succeeded).
  [[nodiscard]] bool all_gone() const noexcept { return pending_count() == 0; }

  // The pending pods sorted by namespace, then name (status.pendingPodsRefs), and their names in
  // the same order (status.pendingPods).
  [[nodiscard]] std::vector<LedgerPod> pending_pods() const;
  [[nodiscard]] std::vector<std::string> pending_pod_names() const;

  // The tracked pod with this uid (gone or not), or nullptr. Valid until the next non-const call.
  [[nodiscard]] const LedgerPod* find(std::string_view uid) const;

  // True between restore() and the first sync().
  [[nodiscard]] bool awaiting_first_sync() const noexcept { return restored_; }

 private:
  std::optional<std::size_t> index_of(std::string_view uid) const;
  LedgerPod* find_mutable(std::string_view uid);
  void add(const kube::Pod& pod, LedgerChanges& changes);
  void match_restored(std::span<const kube::Pod> must_leave, LedgerChanges& changes);

  std::vector<LedgerPod> pods_;                          // every counted pod, gone ones too
  std::unordered_map<std::string, std::size_t> by_uid_;  // uid -> index in pods_
  std::unordered_set<std::string> ignored_uids_;         // finished pods seen at restore
  std::int64_t gone_uncounted_ = 0;  // gone pods known only by number (from the status)
  std::int64_t gone_tracked_ = 0;    // pods_ entries with gone == true
  bool restored_ = false;
};

}  // namespace nmo::op
