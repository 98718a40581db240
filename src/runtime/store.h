// Store<T>: the cache a Reflector fills and controllers read (client-go's thread-safe store and
// indexer, kube-rs's reflector::Store). It holds immutable snapshots, std::shared_ptr<const T>,
// keyed by "namespace/name" ("name" for cluster-scoped objects), plus optional secondary indexes
// (for example pods by node) kept in step with the objects in the same critical section.
//
// A reader copies shared_ptrs and releases the lock at once; a snapshot stays valid and
// unchanged after the store replaced or deleted it. The writer side (replace() after a list,
// apply() per watch event) belongs to the one Reflector that owns the store.
//
// Threading: every method may be called from any thread at any time, except add_index(), which
// must be called before the store is first written (it aborts otherwise). The state is guarded by
// one std::shared_mutex: readers share it, writers hold it exclusively; index functions run
// under it and must not touch the store.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"
#include "kube/api/watch.h"

namespace nmo::runtime {

// A projection whose metadata is an ObjectMeta named `meta` (every projection of kube/api).
template <typename T>
concept WithObjectMeta = requires(const T& object) {
  { object.meta } -> std::convertible_to<const kube::ObjectMeta&>;
};

// The key of an object in a Store: "namespace/name", or "name" when the namespace is empty.
[[nodiscard]] inline std::string store_key(const kube::ObjectMeta& meta) {
  if (meta.namespace_.empty()) return meta.name;
  return meta.namespace_ + "/" + meta.name;
}

// One difference a write made to a Store: `before` is the previous snapshot (null when the
// object is new), `after` the new one (null when the object was deleted).
template <typename T>
struct StoreChange {
  std::shared_ptr<const T> before;
  std::shared_ptr<const T> after;
};

// A cache of immutable object snapshots with secondary indexes. See the file comment.
template <kube::Resource T>
requires WithObjectMeta<T>
class Store {
 public:
  using Snapshot = std::shared_ptr<const T>;
  // The index values of an object, e.g. {spec.nodeName}; an object may have none or several.
  using IndexFunction = std::function<std::vector<std::string>(const T&)>;

  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Registers the index `name`. Only before the first replace() or apply() (aborts otherwise,
  // as it does for a name registered twice or an empty function).
  void add_index(std::string name, IndexFunction function) {
    std::unique_lock lock(mutex_);
    NMO_CHECK(!written_, "Store::add_index after the store was written: " + name);
    NMO_CHECK(function != nullptr, "Store::add_index without a function: " + name);
    const bool added = index_functions_.emplace(name, std::move(function)).second;
    NMO_CHECK(added, "Store::add_index registered twice: " + name);
    indexes_[name];
  }

  // Whether the index `name` is registered (a shared store's users register the indexes they
  // read; the second to name one finds it there).
  [[nodiscard]] bool has_index(std::string_view name) const {
    std::shared_lock lock(mutex_);
    return index_functions_.contains(name);
  }

  // The object stored under `key` ("namespace/name" or "name"), or null.
  [[nodiscard]] Snapshot get(std::string_view key) const {
    std::shared_lock lock(mutex_);
    auto it = objects_.find(key);
    return it == objects_.end() ? nullptr : it->second;
  }

  // Every object, ordered by key.
  [[nodiscard]] std::vector<Snapshot> list() const {
    std::shared_lock lock(mutex_);
    std::vector<Snapshot> out;
    out.reserve(objects_.size());
    for (const auto& [key, object] : objects_) out.push_back(object);
    return out;
  }

  // How many objects are stored.
  [[nodiscard]] std::size_t size() const {
    std::shared_lock lock(mutex_);
    return objects_.size();
  }

  // The objects whose index `index` contains `value`, ordered by key. Aborts when `index` was
  // never registered (a bug in the caller).
  [[nodiscard]] std::vector<Snapshot> by_index(std::string_view index,
                                               std::string_view value) const {
    std::shared_lock lock(mutex_);
    auto found = indexes_.find(index);
    NMO_CHECK(found != indexes_.end(),
              "Store::by_index of an unknown index: " + std::string(index));
    std::vector<Snapshot> out;
    auto keys = found->second.find(value);
    if (keys == found->second.end()) return out;
    out.reserve(keys->second.size());
    for (const std::string& key : keys->second) out.push_back(objects_.find(key)->second);
    return out;
  }

  // True once replace() filled the store for the first time (the initial list completed).
  [[nodiscard]] bool has_synced() const { return synced_.load(std::memory_order_acquire); }

  // Writer side, for the owning Reflector: replaces the whole content with `objects` (the result
  // of a list) in one step, so readers see either the old or the new content, never a mix, and
  // marks the store synced. Returns the differences: new and changed objects (a different
  // resourceVersion) in the order of `objects`, then removed objects ordered by key. A later
  // duplicate key in `objects` wins.
  std::vector<StoreChange<T>> replace(std::vector<T> objects) {
    Objects next;
    std::vector<std::string> order;  // the keys in the order of `objects`, first occurrence only
    order.reserve(objects.size());
    for (T& object : objects) {
      std::string key = store_key(object.meta);
      auto snapshot = std::make_shared<const T>(std::move(object));
      auto [it, inserted] = next.insert_or_assign(std::move(key), std::move(snapshot));
      if (inserted) order.push_back(it->first);
    }
    Indexes next_indexes;
    for (const auto& [name, function] : index_functions_) next_indexes[name];
    for (const auto& [key, object] : next) add_to_indexes(next_indexes, key, *object);

    // The differences, under the shared lock only: readers go on meanwhile, and no other writer
    // can change objects_ before the swap below (the store has one writer).
    std::vector<StoreChange<T>> changes;
    {
      std::shared_lock lock(mutex_);
      for (const std::string& key : order) {
        const Snapshot& now = next.find(key)->second;
        auto before = objects_.find(key);
        if (before == objects_.end()) {
          changes.push_back({nullptr, now});
        } else if (before->second->meta.resource_version != now->meta.resource_version) {
          changes.push_back({before->second, now});
        }
      }
      for (const auto& [key, object] : objects_) {
        if (!next.contains(key)) changes.push_back({object, nullptr});
      }
    }
    {
      std::unique_lock lock(mutex_);
      written_ = true;
      objects_.swap(next);
      indexes_.swap(next_indexes);
    }
    synced_.store(true, std::memory_order_release);
    return changes;  // the previous content (now in `next`) is released outside the lock
  }

  // Writer side, for the owning Reflector: applies one watch event. kAdded and kModified store
  // `object` (an upsert); kDeleted removes its key. Returns the change: for a deletion `before`
  // is the stored snapshot, or `object` itself when the key was not stored. kBookmark and kError
  // carry no object and change nothing (both sides null).
  StoreChange<T> apply(kube::WatchEventType type, T object) {
    if (type != kube::WatchEventType::kAdded && type != kube::WatchEventType::kModified &&
        type != kube::WatchEventType::kDeleted) {
      return {};
    }
    std::string key = store_key(object.meta);
    auto snapshot = std::make_shared<const T>(std::move(object));
    std::unique_lock lock(mutex_);
    written_ = true;
    auto it = objects_.find(key);
    Snapshot before = it == objects_.end() ? nullptr : it->second;
    if (before != nullptr) remove_from_indexes(indexes_, key, *before);
    if (type == kube::WatchEventType::kDeleted) {
      if (it != objects_.end()) objects_.erase(it);
      return {before != nullptr ? before : snapshot, nullptr};
    }
    add_to_indexes(indexes_, key, *snapshot);
    objects_.insert_or_assign(std::move(key), snapshot);
    return {std::move(before), std::move(snapshot)};
  }

 private:
  using Objects = std::map<std::string, Snapshot, std::less<>>;
  // index name -> index value -> keys of the objects with that value.
  using Indexes =
      std::map<std::string, std::map<std::string, std::set<std::string>, std::less<>>, std::less<>>;

  void add_to_indexes(Indexes& indexes, const std::string& key, const T& object) const {
    for (const auto& [name, function] : index_functions_) {
      auto& index = indexes[name];
      for (std::string& value : function(object)) index[std::move(value)].insert(key);
    }
  }

  void remove_from_indexes(Indexes& indexes, const std::string& key, const T& object) const {
    for (const auto& [name, function] : index_functions_) {
      auto& index = indexes[name];
      for (const std::string& value : function(object)) {
        auto keys = index.find(value);
        if (keys == index.end()) continue;
        keys->second.erase(key);
        if (keys->second.empty()) index.erase(keys);
      }
    }
  }

  mutable std::shared_mutex mutex_;
  Objects objects_;  // guarded by mutex_
  Indexes indexes_;  // guarded by mutex_
  // Written only under mutex_ before the first write (add_index), read-only afterwards.
  std::map<std::string, IndexFunction, std::less<>> index_functions_;
  bool written_ = false;  // guarded by mutex_
  std::atomic<bool> synced_{false};
};

}  // namespace nmo::runtime
