#include "operator/metrics/prometheus_metrics.h"

#include <array>
#include <string>
#include <utility>

namespace nmo::op {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

constexpr std::array kEvictionResults = {
    kube::EvictionOutcome::kEvicted,
    kube::EvictionOutcome::kNotFound,
    kube::EvictionOutcome::kBlockedByPdb,
    kube::EvictionOutcome::kDeferred,
    kube::EvictionOutcome::kThrottled,
    kube::EvictionOutcome::kMultiplePdbs,
    kube::EvictionOutcome::kNamespaceTerminating,
};

constexpr std::array kPhases = {Phase::kPending, Phase::kRunning, Phase::kSucceeded,
                                Phase::kFailed};

// Drains take seconds to hours: 1 s to about 4.5 h, doubling.
prometheus::Histogram::BucketBoundaries drain_buckets() {
  return runtime::exponential_buckets(1, 2, 15);
}

// From the budget's change to the eviction: a reconcile away, 1 ms to about 16 s, doubling.
prometheus::Histogram::BucketBoundaries budget_retry_buckets() {
  return runtime::exponential_buckets(0.001, 2, 15);
}

}  // namespace

std::string_view eviction_result_label(std::optional<kube::EvictionOutcome> outcome) {
  if (!outcome) return "error";
  switch (*outcome) {
    case kube::EvictionOutcome::kEvicted:
      return "evicted";
    case kube::EvictionOutcome::kNotFound:
      return "not_found";
    case kube::EvictionOutcome::kBlockedByPdb:
      return "blocked_by_pdb";
    case kube::EvictionOutcome::kDeferred:
      return "deferred";
    case kube::EvictionOutcome::kThrottled:
      return "throttled";
    case kube::EvictionOutcome::kMultiplePdbs:
      return "multiple_pdbs";
    case kube::EvictionOutcome::kNamespaceTerminating:
      return "namespace_terminating";
    case kube::EvictionOutcome::kRefused:
      return "error";
  }
  return "error";
}

NodeMaintenanceMetrics::NodeMaintenanceMetrics(runtime::ManagerMetrics& manager)
    : manager_(manager),
      phase_(BuildGauge()
                 .Name("nodemaintenance_phase")
                 .Help("1 for the phase a NodeMaintenance is in, 0 for the other phases.")
                 .Register(manager.registry())),
      progress_(BuildGauge()
                    .Name("nodemaintenance_drain_progress_percent")
                    .Help("Share of the pods that had to leave the node that are gone, in percent.")
                    .Register(manager.registry())),
      pending_(BuildGauge()
                   .Name("nodemaintenance_pending_pods")
                   .Help("Pods still to leave the node of a NodeMaintenance.")
                   .Register(manager.registry())),
      blocked_(BuildGauge()
                   .Name("nodemaintenance_blocked")
                   .Help("1 while a NodeMaintenance is held up for the reason in the label.")
                   .Register(manager.registry())),
      evictions_(BuildCounter()
                     .Name("nodemaintenance_evictions_total")
                     .Help("Eviction requests sent, by the API server's answer.")
                     .Register(manager.registry())),
      migrations_(BuildCounter()
                      .Name("nodemaintenance_vm_migrations_total")
                      .Help("Live migrations of KubeVirt VMs the operator started, and how they "
                            "ended.")
                      .Register(manager.registry())),
      drain_duration_(BuildHistogram()
                          .Name("nodemaintenance_drain_duration_seconds")
                          .Help("Time from cordoning a node to the end of its drain (Succeeded).")
                          .Register(manager.registry())
                          .Add({}, drain_buckets())),
      budget_retry_delay_(BuildHistogram()
                              .Name("nodemaintenance_budget_retry_delay_seconds")
                              .Help("Time from seeing a PodDisruptionBudget allow a disruption "
                                    "to sending again the eviction it had refused.")
                              .Register(manager.registry())
                              .Add({}, budget_retry_buckets())) {
  for (const auto outcome : kEvictionResults) {
    evictions_.Add({{"result", std::string(eviction_result_label(outcome))}});
  }
  evictions_.Add({{"result", std::string(eviction_result_label(std::nullopt))}});
  for (const std::string_view result : {"started", "succeeded", "failed"}) {
    migrations_.Add({{"result", std::string(result)}});
  }
}

void NodeMaintenanceMetrics::track(std::function<std::vector<MaintenanceView>()> views,
                                   std::function<int()> active_workers) {
  manager_.add_refresher([this, views = std::move(views)] { refresh(views()); });
  manager_.sample_active_workers("nodemaintenance", std::move(active_workers));
}

std::unique_ptr<runtime::ControllerMetrics> NodeMaintenanceMetrics::controller_metrics(
    const std::string& controller, int workers) {
  return manager_.controller(controller, workers);
}

std::unique_ptr<runtime::WorkQueueMetrics> NodeMaintenanceMetrics::queue_metrics(
    const std::string& controller) {
  return manager_.work_queue(controller);
}

void NodeMaintenanceMetrics::on_eviction(std::optional<kube::EvictionOutcome> outcome) {
  evictions_.Add({{"result", std::string(eviction_result_label(outcome))}}).Increment();
}

void NodeMaintenanceMetrics::on_migration(std::string_view result) {
  migrations_.Add({{"result", std::string(result)}}).Increment();
}

void NodeMaintenanceMetrics::on_drain_completed(std::chrono::nanoseconds took) {
  drain_duration_.Observe(std::chrono::duration<double>(took).count());
}

void NodeMaintenanceMetrics::on_budget_retry(std::chrono::nanoseconds after_allowed) {
  budget_retry_delay_.Observe(std::chrono::duration<double>(after_allowed).count());
}

void NodeMaintenanceMetrics::refresh(const std::vector<MaintenanceView>& views) {
  live_.clear();
  auto add = [this](prometheus::Family<prometheus::Gauge>& family, const prometheus::Labels& labels,
                    double value) { live_.set(family, labels, value); };
  for (const MaintenanceView& view : views) {
    const prometheus::Labels who{{"name", view.name}, {"node", view.node}};
    if (view.phase) {
      for (const Phase phase : kPhases) {
        prometheus::Labels labels = who;
        labels.emplace("phase", std::string(to_string(phase)));
        add(phase_, std::move(labels), phase == *view.phase ? 1 : 0);
      }
    }
    add(progress_, who, static_cast<double>(view.drain_progress));
    add(pending_, who, static_cast<double>(view.pending_pods));
    for (const std::string& reason : view.blocked) {
      prometheus::Labels labels = who;
      labels.emplace("reason", reason);
      add(blocked_, std::move(labels), 1);
    }
  }
}

}  // namespace nmo::op
