// KubeVirtReader: what the controller reads of KubeVirt (docs/design.md §2.9): whether the
// kubevirt.io/v1 API is served, the cluster's default eviction strategy (the KubeVirt CR), the
// VirtualMachineInstances and the live migrations the operator created, from the shared cache
// once KubeVirt is served (nothing is declared on a cluster without it), with the migrations
// it created that the cache does not show yet. What to do with a VM is vm_policy.h's and the
// state machine's; creating and cancelling migrations is the controller's.
//
// Threading: on the controller's one executor (controller_impl.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "operator/kubevirt/vm_policy.h"
#include "runtime/cache.h"
#include "runtime/own_writes.h"
#include "runtime/reflector.h"
#include "runtime/store.h"

namespace nmo::op::internal {

// How long the first drain step that meets a VM waits for KubeVirt's caches; later steps do not
// wait (their VMs are held as unknown until the caches have listed).
inline constexpr std::chrono::seconds kKubeVirtSyncTimeout{10};
// How long KubeVirt's API being served (and its default eviction strategy) is trusted before the
// next drain step that meets a VM asks again; "not served" is asked again every time.
inline constexpr std::chrono::seconds kKubeVirtRecheck{30};

class KubeVirtReader {
 public:
  // Who to wake: the maintenances of a node one of whose VMIs changed, and the maintenance of
  // uid `owner` one of whose migrations changed.
  struct Wakeups {
    std::function<void(const std::string& node)> vmi_changed;
    std::function<void(const std::string& owner)> migration_changed;
  };
  // `client`, `cache` and `clock` must outlive the reader.
  KubeVirtReader(kube::Client& client, runtime::Cache& cache, const Clock& clock, Wakeups wakeups);

  // Asks whether KubeVirt is served unless a "served" answer is younger than kKubeVirtRecheck;
  // the first time it is, declares KubeVirt's informers and waits (kKubeVirtSyncTimeout) for
  // them. An error when it could not tell; what was known before stands then.
  asio::awaitable<Result<void>> refresh();
  // Whether an answer was ever had, and what it was.
  [[nodiscard]] bool checked() const { return checked_; }
  [[nodiscard]] bool served() const { return served_; }
  // The KubeVirt CR's spec.configuration.evictionStrategy, when set.
  [[nodiscard]] const std::optional<std::string>& eviction_strategy() const {
    return eviction_strategy_;
  }
  // The VMI `ns`/`name` as cached; std::nullopt when there is none (or KubeVirt is not served).
  [[nodiscard]] std::optional<Vmi> vmi(const std::string& ns, const std::string& name) const;
  // The live migrations the operator created for the maintenance of uid `owner` (label
  // kMigrationOwnerLabel), from the cache and the creates it does not show yet; kNotFound when
  // KubeVirt's API is not served.
  asio::awaitable<Result<std::vector<Migration>>> migrations_of(std::string owner);
  // A migration the operator created (`object` as the API answered), and one it deleted
  // ("<namespace>/<name>").
  void created(const boost::json::value& object);
  void deleted(const std::string& key);

 private:
  void watch();

  kube::Client& client_;
  runtime::Cache& cache_;
  const Clock& clock_;
  Wakeups wakeups_;
  bool checked_ = false;
  Clock::time_point checked_at_{};
  bool served_ = false;
  std::optional<std::string> eviction_strategy_;
  // Declared once KubeVirt's API is served (empty before).
  std::vector<const runtime::internal::ReflectorLoop*> informers_;
  std::shared_ptr<runtime::Store<VmiObject>> vmis_;
  std::shared_ptr<runtime::Store<MigrationObject>> migrations_;
  std::shared_ptr<runtime::Store<KubeVirtConfig>> configs_;
  runtime::OwnWrites<MigrationObject> own_migrations_;
};

}  // namespace nmo::op::internal
