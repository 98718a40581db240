#include "operator/controller/internal/eviction_runner.h"

#include <utility>

namespace nmo::op::internal {

EvictionRunner::EvictionRunner(asio::any_io_executor executor, kube::Client& client,
                               MaintenanceRegistry& registry, const OperatorOptions& options,
                               CoveringBudgets covering, Wake wake)
    : executor_(std::move(executor)),
      client_(client),
      registry_(registry),
      options_(options),
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

asio::awaitable<void> EvictionRunner::evict(std::string cr_name, std::string cr_uid, kube::Pod pod,
                                            std::optional<std::int64_t> grace,
                                            std::shared_ptr<bool> alive) {
  kube::EvictOptions options;
  options.grace_period_seconds = grace;
  options.precondition_uid = pod.meta.uid;
  options.fence = options_.may_evict;
  auto answer = co_await client_.evict(pod.meta.namespace_, pod.meta.name, options);
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

}  // namespace nmo::op::internal
