#include "runtime/metrics.h"

#include <cmath>
#include <sstream>
#include <utility>

#include <prometheus/text_serializer.h>

#include "runtime/process_metrics.h"

namespace nmo::runtime {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// controller-runtime's reconcile results.
constexpr std::string_view kResults[] = {"success", "error", "requeue", "requeue_after"};

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// controller-runtime's reconcile_time_seconds buckets: 5 ms to about 80 s, then 100 s to 1000 s
// coarse, so slow reconciles (a stuck API call) stay visible.
prometheus::Histogram::BucketBoundaries reconcile_buckets() {
  auto buckets = exponential_buckets(0.005, 2, 15);
  for (double b : {100.0, 200.0, 500.0, 1000.0}) buckets.push_back(b);
  return buckets;
}

// client-go's workqueue duration buckets: 1 µs to 1000 s, factor 10.
prometheus::Histogram::BucketBoundaries queue_buckets() {
  return exponential_buckets(1e-6, 10, 10);
}

class ReconcileHooks : public ControllerMetrics {
 public:
  ReconcileHooks(prometheus::Family<prometheus::Counter>& total,
                 prometheus::Family<prometheus::Counter>& errors,
                 prometheus::Family<prometheus::Histogram>& time, const std::string& controller)
      : errors_(errors.Add({{"controller", controller}})),
        time_(time.Add({{"controller", controller}}, reconcile_buckets())) {
    for (std::string_view result : kResults) {
      by_result_.push_back(
          &total.Add({{"controller", controller}, {"result", std::string(result)}}));
    }
  }

  void on_reconcile(std::string_view result, std::chrono::nanoseconds duration) override {
    for (std::size_t i = 0; i < std::size(kResults); ++i) {
      if (kResults[i] == result) by_result_[i]->Increment();
    }
    if (result == "error") errors_.Increment();
    time_.Observe(seconds(duration));
  }

 private:
  std::vector<prometheus::Counter*> by_result_;
  prometheus::Counter& errors_;
  prometheus::Histogram& time_;
};

}  // namespace

prometheus::Histogram::BucketBoundaries exponential_buckets(double start, double factor,
                                                            int count) {
  prometheus::Histogram::BucketBoundaries buckets;
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) buckets.push_back(bound);
  return buckets;
}

class ManagerMetrics::QueueHooks : public WorkQueueMetrics {
 public:
  QueueHooks(ManagerMetrics& m, const std::string& controller)
      : depth_(m.queue_depth_.Add({{"controller", controller}, {"name", controller}})),
        adds_(m.queue_adds_.Add({{"controller", controller}, {"name", controller}})),
        retries_(m.queue_retries_.Add({{"controller", controller}, {"name", controller}})),
        queued_(m.queue_duration_.Add({{"controller", controller}, {"name", controller}},
                                      queue_buckets())),
        worked_(m.work_duration_.Add({{"controller", controller}, {"name", controller}},
                                     queue_buckets())) {}

  void on_add(const std::string& /*key*/) override {
    adds_.Increment();
    depth_.Increment();
  }
  void on_get(const std::string& /*key*/, std::chrono::nanoseconds waited) override {
    depth_.Decrement();
    queued_.Observe(seconds(waited));
  }
  void on_done(const std::string& /*key*/, std::chrono::nanoseconds worked) override {
    worked_.Observe(seconds(worked));
  }
  void on_retry(const std::string& /*key*/) override { retries_.Increment(); }

 private:
  prometheus::Gauge& depth_;
  prometheus::Counter& adds_;
  prometheus::Counter& retries_;
  prometheus::Histogram& queued_;
  prometheus::Histogram& worked_;
};

ManagerMetrics::ManagerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      process_(std::make_unique<ProcessCollector>()),
      reconcile_total_(BuildCounter()
                           .Name("controller_runtime_reconcile_total")
                           .Help("Reconciles per controller and result.")
                           .Register(*registry_)),
      reconcile_errors_(BuildCounter()
                            .Name("controller_runtime_reconcile_errors_total")
                            .Help("Reconciles per controller that returned an error.")
                            .Register(*registry_)),
      reconcile_time_(BuildHistogram()
                          .Name("controller_runtime_reconcile_time_seconds")
                          .Help("How long each reconcile took, per controller.")
                          .Register(*registry_)),
      max_concurrent_(BuildGauge()
                          .Name("controller_runtime_max_concurrent_reconciles")
                          .Help("Reconcile workers per controller.")
                          .Register(*registry_)),
      active_workers_(BuildGauge()
                          .Name("controller_runtime_active_workers")
                          .Help("Workers inside a reconcile right now, per controller.")
                          .Register(*registry_)),
      queue_depth_(BuildGauge()
                       .Name("workqueue_depth")
                       .Help("Keys waiting in the work queue.")
                       .Register(*registry_)),
      queue_adds_(BuildCounter()
                      .Name("workqueue_adds_total")
                      .Help("Keys added to the work queue (coalesced adds not counted).")
                      .Register(*registry_)),
      queue_retries_(BuildCounter()
                         .Name("workqueue_retries_total")
                         .Help("Delayed re-adds of keys to the work queue.")
                         .Register(*registry_)),
      queue_duration_(BuildHistogram()
                          .Name("workqueue_queue_duration_seconds")
                          .Help("How long a key waited in the work queue before a worker took it.")
                          .Register(*registry_)),
      work_duration_(BuildHistogram()
                         .Name("workqueue_work_duration_seconds")
                         .Help("How long a worker spent on a key taken from the work queue.")
                         .Register(*registry_)),
      requests_(BuildCounter()
                    .Name("rest_client_requests_total")
                    .Help("HTTP requests to the API server, by status code, method and host.")
                    .Register(*registry_)),
      leader_(BuildGauge()
                  .Name("leader_election_master_status")
                  .Help("1 while this process holds the leader Lease, 0 otherwise.")
                  .Register(*registry_)),
      authorization_reviews_(
          BuildCounter()
              .Name("metrics_authorization_reviews_total")
              .Help("TokenReviews and SubjectAccessReviews sent to check /metrics callers, by "
                    "review and result.")
              .Register(*registry_)),
      authorization_shed_(BuildCounter()
                              .Name("metrics_authorization_shed_total")
                              .Help("/metrics callers answered 503 without a review, by reason.")
                              .Register(*registry_)) {}

ManagerMetrics::~ManagerMetrics() = default;

std::unique_ptr<ControllerMetrics> ManagerMetrics::controller(const std::string& controller,
                                                              int workers) {
  max_concurrent_.Add({{"controller", controller}}).Set(workers);
  active_workers_.Add({{"controller", controller}});
  return std::make_unique<ReconcileHooks>(reconcile_total_, reconcile_errors_, reconcile_time_,
                                          controller);
}

std::unique_ptr<WorkQueueMetrics> ManagerMetrics::work_queue(const std::string& controller) {
  return std::make_unique<QueueHooks>(*this, controller);
}

void ManagerMetrics::observe_request(std::string_view host, std::string_view method,
                                     std::string_view code) {
  requests_
      .Add({{"code", std::string(code)},
            {"host", std::string(host)},
            {"method", std::string(method)}})
      .Increment();
}

void ManagerMetrics::set_leader(const std::string& lease, bool leading) {
  leader_.Add({{"name", lease}}).Set(leading ? 1 : 0);
}

void ManagerMetrics::observe_authorization_review(std::string_view review,
                                                  std::string_view result) {
  authorization_reviews_.Add({{"result", std::string(result)}, {"review", std::string(review)}})
      .Increment();
}

void ManagerMetrics::observe_authorization_shed(std::string_view reason) {
  authorization_shed_.Add({{"reason", std::string(reason)}}).Increment();
}

void ManagerMetrics::add_refresher(std::function<void()> refresh) {
  refreshers_.push_back(std::move(refresh));
}

void ManagerMetrics::sample_active_workers(const std::string& controller,
                                           std::function<int()> sample) {
  prometheus::Gauge& gauge = active_workers_.Add({{"controller", controller}});
  add_refresher([&gauge, sample = std::move(sample)] { gauge.Set(sample()); });
}

std::string ManagerMetrics::serialize() {
  for (const auto& refresh : refreshers_) refresh();
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (auto& family : process_->Collect()) families.push_back(std::move(family));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return std::move(out).str();
}

}  // namespace nmo::runtime
