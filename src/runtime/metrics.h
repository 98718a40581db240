// ManagerMetrics: the Prometheus registry of a manager process and the series it shares with
// controller-runtime, so dashboards and alerts written for a Go operator work unchanged:
//
//   controller_runtime_reconcile_total{controller,result}   every result pre-set to 0
//   controller_runtime_reconcile_errors_total{controller}
//   controller_runtime_reconcile_time_seconds{controller}   histogram
//   controller_runtime_max_concurrent_reconciles{controller}
//   controller_runtime_active_workers{controller}           sampled at scrape time
//   workqueue_{depth,adds_total,retries_total}{name,controller}
//   workqueue_{queue,work}_duration_seconds{name,controller} histograms
//   rest_client_requests_total{code,host,method}            one per HTTP attempt
//   leader_election_master_status{name}
//   metrics_authorization_reviews_total{review,result}      secure /metrics: reviews sent
//   metrics_authorization_shed_total{reason}                secure /metrics: callers turned away
//   process_* (process_metrics.h)
//
// Domain code adds its own families to registry() and keeps gauges fresh either directly or
// through a refresher, a callback run at the start of every serialize() (for gauges that are
// cheaper to sample than to track).
//
// Threading: the hooks handed out (controller(), work_queue(), observe_request(), set_leader())
// may be called from any thread; prometheus-cpp's metrics are atomic. add_refresher() is for
// start-up; serialize() runs the refreshers on the calling thread, so call it where they may
// run (the manager's one io_context thread).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "runtime/controller.h"
#include "runtime/work_queue_metrics.h"

namespace nmo::runtime {

class ProcessCollector;

class ManagerMetrics {
 public:
  ManagerMetrics();
  ~ManagerMetrics();
  ManagerMetrics(const ManagerMetrics&) = delete;
  ManagerMetrics& operator=(const ManagerMetrics&) = delete;

  /// The hook for a runtime::Controller named `controller` with `workers` workers; the
  /// reconcile counters of every result exist (at 0) from this call on.
  [[nodiscard]] std::unique_ptr<ControllerMetrics> controller(const std::string& controller,
                                                              int workers);

  /// The hook for the WorkQueue of controller `controller` (client-go's workqueue series, with
  /// name = controller). This object must outlive it, as it must outlive controller()'s hooks.
  [[nodiscard]] std::unique_ptr<WorkQueueMetrics> work_queue(const std::string& controller);

  /// Counts one HTTP attempt to the API server at `host`: `code` is the status code as text,
  /// or "<error>" when no response came (client-go's label values).
  void observe_request(std::string_view host, std::string_view method, std::string_view code);

  /// leader_election_master_status{name=`lease`}: 1 while this process leads.
  void set_leader(const std::string& lease, bool leading);

  /// metrics_authorization_reviews_total{review,result}: one TokenReview or
  /// SubjectAccessReview (`review`) sent for a /metrics caller, with its `result`
  /// (MetricsAuthorizerOptions::on_review).
  void observe_authorization_review(std::string_view review, std::string_view result);

  /// metrics_authorization_shed_total{reason}: a /metrics caller answered 503 without a
  /// review (MetricsAuthorizerOptions::on_shed).
  void observe_authorization_shed(std::string_view reason);

  /// Runs `refresh` at the start of every serialize().
  void add_refresher(std::function<void()> refresh);

  /// controller_runtime_active_workers{controller} is set from `sample` at every serialize().
  void sample_active_workers(const std::string& controller, std::function<int()> sample);

  /// The registry, for domain families.
  [[nodiscard]] prometheus::Registry& registry() { return *registry_; }

  /// Everything, in the Prometheus text exposition format (version 0.0.4).
  [[nodiscard]] std::string serialize();

 private:
  class QueueHooks;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<ProcessCollector> process_;
  prometheus::Family<prometheus::Counter>& reconcile_total_;
  prometheus::Family<prometheus::Counter>& reconcile_errors_;
  prometheus::Family<prometheus::Histogram>& reconcile_time_;
  prometheus::Family<prometheus::Gauge>& max_concurrent_;
  prometheus::Family<prometheus::Gauge>& active_workers_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Counter>& queue_adds_;
  prometheus::Family<prometheus::Counter>& queue_retries_;
  prometheus::Family<prometheus::Histogram>& queue_duration_;
  prometheus::Family<prometheus::Histogram>& work_duration_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Gauge>& leader_;
  prometheus::Family<prometheus::Counter>& authorization_reviews_;
  prometheus::Family<prometheus::Counter>& authorization_shed_;
  std::vector<std::function<void()>> refreshers_;
};

/// Bucket boundaries in seconds, exponential: `start`, start*factor, ... (`count` of them).
[[nodiscard]] prometheus::Histogram::BucketBoundaries exponential_buckets(double start,
                                                                          double factor, int count);

}  // namespace nmo::runtime
