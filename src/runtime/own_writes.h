// OwnWrites<T>: read-your-own-writes over a cache. A controller's writes go to the API server and
// come back through a watch a moment later; a reconcile in between must not decide from the
// older object (a NodeMaintenance it just created looks deleted, a status it just wrote looks
// unwritten, and the decision and its Events repeat). OwnWrites keeps each object as the
// controller's last write returned it, with every resourceVersion that write chain replaced,
// and hands it out instead of the cached one while the cache still shows one of those versions
// (or nothing, after a create). As soon as the cache shows any other version, that is our write
// arriving or someone else's after it, and the cache is right again: the memory goes.
//
//   OwnWrites<NodeMaintenance> own;
//   own.wrote(created, "");                   // after a create (no version replaced)
//   own.wrote(patched, before.meta.resource_version);
//   auto view = own.fresher(key, store.get(key));  // ours, or the cache's
//   auto all = own.fresher(store.list());            // the same over a whole store
//   own.forget(key);                          // after a delete
//
// Threading: not synchronised; one executor thread (a controller's).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/store.h"

namespace nmo::runtime {

template <typename T>
requires WithObjectMeta<T>
class OwnWrites {
 public:
  using Snapshot = std::shared_ptr<const T>;

  /// Records `after`, what a write of ours returned, which replaced the object at
  /// `replaced_version` ("" for a create). A write that follows our previous one (it replaced
  /// the version that one returned) keeps the versions before it too.
  void wrote(T after, const std::string& replaced_version) {
    const std::string key = store_key(after.meta);
    Entry next;
    if (auto found = entries_.find(key);
        found != entries_.end() &&
        found->second.object->meta.resource_version == replaced_version) {
      next.replaced = std::move(found->second.replaced);
    }
    next.replaced.insert(replaced_version);
    next.object = std::make_shared<const T>(std::move(after));
    entries_.insert_or_assign(key, std::move(next));
  }

  /// The object to decide from for `key` ("namespace/name" or "name"): ours while `cached` (what
  /// the cache shows, null when nothing) is at a version our writes replaced, else `cached`.
  [[nodiscard]] Snapshot fresher(const std::string& key, Snapshot cached) {
    auto found = entries_.find(key);
    if (found == entries_.end()) return cached;
    const std::string seen = cached != nullptr ? cached->meta.resource_version : std::string();
    if (found->second.replaced.contains(seen)) return found->second.object;
    entries_.erase(found);
    return cached;
  }

  /// fresher() over a whole store's content (`cached`, as Store::list() gives it): each object
  /// as fresher() would give it, then those we created that the cache does not show yet.
  [[nodiscard]] std::vector<Snapshot> fresher(std::vector<Snapshot> cached) {
    std::set<std::string, std::less<>> seen;
    for (Snapshot& object : cached) {
      std::string key = store_key(object->meta);
      object = fresher(key, std::move(object));
      seen.insert(std::move(key));
    }
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (seen.contains(it->first)) {
        ++it;
      } else if (it->second.replaced.contains("")) {
        cached.push_back(it->second.object);  // created by us; the cache has not seen it yet
        ++it;
      } else {
        it = entries_.erase(it);  // gone from the cache since: deleted after our write
      }
    }
    return cached;
  }

  /// Drops what is remembered about `key` (deleted, or the write's outcome is unknown).
  void forget(std::string_view key) {
    if (auto found = entries_.find(key); found != entries_.end()) entries_.erase(found);
  }

  [[nodiscard]] std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Snapshot object;
    // The versions our write chain replaced; "" when it began with a create.
    std::set<std::string> replaced;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace nmo::runtime
