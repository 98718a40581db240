// LruCache: a map bounded in count that forgets its least recently used entry to make room, so
// what strangers can make it hold (API warnings, the tokens of /metrics callers) never grows
// without bound. Expiry, where wanted, is the value's business (the metrics authorizer keeps
// the deadline in the value and drops a stale entry when it finds one).
//
// Threading: none; the owner guards it (a mutex, or one executor).
#pragma once

#include <cstddef>
#include <functional>
#include <iterator>
#include <list>
#include <unordered_map>
#include <utility>

#include "base/check.h"

namespace nmo {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class LruCache {
 public:
  // `capacity` must be at least 1 (NMO_CHECK).
  explicit LruCache(std::size_t capacity) : capacity_(capacity) {
    NMO_CHECK(capacity >= 1, "LruCache: capacity must be at least 1");
  }

  // The value of `key`, now the most recently used entry; nullptr when absent. The pointer is
  // valid until the next put() or erase().
  [[nodiscard]] Value* find(const Key& key) {
    const auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, found->second);
    return &found->second->second;
  }

  // Sets `key` to `value` as the most recently used entry, forgetting the least recently used
  // one when the cache is full.
  void put(const Key& key, Value value) {
    if (Value* existing = find(key)) {
      *existing = std::move(value);
      return;
    }
    if (entries_.size() >= capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
    }
    entries_.emplace_front(key, std::move(value));
    index_.emplace(key, entries_.begin());
  }

  // Forgets `key`; false when it was not there.
  bool erase(const Key& key) {
    const auto found = index_.find(key);
    if (found == index_.end()) return false;
    entries_.erase(found->second);
    index_.erase(found);
    return true;
  }

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }

 private:
  using Entries = std::list<std::pair<Key, Value>>;

  std::size_t capacity_;
  Entries entries_;  // most recently used first
  std::unordered_map<Key, typename Entries::iterator, Hash> index_;
};

}  // namespace nmo
