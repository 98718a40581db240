#include "operator/controller/internal/kubevirt_reader.h"

#include <utility>

namespace nmo::op::internal {
namespace {

// The index of the migration cache: by the maintenance uid of kMigrationOwnerLabel.
constexpr std::string_view kOwnerIndex = "owner";

}  // namespace

KubeVirtReader::KubeVirtReader(kube::Client& client, runtime::Cache& cache, const Clock& clock,
                               Wakeups wakeups)
    : client_(client), cache_(cache), clock_(clock), wakeups_(std::move(wakeups)) {}

asio::awaitable<Result<void>> KubeVirtReader::refresh() {
  const Clock::time_point now = clock_.now();
  // "Not served" is never trusted from an earlier step: KubeVirt installed a moment ago must not
  // see a VM's pod evicted as an ordinary pod.
  if (checked_ && served_ && now < checked_at_ + kKubeVirtRecheck) co_return Result<void>{};
  auto served = co_await client_.get_json(kubevirt_api_root());
  if (!served && !is_not_found(served.error())) {
    co_return Error(served.error().code,
                    "could not tell whether KubeVirt is served: " + served.error().describe());
  }
  std::optional<std::string> strategy;
  if (served) {
    const bool first = informers_.empty();
    if (first) watch();
    const std::chrono::milliseconds timeout =
        first ? std::chrono::milliseconds(kKubeVirtSyncTimeout) : std::chrono::milliseconds(0);
    NMO_CO_TRY(co_await cache_.wait_synced(informers_, timeout));
    // One KubeVirt CR per cluster.
    for (const auto& config : configs_->list()) {
      strategy = config->eviction_strategy;
      break;
    }
  }
  checked_ = true;
  checked_at_ = now;
  served_ = served.has_value();
  eviction_strategy_ = std::move(strategy);
  co_return Result<void>{};
}

void KubeVirtReader::watch() {
  auto& vmis = cache_.informer<VmiObject>(std::string(kVmiCache));
  vmis_ = vmis.store();
  vmis.on_change([this](const VmiObject* before, const VmiObject* after) {
    // A VM on a node under maintenance became migratable, migrated or stopped.
    if (before != nullptr) wakeups_.vmi_changed(before->vmi.node_name);
    if (after != nullptr) wakeups_.vmi_changed(after->vmi.node_name);
  });
  auto& migrations = cache_.informer<MigrationObject>(
      "the cache of the operator's VirtualMachineInstanceMigrations", "",
      kube::ListOptions{.label_selector = std::string(kMigrationOwnerLabel)});
  migrations_ = migrations.store();
  runtime::Cache::add_index(migrations, std::string(kOwnerIndex), [](const MigrationObject& m) {
    const std::string* owner = m.meta.labels.find(kMigrationOwnerLabel);
    return owner != nullptr ? std::vector<std::string>{*owner} : std::vector<std::string>{};
  });
  migrations.on_change([this](const MigrationObject* before, const MigrationObject* after) {
    const MigrationObject& migration = after != nullptr ? *after : *before;
    if (const std::string* owner = migration.meta.labels.find(kMigrationOwnerLabel)) {
      wakeups_.migration_changed(*owner);
    }
  });
  auto& configs = cache_.informer<KubeVirtConfig>("the KubeVirt CR cache");
  configs_ = configs.store();
  configs.on_change([this](const KubeVirtConfig*, const KubeVirtConfig*) {
    checked_at_ = Clock::time_point{};  // the default strategy is read again
  });
  informers_ = {&vmis, &migrations, &configs};
}

std::optional<Vmi> KubeVirtReader::vmi(const std::string& ns, const std::string& name) const {
  if (vmis_ == nullptr) return std::nullopt;
  auto found = vmis_->get(ns + "/" + name);
  if (found == nullptr) return std::nullopt;
  return found->vmi;
}

asio::awaitable<Result<std::vector<Migration>>> KubeVirtReader::migrations_of(std::string owner) {
  if (informers_.empty()) {
    // A maintenance deleted before any drain step of this process met a VM.
    NMO_CO_TRY(co_await refresh());
    if (!served_) co_return Error(ErrorCode::kNotFound, "KubeVirt's API is not served");
  }
  std::vector<Migration> out;
  for (const auto& migration : own_migrations_.fresher(migrations_->by_index(kOwnerIndex, owner))) {
    const std::string* label = migration->meta.labels.find(kMigrationOwnerLabel);
    if (label != nullptr && *label == owner) out.push_back(migration->migration);
  }
  co_return out;
}

void KubeVirtReader::created(const boost::json::value& object) {
  // Until the migration cache shows it, the next drain step must see it (or it would start the
  // same attempt again).
  if (auto decoded = kube::ResourceInfo<MigrationObject>::decode(object)) {
    own_migrations_.wrote(std::move(*decoded), "");
  }
}

void KubeVirtReader::deleted(const std::string& key) { own_migrations_.forget(key); }

}  // namespace nmo::op::internal
