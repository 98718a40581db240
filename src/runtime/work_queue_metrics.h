// WorkQueueMetrics: the hook through which a WorkQueue reports what happens to its keys, so a
// metrics backend (Prometheus, in the operator's metrics code) can export client-go's workqueue
// series: adds_total (on_add), depth (on_add minus on_get, or WorkQueue::depth()),
// queue_duration_seconds (on_get), work_duration_seconds (on_done) and retries_total (on_retry).
//
// Threading: the queue calls these methods from whichever thread calls add/get/done, with its
// internal mutex held, so an implementation must be thread-safe, cheap (an atomic increment or a
// histogram observation), and must not call back into the queue.
#pragma once

#include <chrono>
#include <string>

namespace nmo::runtime {

// Receives work-queue events. Every method does nothing by default; override the ones you need.
class WorkQueueMetrics {
 public:
  WorkQueueMetrics() = default;
  WorkQueueMetrics(const WorkQueueMetrics&) = delete;
  WorkQueueMetrics& operator=(const WorkQueueMetrics&) = delete;
  virtual ~WorkQueueMetrics() = default;

  // `key` was added and was not already waiting (an add of a waiting key is coalesced and not
  // reported). A key added while it is being processed is reported here once.
  virtual void on_add(const std::string& /*key*/) {}
  // A worker took `key`, which had been waiting for `waited` since its on_add.
  virtual void on_get(const std::string& /*key*/, std::chrono::nanoseconds /*waited*/) {}
  // A worker finished `key` after working on it for `worked`.
  virtual void on_done(const std::string& /*key*/, std::chrono::nanoseconds /*worked*/) {}
  // `key` was scheduled for a delayed retry (add_after or add_rate_limited).
  virtual void on_retry(const std::string& /*key*/) {}
};

}  // namespace nmo::runtime
