// WatchSet: the caches a controller declares (kube-rs's Controller::watches as the model), each
// added once with what it is, then started, waited for and stopped together, instead of every
// reflector being listed again in start, wait-for-sync and stop.
//
//   auto& pods = watches.add("the pod cache", std::make_unique<Reflector<kube::Pod>>(...));
//   pods.on_change(...);
//   watches.start();
//   if (auto synced = co_await watches.wait_synced(60s); !synced) ...  // names the laggard
//   co_await watches.stop();
//
// A reflector added after start() starts at once (a watch that depends on what the cluster
// serves, found out while starting): give it its change handlers before adding it.
//
// Threading: add(), start() and the awaitables on the controller's executor, like the
// reflectors' own start() and on_change().
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "http/asio.h"
#include "runtime/reflector.h"

namespace nmo::runtime {

class WatchSet {
 public:
  WatchSet() = default;
  WatchSet(const WatchSet&) = delete;
  WatchSet& operator=(const WatchSet&) = delete;

  // Takes `reflector`, named `what` in errors ("the NodeMaintenance cache"); returns it for its
  // store and change handlers (the reference lives as long as the set).
  template <kube::Resource T>
  requires WithObjectMeta<T> Reflector<T>
  &add(std::string what, std::unique_ptr<Reflector<T>> reflector) {
    Reflector<T>& added = *reflector;
    entries_.push_back(Entry{.what = std::move(what), .reflector = std::move(reflector)});
    if (started_) added.start();
    return added;
  }

  // Starts every reflector added (and, from now on, each one added later).
  void start();

  // Waits up to `timeout` in all for them to sync; kTimeout "<what> did not sync" for the first
  // that did not.
  asio::awaitable<Result<void>> wait_synced(std::chrono::milliseconds timeout);

  // Stops them all, in the order added.
  asio::awaitable<void> stop();

 private:
  struct Entry {
    std::string what;
    std::unique_ptr<internal::ReflectorLoop> reflector;
  };
  std::vector<Entry> entries_;
  bool started_ = false;
};

}  // namespace nmo::runtime
