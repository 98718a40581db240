// Cache: the informers of one process, shared by every controller in it (controller-runtime's
// informer cache inside cluster.Cluster, kube-rs's shared reflector stores). A collection (one
// kind, one namespace or all, one label and field selector) is listed and watched once, however
// many controllers read it; reads come from its Store, writes go to the API server.
//
// Two kinds of informer:
//   - declared: informer<T>(what, namespace, selectors) returns the one Reflector<T> of that
//     collection, made on first use and kept for the life of the cache. Controllers declare
//     theirs in their constructors, give them change handlers and indexes, and wait for them
//     in start() (wait_synced); the Manager starts the cache before the leader's runnables. One
//     declared after start() starts at once.
//   - scoped: acquire<T>(what, namespace, selectors, handler) returns a handle to a shared
//     informer that lives while any handle does, and `linger` after the last one went (so a
//     hand-over from one controller to the next does not list again): the pods of a node being
//     drained, watched by field selector only while a maintenance needs them (docs/design.md
//     §7 says why pods are not one cluster-wide informer).
//
//   runtime::Cache cache(executor, client);
//   auto& nodes = cache.informer<kube::Node>("the node cache");
//   nodes.on_change([&](const kube::Node* before, const kube::Node* after) { ... });
//   cache.add_index(nodes, "zone", [](const kube::Node& n) { ... });
//   co_await cache.start();
//   NMO_CO_TRY(co_await cache.wait_synced({&nodes}, 60s));
//   auto pods = cache.acquire<kube::Pod>("the pods of w1", "", {.field_selector = ...}, handler);
//   co_await pods.wait_synced(60s); for (auto& pod : pods.store().list()) ...
//
// Threading: every call on the thread that runs the executor, which has exactly one thread (the
// operator's io_context): handlers may be added after start for that reason. Handles must be
// released, and stop() awaited, before the cache is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "kube/client/request_options.h"
#include "runtime/reflector.h"
#include "runtime/runnable.h"
#include "runtime/store.h"

namespace nmo::runtime {

class Cache;

// A scoped informer held by one user: its store while held, and the handler given to
// Cache::acquire() subscribed until it is released. Move-only; releasing (or destroying) it lets
// the informer go `linger` after the last holder.
template <kube::Resource T>
requires WithObjectMeta<T>
class InformerHandle {
 public:
  InformerHandle() = default;
  InformerHandle(InformerHandle&& other) noexcept { *this = std::move(other); }
  InformerHandle& operator=(InformerHandle&& other) noexcept;
  InformerHandle(const InformerHandle&) = delete;
  InformerHandle& operator=(const InformerHandle&) = delete;
  ~InformerHandle() { release(); }

  [[nodiscard]] explicit operator bool() const { return reflector_ != nullptr; }
  [[nodiscard]] const Store<T>& store() const { return *reflector_->store(); }
  [[nodiscard]] bool synced() const { return reflector_->synced(); }
  asio::awaitable<bool> wait_synced(std::chrono::milliseconds timeout) {
    return reflector_->wait_synced(timeout);
  }
  void release();

 private:
  friend class Cache;
  InformerHandle(Cache* cache, std::string key, Reflector<T>* reflector, std::uint64_t subscription)
      : cache_(cache), key_(std::move(key)), reflector_(reflector), subscription_(subscription) {}

  Cache* cache_ = nullptr;
  std::string key_;
  Reflector<T>* reflector_ = nullptr;
  std::uint64_t subscription_ = 0;
};

struct CacheOptions {
  /// How long a scoped informer outlives its last handle.
  std::chrono::milliseconds linger{std::chrono::seconds(30)};
};

class Cache final : public Runnable {
 public:
  /// `client`, `clock` and the executor's io_context must outlive the cache.
  Cache(asio::any_io_executor executor, kube::Client& client, CacheOptions options = {},
        const Clock& clock = system_clock());
  ~Cache() override;
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  /// The declared informer of T in `namespace_` ("" = all, or cluster-scoped) with the label
  /// and field selectors of `selectors`: made now, or the one an earlier call made. `what`
  /// names it in errors ("the node cache"); the first declaration's name stays.
  template <kube::Resource T>
  requires WithObjectMeta<T> Reflector<T>
  &informer(std::string what, std::string namespace_ = {}, kube::ListOptions selectors = {}) {
    const std::string key = key_of<T>(namespace_, selectors);
    if (auto found = declared_.find(key); found != declared_.end()) {
      return static_cast<Reflector<T>&>(*found->second.reflector);
    }
    auto reflector =
        std::make_unique<Reflector<T>>(executor_, client_, std::move(namespace_),
                                       std::move(selectors), std::make_shared<Store<T>>(), clock_);
    Reflector<T>& made = *reflector;
    declared_.emplace(key, Entry{.what = std::move(what), .reflector = std::move(reflector)});
    declared_order_.push_back(key);
    if (started_ && !stopped_) made.start();
    return made;
  }

  /// Registers the index `name` on the store of `informer` unless a user did already (the same
  /// name must mean the same index: declare names once, as constants). Before that informer's
  /// first list, like Store::add_index.
  template <kube::Resource T>
  requires WithObjectMeta<T>
  static void add_index(Reflector<T>& informer, const std::string& name,
                        typename Store<T>::IndexFunction function) {
    if (!informer.store()->has_index(name)) informer.store()->add_index(name, std::move(function));
  }

  /// A handle to the scoped informer of T in `namespace_` with `selectors`, started now or
  /// shared with its other holders; `handler` (may be empty) is told of its changes while the
  /// handle is held. After stop(), an empty handle.
  template <kube::Resource T>
  requires WithObjectMeta<T> InformerHandle<T> acquire(
      std::string what, std::string namespace_, kube::ListOptions selectors,
      typename Reflector<T>::ChangeHandler handler = {}) {
    if (stopped_) return {};
    std::string key = key_of<T>(namespace_, selectors);
    auto found = scoped_.find(key);
    if (found == scoped_.end()) {
      auto reflector = std::make_unique<Reflector<T>>(executor_, client_, std::move(namespace_),
                                                      std::move(selectors),
                                                      std::make_shared<Store<T>>(), clock_);
      found =
          scoped_.emplace(key, Scoped{.what = std::move(what), .reflector = std::move(reflector)})
              .first;
      found->second.reflector->start();
    }
    Scoped& entry = found->second;
    ++entry.holders;
    if (entry.linger != nullptr) entry.linger->cancel();
    auto& reflector = static_cast<Reflector<T>&>(*entry.reflector);
    const std::uint64_t subscription =
        handler ? reflector.subscribe(std::move(handler)) : kNoSubscription;
    return InformerHandle<T>(this, std::move(key), &reflector, subscription);
  }

  /// Starts every declared informer (and from now on each one declared later). Returns at once:
  /// a controller waits for the informers it reads (wait_synced).
  asio::awaitable<Result<void>> start() override;

  /// Waits up to `timeout` in all for `informers` (declared ones) to sync; kTimeout "<what> did
  /// not sync" for the first that did not.
  asio::awaitable<Result<void>> wait_synced(std::vector<const internal::ReflectorLoop*> informers,
                                            std::chrono::milliseconds timeout);

  /// Stops every informer, declared and scoped. Idempotent.
  asio::awaitable<void> stop() override;

  /// Informers running now (declared and scoped), and the scoped ones among them: one watch
  /// connection each.
  [[nodiscard]] std::size_t informers() const { return declared_.size() + scoped_.size(); }
  [[nodiscard]] std::size_t scoped_informers() const { return scoped_.size(); }

 private:
  template <kube::Resource T>
  requires WithObjectMeta<T>
  friend class InformerHandle;

  static constexpr std::uint64_t kNoSubscription = ~std::uint64_t{0};

  struct Entry {
    std::string what;
    std::unique_ptr<internal::ReflectorLoop> reflector;
  };
  struct Scoped {
    std::string what;
    std::unique_ptr<internal::ReflectorLoop> reflector;
    int holders = 0;
    std::unique_ptr<asio::steady_timer> linger;
  };

  template <kube::Resource T>
  static std::string key_of(const std::string& namespace_, const kube::ListOptions& selectors) {
    return std::string(typeid(T).name()) + "|" + kube::collection_path<T>(namespace_) + "|" +
           selectors.label_selector + "|" + selectors.field_selector;
  }

  // A holder of the scoped informer `key` let go: `subscription` is unsubscribed by the caller;
  // the informer stops `linger` after its last holder.
  void release(const std::string& key);
  asio::awaitable<void> stop_after_linger(std::string key);

  asio::any_io_executor executor_;
  kube::Client& client_;
  const CacheOptions options_;
  const Clock& clock_;
  std::map<std::string, Entry> declared_;
  std::vector<std::string> declared_order_;
  std::map<std::string, Scoped> scoped_;
  bool started_ = false;
  bool stopped_ = false;
};

template <kube::Resource T>
requires WithObjectMeta<T> InformerHandle<T>
&InformerHandle<T>::operator=(InformerHandle&& other) noexcept {
  if (this == &other) return *this;
  release();
  cache_ = std::exchange(other.cache_, nullptr);
  key_ = std::move(other.key_);
  reflector_ = std::exchange(other.reflector_, nullptr);
  subscription_ = other.subscription_;
  return *this;
}

template <kube::Resource T>
requires WithObjectMeta<T>
void InformerHandle<T>::release() {
  if (cache_ == nullptr) return;
  if (subscription_ != Cache::kNoSubscription) reflector_->unsubscribe(subscription_);
  cache_->release(key_);
  cache_ = nullptr;
  reflector_ = nullptr;
}

}  // namespace nmo::runtime
