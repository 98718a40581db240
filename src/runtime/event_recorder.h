// EventRecorder: publishes core v1 Events (/api/v1/namespaces/<ns>/events) about objects, so
// `kubectl describe <object>` and `kubectl get events` show what a controller did (client-go's
// record.EventRecorder with its correlator).
//
//   EventRecorder recorder(executor, client, "node-maintenance-operator", pod_name);
//   recorder.start();
//   recorder.record(node_ref, {.type = EventType::kNormal, .reason = "Cordoned", .message =
//   "..."});
//   ...
//   co_await recorder.stop(std::chrono::seconds(5));
//
// record() never blocks and never waits for the API server: it puts the event into a bounded
// queue (dropped with a warning when full) and one background coroutine writes them:
//   - Aggregation: an event equal to an earlier one (same object, type, reason, message and
//     source) PATCHes the existing Event (count + 1, lastTimestamp) instead of creating another;
//     an LRU cache remembers which Event each such key went to. When the Event is gone (expired
//     or deleted: 404) a new one is created.
//   - Spam filter: per object and reason, a burst of 25 events, then one per 5 minutes; the
//     rest are dropped (logged at debug level 2).
//   - A failed write is logged and dropped (events are best effort, as in client-go); one
//     refused by RBAC is said once per namespace.
// Events about cluster-scoped objects (namespace_ "") go to namespace `default`, the only
// namespace the API server allows for them.
//
// Threading: record() may be called from any thread, also before start() and from coroutines.
// start() once; flush() and stop() may be awaited from coroutines on any executor. The writer
// runs on a strand of the executor given to the constructor. Await stop() before destroying the
// recorder; the kube::Client must outlive the writer (stop() has returned).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "http/asio.h"
#include "kube/api/event.h"
#include "kube/client/client.h"

namespace nmo::runtime {

/// Where Events about cluster-scoped objects (Nodes, NodeMaintenances) are stored.
inline constexpr std::string_view kClusterScopedEventNamespace = "default";

/// The object an Event is about (core v1 ObjectReference).
struct ObjectRef {
  std::string api_version;  ///< "v1", "apps/v1", "nmo.medik8s.io/v1beta1"
  std::string kind;         ///< "Node", "Pod", "NodeMaintenance"
  std::string namespace_;  ///< "" for cluster-scoped objects  NOLINT(readability-identifier-naming)
  std::string name;
  std::string uid;
};

/// The two types core v1 Events have, and their to_string() (kube/api/event.h).
using kube::EventType;

/// What happened.
struct EventOptions {
  EventType type = EventType::kNormal;
  std::string reason;   ///< UpperCamelCase, short and machine-readable, e.g. "BeginMaintenance"
  std::string message;  ///< for humans
  std::optional<ObjectRef> related;  ///< a second object involved, e.g. the pod being evicted
};

/// Tunables; the defaults are client-go's.
struct EventRecorderOptions {
  /// Events waiting to be written; more are dropped (client-go's broadcaster queue: 1000).
  std::size_t queue_capacity = 1000;
  /// Aggregation keys remembered (client-go's maxLruCacheEntries: 4096).
  std::size_t cache_size = 4096;
  /// Spam filter per object and reason: a burst, then one event per `spam_refill`
  /// (client-go: 25 events, then 1 per 5 minutes).
  int spam_burst = 25;
  std::chrono::nanoseconds spam_refill = std::chrono::minutes(5);
};

namespace internal {
struct EventRecorderState;
}  // namespace internal

/// Writes Events in the background; see the file comment.
class EventRecorder {
 public:
  /// `component` becomes source.component and reportingComponent (e.g.
  /// "node-maintenance-operator"), `host` source.host and reportingInstance (e.g. the pod
  /// name; may be empty). `clock` drives the spam filter and must outlive the recorder. Nothing
  /// is written before start().
  EventRecorder(asio::any_io_executor executor, kube::Client& client, std::string component,
                std::string host = "", const Clock& clock = system_clock(),
                EventRecorderOptions options = {});
  /// Drops the queued events and cancels the writer without waiting for it: await stop()
  /// first for an orderly end. The writer's state outlives the recorder until it ends.
  ~EventRecorder();

  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  /// Queues an event about `regarding`, timestamped now. Returns at once; see the file comment
  /// for what may drop it. Ignored (with a warning) once stop() has begun.
  void record(const ObjectRef& regarding, EventOptions options);

  /// Starts the writer coroutine. Call once.
  void start();

  /// Waits until every queued event has been written (or dropped) and no write is in flight,
  /// or the writer has ended. Returns at once when start() was never called.
  asio::awaitable<void> flush();

  /// Stops accepting events and lets the writer finish the queue; after `deadline` the events
  /// still queued are dropped (with a warning) and the write in flight is cancelled. Returns
  /// when the writer has ended: by `deadline`, plus the time the API call in flight takes to
  /// notice its cancellation (at most the client's request timeout). Idempotent.
  asio::awaitable<void> stop(std::chrono::milliseconds deadline);

 private:
  std::shared_ptr<internal::EventRecorderState> state_;
};

}  // namespace nmo::runtime
