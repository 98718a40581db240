#include "operator/controller/internal/eviction_runner.h"

#include <algorithm>
#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>

namespace nmo::op::internal {

EvictionRunner::EvictionRunner(asio::any_io_executor executor, kube::Client& client,
                               MaintenanceRegistry& registry, const OperatorOptions& options,
                               const Clock& clock, CoveringBudgets covering, Wake wake)
    : executor_(std::move(executor)),
      client_(client),
      registry_(registry),
      options_(options),
      clock_(clock),
      covering_(std::move(covering)),
      wake_(std::move(wake)) {}

void EvictionRunner::start(const NodeMaintenance& nm, const kube::Pod& pod) {
  asio::co_spawn(executor_,
                 evict(nm.meta.name, nm.meta.uid, pod, nm.spec.grace_period_seconds,
                       registry_.memory(nm).alive),
                 asio::detached);
}

void EvictionRunner::stop(const NodeMaintenance& nm) {
  *registry_.memory(nm).alive = false;
  wake_waiters();
}

void EvictionRunner::reset(const NodeMaintenance& nm) {
  MaintenanceMemory& memory = registry_.memory(nm);
  *memory.alive = false;
  memory.alive = std::make_shared<bool>(true);
  wake_waiters();
}

void EvictionRunner::wake_waiters() {
  for (const std::string& name : registry_.take_eviction_slot_waiters()) wake_(name);
}

void EvictionRunner::budget_changed(const kube::PodDisruptionBudget& budget) {
  const std::string key = budget.meta.namespace_ + "/" + budget.meta.name;
  std::vector<std::string> waiting;
  if (budget.allows_disruption()) {
    for (const auto& [name, memory] : registry_.memories()) {
      if (!*memory.alive) continue;
      const bool blocked =
          std::any_of(memory.drain.evictions.begin(), memory.drain.evictions.end(),
                      [&](const auto& entry) { return entry.second.blocked_by == key; });
      if (blocked) waiting.push_back(name);
    }
  }
  // Kept only while a refused pod waits on it: the cluster's other budgets (most of them allow a
  // disruption) cost no memory here.
  if (waiting.empty()) {
    allowing_since_.erase(key);
    return;
  }
  allowing_since_.try_emplace(key, clock_.now());
  for (const std::string& name : waiting) wake_(name);
}

std::optional<Clock::time_point> EvictionRunner::allowing_since(const std::string& key) const {
  const auto found = allowing_since_.find(key);
  if (found == allowing_since_.end()) return std::nullopt;
  return found->second;
}

asio::awaitable<void> EvictionRunner::finish(std::chrono::milliseconds deadline) {
  if (in_flight_ == 0) co_return;
  asio::steady_timer timer(executor_, deadline);
  finishing_ = &timer;
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  finishing_ = nullptr;
}

asio::awaitable<void> EvictionRunner::evict(std::string cr_name, std::string cr_uid, kube::Pod pod,
                                            std::optional<std::int64_t> grace,
                                            std::shared_ptr<bool> alive) {
  ++in_flight_;
  auto answer = co_await ask(pod, grace);
  if (--in_flight_ == 0 && finishing_ != nullptr) finishing_->cancel();
  if (options_.metrics != nullptr) {
    options_.metrics->on_eviction(answer ? std::optional(answer->outcome) : std::nullopt);
  }
  std::vector<kube::PodDisruptionBudget> covering;
  if (answer && (answer->outcome == kube::EvictionOutcome::kBlockedByPdb ||
                 answer->outcome == kube::EvictionOutcome::kMultiplePdbs)) {
    // The budgets only shape the message; without them the API's text still says enough.
    covering = covering_(pod);
  }
  if (!*alive) co_return;
  MaintenanceMemory* memory = registry_.find(cr_name, cr_uid);
  if (memory == nullptr) co_return;
  // Into the inbox: the next drain step applies it, so the reconcile is the only writer of the
  // maintenance's memory.
  memory->drain.inbox.push_back(EvictionReport{
      .pod = std::move(pod), .answer = std::move(answer), .covering = std::move(covering)});
  wake_(cr_name);
}

asio::awaitable<Result<kube::EvictionResult>> EvictionRunner::ask(
    const kube::Pod& pod, std::optional<std::int64_t> grace) {
  kube::EvictOptions options;
  options.grace_period_seconds = grace;
  options.precondition_uid = pod.meta.uid;
  options.fence = options_.may_evict;
  std::string ns = pod.meta.namespace_;
  std::string name = pod.meta.name;
  co_return co_await client_.evict(std::move(ns), std::move(name), options);
}

}  // namespace nmo::op::internal
