// The pure parts of the event recorder's correlator (client-go's events_cache.go): the keys
// that decide which events are "the same" (aggregation) and which count against one spam budget,
// an LRU map that bounds what is remembered, and the per-key spam filter.
//
// Threading: none of these types synchronise; the recorder's writer owns them on its strand.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/check.h"
#include "base/clock.h"
#include "runtime/event_recorder.h"

namespace nmo::runtime::internal {

/// Who reports the events (source.component / source.host).
struct EventSource {
  std::string component;
  std::string host;
};

/// Events with equal keys are aggregated into one Event object: the source, the involved
/// object (apiVersion, kind, namespace, name, uid), type, reason and message. Fields are
/// length-prefixed, so no choice of field values makes two different events collide.
[[nodiscard]] std::string aggregation_key(const EventSource& source, const ObjectRef& regarding,
                                          const EventOptions& event);

/// Events with equal spam keys share one spam-filter budget: the source, the involved object,
/// type and reason (not the message).
[[nodiscard]] std::string spam_key(const EventSource& source, const ObjectRef& regarding,
                                   const EventOptions& event);

/// A map of at most `capacity` entries that forgets the least recently used one to make room.
template <typename V>
class LruCache {
 public:
  /// `capacity` must be at least 1 (NMO_CHECK).
  explicit LruCache(std::size_t capacity) : capacity_(capacity) {
    NMO_CHECK(capacity >= 1, "LruCache: capacity must be at least 1");
  }

  /// The value of `key`, now the most recently used; nullptr when absent. The pointer is valid
  /// until the next put().
  [[nodiscard]] V* get(const std::string& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, it->second);
    return &it->second->second;
  }

  /// Sets `key` to `value` as the most recently used entry, evicting the least recently used
  /// entry when the cache is full.
  void put(const std::string& key, V value) {
    if (V* existing = get(key)) {
      *existing = std::move(value);
      return;
    }
    if (entries_.size() == capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
    }
    entries_.emplace_front(key, std::move(value));
    index_.emplace(key, entries_.begin());
  }

  /// Removes `key` if present.
  void erase(const std::string& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return;
    entries_.erase(it->second);
    index_.erase(it);
  }

  /// How many entries are held.
  [[nodiscard]] std::size_t size() const { return entries_.size(); }

 private:
  using Entry = std::pair<std::string, V>;
  std::size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
};

/// Where the events of one aggregation key went.
struct CachedEvent {
  std::string namespace_;  ///< of the Event object  NOLINT(readability-identifier-naming)
  std::string name;        ///< of the Event object
  std::int64_t count = 0;  ///< its count as last written
};

/// Per-key token buckets that never borrow (client-go's passive TryAccept): `burst` events at
/// once, then one more each `refill`. A refused event takes no token, so a key that keeps
/// spamming is let through again as soon as a token has been made. At most `capacity` keys are
/// tracked (least recently used forgotten, which refills them).
class SpamFilter {
 public:
  /// `burst` >= 1 and `refill` > 0 (NMO_CHECK). `clock` must outlive the filter.
  SpamFilter(int burst, std::chrono::nanoseconds refill, std::size_t capacity, const Clock& clock);

  /// Takes a token for `key`: true when the event may be written.
  [[nodiscard]] bool allow(const std::string& key);

 private:
  const Clock& clock_;
  std::chrono::nanoseconds refill_;
  std::chrono::nanoseconds capacity_;  // time to fill an empty bucket: burst * refill_
  // Per key: when its bucket was (or would have been) empty; at time t it holds
  // min(burst, (t - empty_at) / refill_) tokens.
  LruCache<Clock::time_point> empty_at_;
};

}  // namespace nmo::runtime::internal
