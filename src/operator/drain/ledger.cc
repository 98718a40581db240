#include "operator/drain/ledger.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "operator/drain/pod_policy.h"

namespace nmo::op {

DrainLedger DrainLedger::restore(const LedgerSeed& seed) {
  DrainLedger ledger;
  ledger.gone_uncounted_ = std::max<std::int64_t>(seed.eviction_pods, 0);
  ledger.pods_.reserve(seed.pending.size());
  for (const LedgerSeed::PendingPod& pending : seed.pending) {
    ledger.pods_.push_back(LedgerPod{.uid = {},
                                     .namespace_ = pending.namespace_,
                                     .name = pending.name,
                                     .gone = false,
                                     .reason = pending.reason,
                                     .message = pending.message});
  }
  ledger.restored_ = true;
  return ledger;
}

void DrainLedger::match_restored(std::span<const kube::Pod> must_leave, LedgerChanges& changes) {
  std::unordered_set<std::string> claimed;
  for (LedgerPod& entry : pods_) {
    if (!entry.uid.empty() || entry.gone) continue;
    const auto match = std::find_if(must_leave.begin(), must_leave.end(), [&](const kube::Pod& p) {
      return p.meta.name == entry.name &&
             (entry.namespace_.empty() || p.meta.namespace_ == entry.namespace_) &&
             !claimed.contains(p.meta.uid);
    });
    if (match == must_leave.end()) {
      entry.gone = true;
      ++gone_tracked_;
      changes.gone.push_back({.uid = {}, .namespace_ = entry.namespace_, .name = entry.name});
      continue;
    }
    claimed.insert(match->meta.uid);
    entry.uid = match->meta.uid;
    entry.namespace_ = match->meta.namespace_;
  }
  by_uid_.clear();
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    if (!pods_[i].uid.empty()) by_uid_.emplace(pods_[i].uid, i);
  }
  // Finished pods nobody listed as pending were counted as gone before the restart.
  for (const kube::Pod& pod : must_leave) {
    if (has_finished(pod) && !by_uid_.contains(pod.meta.uid)) ignored_uids_.insert(pod.meta.uid);
  }
}

void DrainLedger::add(const kube::Pod& pod, LedgerChanges& changes) {
  by_uid_.emplace(pod.meta.uid, pods_.size());
  const bool finished = has_finished(pod);
  pods_.push_back(LedgerPod{.uid = pod.meta.uid,
                            .namespace_ = pod.meta.namespace_,
                            .name = pod.meta.name,
                            .gone = finished,
                            .reason = PendingPodReason::kEvicting,
                            .message = {}});
  LedgerPodRef ref{.uid = pod.meta.uid, .namespace_ = pod.meta.namespace_, .name = pod.meta.name};
  if (finished) {
    ++gone_tracked_;
    changes.gone.push_back(ref);
  }
  changes.newcomers.push_back(std::move(ref));
}

LedgerChanges DrainLedger::sync(std::span<const kube::Pod> must_leave) {
  LedgerChanges changes;
  if (restored_) {
    match_restored(must_leave, changes);
    restored_ = false;
  }
  std::unordered_map<std::string_view, const kube::Pod*> present;
  present.reserve(must_leave.size());
  for (const kube::Pod& pod : must_leave) present.emplace(pod.meta.uid, &pod);

  for (LedgerPod& entry : pods_) {
    if (entry.gone) continue;
    const auto it = present.find(entry.uid);
    if (it == present.end() || has_finished(*it->second)) {
      entry.gone = true;
      ++gone_tracked_;
      changes.gone.push_back(
          {.uid = entry.uid, .namespace_ = entry.namespace_, .name = entry.name});
    }
  }
  for (const kube::Pod& pod : must_leave) {
    if (by_uid_.contains(pod.meta.uid) || ignored_uids_.contains(pod.meta.uid)) continue;
    add(pod, changes);
  }
  return changes;
}

std::optional<std::size_t> DrainLedger::index_of(std::string_view uid) const {
  if (uid.empty()) return std::nullopt;
  const auto it = by_uid_.find(std::string(uid));
  if (it == by_uid_.end()) return std::nullopt;
  return it->second;
}

LedgerPod* DrainLedger::find_mutable(std::string_view uid) {
  const std::optional<std::size_t> index = index_of(uid);
  return index ? &pods_[*index] : nullptr;
}

const LedgerPod* DrainLedger::find(std::string_view uid) const {
  const std::optional<std::size_t> index = index_of(uid);
  return index ? &pods_[*index] : nullptr;
}

bool DrainLedger::mark_gone(std::string_view uid) {
  LedgerPod* entry = find_mutable(uid);
  if (entry == nullptr || entry->gone) return false;
  entry->gone = true;
  ++gone_tracked_;
  return true;
}

bool DrainLedger::set_pending(std::string_view uid, PendingPodReason reason, std::string message) {
  LedgerPod* entry = find_mutable(uid);
  if (entry == nullptr || entry->gone) return false;
  if (entry->reason == reason && entry->message == message) return false;
  entry->reason = reason;
  entry->message = std::move(message);
  return true;
}

std::int64_t DrainLedger::total_pods() const noexcept {
  return gone_uncounted_ + static_cast<std::int64_t>(pods_.size());
}

std::int64_t DrainLedger::eviction_pods() const noexcept { return gone_uncounted_ + gone_tracked_; }

std::int64_t DrainLedger::pending_count() const noexcept {
  return static_cast<std::int64_t>(pods_.size()) - gone_tracked_;
}

int DrainLedger::drain_progress() const noexcept {
  const std::int64_t total = total_pods();
  if (total <= 0) return 100;
  return static_cast<int>(eviction_pods() * 100 / total);
}

std::vector<LedgerPod> DrainLedger::pending_pods() const {
  std::vector<LedgerPod> pending;
  for (const LedgerPod& entry : pods_) {
    if (!entry.gone) pending.push_back(entry);
  }
  std::sort(pending.begin(), pending.end(), [](const LedgerPod& a, const LedgerPod& b) {
    return std::tie(a.namespace_, a.name, a.uid) < std::tie(b.namespace_, b.name, b.uid);
  });
  return pending;
}

std::vector<std::string> DrainLedger::pending_pod_names() const {
  std::vector<std::string> names;
  for (LedgerPod& entry : pending_pods()) names.push_back(std::move(entry.name));
  return names;
}

}  // namespace nmo::op
