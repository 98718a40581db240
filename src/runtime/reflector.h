// Reflector<T>: keeps a Store<T> equal to what the API server holds for one collection (one
// kind, one namespace or all, one label/field selector), as client-go's Reflector and kube-rs's
// watcher + reflector do:
//
//   list every page (limit 500) -> store.replace() -> synced -> watch from the list's
//   resourceVersion (bookmarks on, server timeout 290 s) -> apply ADDED/MODIFIED/DELETED and
//   remember the last resourceVersion (bookmarks included) -> when the watch ends:
//     - ended by the server (its timeout): watch again from the last version at once;
//     - kExpired / kGone (410, the version is too old): list again;
//     - any other error: back off (0.8 s -> 30 s, full jitter, reset after 2 min healthy) and
//       watch again from the last version (a 410 there leads to a list).
//   A failed list is retried with the same backoff. Each restart is logged at info with its
//   reason and counted (watch_restarts(), relists()). An object that does not decode into T is
//   logged and skipped.
//
//   auto store = std::make_shared<runtime::Store<kube::Pod>>();
//   store->add_index("node", [](const kube::Pod& p) { return std::vector{p.spec.node_name}; });
//   runtime::Reflector<kube::Pod> pods(executor, client, "", {.field_selector = "..."}, store);
//   pods.on_change([&](const kube::Pod* before, const kube::Pod* after) { ... });
//   pods.start();
//   co_await pods.wait_synced(std::chrono::seconds(30));
//   ...
//   co_await pods.stop();
//
// Change handlers run after the store was updated, on the reflector's strand (never two at
// once), in event order: for each watch event, and for each difference a list made (new and
// changed objects, then removed ones). They must not block; they may read the store.
//
// Threading: the Store's add_index() must be called before start(); on_change() and subscribe()
// before start(), or later from the thread that runs the executor when that executor has one
// thread (the Cache's case: a subscriber added late sees the changes from then on). start(),
// stop(), wait_synced() and the read-only accessors may be called from any thread or coroutine.
// The loop runs on a strand of the given executor. stop() cancels the watch and the backoff
// timer and waits for the loop to end; a list in flight is not interrupted (it ends within the
// client's request timeout). Destroying a Reflector whose loop is still running aborts: call
// stop() first.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/api/resource.h"
#include "kube/api/watch.h"
#include "kube/client/client.h"
#include "kube/client/request_options.h"
#include "runtime/store.h"

namespace nmo::runtime {

namespace internal {

// The part of Reflector<T> that does not depend on T: the list/watch state machine, the
// backoff, start/stop and the counters. Reflector<T> supplies the typed list and the decoding.
class ReflectorLoop {
 public:
  // `kind` and `ns` name the collection in logs; `collection_path` is its URL path.
  ReflectorLoop(const asio::any_io_executor& executor, kube::Client& client, std::string kind,
                std::string ns, std::string collection_path, kube::ListOptions selectors,
                const Clock& clock);
  virtual ~ReflectorLoop();

  ReflectorLoop(const ReflectorLoop&) = delete;
  ReflectorLoop& operator=(const ReflectorLoop&) = delete;

  // Spawns the loop on the reflector's strand. Call once; ignored after stop().
  void start();

  // Ends the loop: cancels the watch and any backoff wait, then waits until the loop ended.
  // Wakes wait_synced() callers (they return synced()). Idempotent; fine before start().
  asio::awaitable<void> stop();

  // True once the first list filled the store.
  [[nodiscard]] bool synced() const { return synced_.load(std::memory_order_acquire); }

  // Waits until synced() or until `timeout` passed or stop() was called; returns synced().
  asio::awaitable<bool> wait_synced(std::chrono::milliseconds timeout);

  // How many times a watch ended (for any reason but stop()) and the loop went on.
  [[nodiscard]] std::uint64_t watch_restarts() const {
    return watch_restarts_.load(std::memory_order_relaxed);
  }

  // How many lists after the first one filled the store (after a 410).
  [[nodiscard]] std::uint64_t relists() const { return relists_.load(std::memory_order_relaxed); }

 protected:
  // Lists every page of the collection with `options`, replaces the store's content and runs the
  // change handlers; returns the list's resourceVersion.
  virtual asio::awaitable<Result<std::string>> list_into_store(kube::ListOptions options) = 0;

  // Decodes the object of an ADDED, MODIFIED or DELETED event, applies it to the store and runs
  // the change handlers; logs and skips an object that does not decode.
  virtual void apply_event(const kube::WatchEvent& event) = 0;

  [[nodiscard]] kube::Client& client() const { return client_; }
  [[nodiscard]] const std::string& watched_namespace() const { return ns_; }
  [[nodiscard]] const log::Logger& logger() const { return logger_; }

 private:
  // How a watch ended: the error, or success when the server closed it normally; and the last
  // resourceVersion it saw (events and bookmarks), to watch again from.
  struct WatchEnd {
    Result<void> outcome;
    std::string version;
  };

  asio::awaitable<void> run();
  // One watch from `version`, until it ends.
  asio::awaitable<WatchEnd> watch_once(std::string version);
  asio::awaitable<void> pause(std::chrono::nanoseconds delay);
  asio::awaitable<void> stop_on_strand();
  asio::awaitable<bool> wait_synced_on_strand(std::chrono::milliseconds timeout);
  void mark_synced();
  void finished();

  asio::strand<asio::any_io_executor> strand_;
  kube::Client& client_;
  const std::string ns_;
  const std::string collection_path_;
  const kube::ListOptions selectors_;
  const Clock& clock_;
  const log::Logger logger_;

  std::atomic<bool> synced_{false};
  std::atomic<bool> running_{false};
  std::atomic<std::uint64_t> watch_restarts_{0};
  std::atomic<std::uint64_t> relists_{0};

  // Owned by the strand: touched only by coroutines running on it.
  bool started_ = false;
  bool stopping_ = false;
  kube::WatchStream* watch_ = nullptr;  // the watch in progress, owned by watch_once()
  asio::steady_timer backoff_timer_;
  asio::steady_timer done_timer_;  // never expires; cancelled when the loop ends
  std::vector<asio::steady_timer*> sync_waiters_;
};

}  // namespace internal

// Lists and watches one collection of T into a Store<T>. See the file comment.
template <kube::Resource T>
requires WithObjectMeta<T>
class Reflector final : public internal::ReflectorLoop {
 public:
  // Called after the store changed: (null, new) for an addition, (old, new) for an update,
  // (old, null) for a deletion. The pointers are valid during the call only.
  using ChangeHandler = std::function<void(const T* old_or_null, const T* new_or_null)>;

  // A reflector of the objects of T in `namespace_` ("" = all namespaces, or a cluster-scoped
  // kind) matching the label and field selectors of `selectors` (used for the list and the
  // watch; its paging fields are ignored). The loop runs on a strand of `executor`; `client`,
  // `clock` and the io_context must outlive the reflector. `store` must not be null.
  Reflector(const asio::any_io_executor& executor, kube::Client& client, std::string namespace_,
            kube::ListOptions selectors, std::shared_ptr<Store<T>> store,
            const Clock& clock = system_clock())
      : ReflectorLoop(executor, client, std::string(kube::ResourceInfo<T>::kKind), namespace_,
                      kube::collection_path<T>(namespace_), std::move(selectors), clock),
        store_(std::move(store)) {
    NMO_CHECK(store_ != nullptr, "Reflector needs a store");
  }

  ~Reflector() override = default;
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  // Adds a change handler for the reflector's whole life (see the threading note). Handlers run
  // in the order they were added.
  void on_change(ChangeHandler handler) { subscribe(std::move(handler)); }

  // Adds a change handler that unsubscribe() removes again (the Cache's handles do when they
  // are released); returns its id.
  std::uint64_t subscribe(ChangeHandler handler) {
    const std::uint64_t id = next_subscription_++;
    handlers_.emplace(id, std::make_shared<const ChangeHandler>(std::move(handler)));
    return id;
  }
  void unsubscribe(std::uint64_t id) { handlers_.erase(id); }

  // The store this reflector fills.
  [[nodiscard]] const std::shared_ptr<Store<T>>& store() const { return store_; }

 private:
  asio::awaitable<Result<std::string>> list_into_store(kube::ListOptions options) override {
    std::string ns = watched_namespace();
    auto listed = co_await client().template list_all<T>(std::move(ns), std::move(options));
    if (!listed) co_return listed.error();
    // A named vector, not a range-for over the temporary: GCC 12 mishandles the lifetime of a
    // range-for temporary inside a coroutine.
    const std::vector<StoreChange<T>> changes = store_->replace(std::move(listed->items));
    for (const StoreChange<T>& change : changes) notify(change);
    co_return std::move(listed->resource_version);
  }

  void apply_event(const kube::WatchEvent& event) override {
    Result<T> decoded = kube::ResourceInfo<T>::decode(event.object);
    if (!decoded) {
      logger().warn("skipping a watched object that does not decode",
                    {{"type", kube::to_string(event.type)},
                     {"resource_version", kube::resource_version_of(event.object)},
                     {"error", decoded.error().describe()}});
      return;
    }
    notify(store_->apply(event.type, std::move(*decoded)));
  }

  void notify(const StoreChange<T>& change) const {
    // By id, looking the next one up after each call: a handler may subscribe or unsubscribe (a
    // controller acquiring or releasing a cache handle) without a copy of the list per event.
    // The handler is held by its own reference while it runs, in case it unsubscribes itself.
    for (auto it = handlers_.begin(); it != handlers_.end();) {
      const std::uint64_t id = it->first;
      const std::shared_ptr<const ChangeHandler> handler = it->second;
      (*handler)(change.before.get(), change.after.get());
      it = handlers_.upper_bound(id);
    }
  }

  std::shared_ptr<Store<T>> store_;
  // By subscription id, which grows: the map's order is the order of subscription.
  std::map<std::uint64_t, std::shared_ptr<const ChangeHandler>> handlers_;
  std::uint64_t next_subscription_ = 0;
};

}  // namespace nmo::runtime
