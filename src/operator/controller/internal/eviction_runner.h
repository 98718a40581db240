// EvictionRunner: the evictions in flight of every maintenance (docs/design.md §2.4) and the
// wake-ups they cause. An eviction never blocks a reconcile: it runs as a coroutine of its own and
// reports its answer into its maintenance's inbox (MaintenanceMemory::drain), which the next drain
// step applies, so the reconcile stays the only writer of the drain's memory. A maintenance that
// held a due eviction back for the bound across maintenances (--evictions-in-flight-total) is
// woken when a slot frees; one with a pod refused by a PodDisruptionBudget when that budget
// allows a disruption again (docs/design.md §2.4). A stopping controller lets the evictions in
// flight finish (finish()): an eviction cut off after the API server granted it leaves a
// disruption the budget counts for two minutes.
//
// Threading: on the controller's one executor (controller_impl.h); an eviction coroutine touches
// the registry only after checking its maintenance's `alive` flag.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "http/asio.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/client/client.h"
#include "operator/api/node_maintenance.h"
#include "operator/controller/internal/maintenance_registry.h"
#include "operator/controller/node_maintenance_controller.h"

namespace nmo::op::internal {

class EvictionRunner {
 public:
  // The PodDisruptionBudgets covering a pod, for the message of a refusal by one.
  using CoveringBudgets = std::function<std::vector<kube::PodDisruptionBudget>(const kube::Pod&)>;
  // Queues the maintenance of that name.
  using Wake = std::function<void(const std::string&)>;

  // `options` (metrics, the may_evict fence), `client` and `registry` must outlive the runner
  // and the evictions it started.
  EvictionRunner(asio::any_io_executor executor, kube::Client& client,
                 MaintenanceRegistry& registry, const OperatorOptions& options, const Clock& clock,
                 CoveringBudgets covering, Wake wake);

  // Evicts `pod` for `nm`: the answer goes into its memory's inbox, and `nm` is queued.
  void start(const NodeMaintenance& nm, const kube::Pod& pod);
  // The evictions in flight of `nm` drop their answers (its drain stopped), which frees their
  // slots.
  void stop(const NodeMaintenance& nm);
  // The same, and the evictions started later report again (a fresh drain).
  void reset(const NodeMaintenance& nm);
  // Queues every maintenance waiting for an eviction slot (one was freed).
  void wake_waiters();

  // The cached `budget` changed: while it allows a disruption, the maintenances with a pod it
  // refused are queued (PodEviction::blocked_by), and when it started allowing is kept (only
  // while such a pod waits).
  void budget_changed(const kube::PodDisruptionBudget& budget);
  // When the budget "<namespace>/<name>" was seen to start allowing a disruption, while it does.
  [[nodiscard]] std::optional<Clock::time_point> allowing_since(const std::string& key) const;

  // Waits until no eviction is in flight, or `deadline` passed.
  asio::awaitable<void> finish(std::chrono::milliseconds deadline);

 private:
  asio::awaitable<void> evict(std::string cr_name, std::string cr_uid, kube::Pod pod,
                              std::optional<std::int64_t> grace, std::shared_ptr<bool> alive);
  // The eviction request of `pod`.
  asio::awaitable<Result<kube::EvictionResult>> ask(const kube::Pod& pod,
                                                    std::optional<std::int64_t> grace);

  asio::any_io_executor executor_;
  kube::Client& client_;
  MaintenanceRegistry& registry_;
  const OperatorOptions& options_;
  const Clock& clock_;
  CoveringBudgets covering_;
  Wake wake_;
  std::map<std::string, Clock::time_point, std::less<>> allowing_since_;
  int in_flight_ = 0;
  // finish()'s timer while it waits, cancelled by the last eviction to end.
  asio::steady_timer* finishing_ = nullptr;
};

}  // namespace nmo::op::internal
