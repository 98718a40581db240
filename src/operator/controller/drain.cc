// The drain's I/O (docs/design.md §2.4): which pods must leave (DaemonSet lookups), the VMs'
// verdicts and the operator's live migrations, whose answers go into the maintenance's inbox
// (the evictions are EvictionRunner's). What the answers mean is state_machine.cc's business.
#include <algorithm>
#include <utility>

#include "kube/api/daemon_set.h"
#include "operator/controller/internal/controller_impl.h"
#include "operator/drain/eviction_policy.h"
#include "operator/drain/pod_policy.h"
#include "operator/kubevirt/vm_policy.h"

namespace nmo::op::internal {

asio::awaitable<bool> ControllerImpl::daemon_set_exists(std::string ns, std::string name,
                                                        std::string uid) {
  if (auto known = daemon_sets_.find(uid); known != daemon_sets_.end()) co_return known->second;
  auto found = co_await client_.get<kube::DaemonSet>(ns, name);
  if (!found) {
    // Not found: orphaned, evict it. Any other error: assume it exists (the safe side, as a
    // DaemonSet pod would come back anyway) and ask again next time.
    if (is_not_found(found.error())) daemon_sets_[uid] = false;
    co_return !is_not_found(found.error());
  }
  const bool same = found->meta.uid == uid;
  daemon_sets_[uid] = same;
  co_return same;
}

asio::awaitable<Result<PodFacts>> ControllerImpl::pod_facts(const NodeMaintenance& nm) {
  NMO_CO_TRY(co_await watch_pods(nm.spec.node_name));
  PodFacts facts;
  // DaemonSet ownership is looked up once per DaemonSet.
  const auto pods = pods_on(nm.spec.node_name);
  for (const auto& pod : pods) {
    bool ds_exists = false;
    if (auto owner = daemon_set_owner(*pod)) {
      ds_exists = co_await daemon_set_exists(owner->namespace_, owner->name, owner->uid);
    }
    if (must_leave(classify_pod(*pod, ds_exists))) facts.leaving.push_back(*pod);
  }
  facts.bound = static_cast<std::int64_t>(pods.size());
  co_await vm_facts(nm, facts);
  co_return facts;
}

asio::awaitable<Result<void>> ControllerImpl::kubevirt_defaults() {
  const Clock::time_point now = clock_.now();
  // "Not served" is never trusted from an earlier step: KubeVirt installed a moment ago must not
  // see a VM's pod evicted as an ordinary pod.
  if (kubevirt_.checked && kubevirt_.served && now < kubevirt_.checked_at + kKubeVirtRecheck) {
    co_return Result<void>{};
  }
  auto served = co_await client_.get_json(kubevirt_api_root());
  if (!served && !is_not_found(served.error())) {
    co_return Error(served.error().code,
                    "could not tell whether KubeVirt is served: " + served.error().describe());
  }
  KubeVirtDefaults next{.checked = true, .checked_at = now, .served = served.has_value()};
  if (next.served) {
    const bool first = kubevirt_informers_.empty();
    if (first) watch_kubevirt();
    const std::chrono::milliseconds timeout =
        first ? std::chrono::milliseconds(kKubeVirtSyncTimeout) : std::chrono::milliseconds(0);
    NMO_CO_TRY(co_await cache_.wait_synced(kubevirt_informers_, timeout));
    // One KubeVirt CR per cluster.
    for (const auto& config : kubevirt_configs_->list()) {
      next.eviction_strategy = config->eviction_strategy;
      break;
    }
  }
  kubevirt_ = std::move(next);
  co_return Result<void>{};
}

void ControllerImpl::watch_kubevirt() {
  auto& vmis = cache_.informer<VmiObject>(std::string(kVmiCache));
  vmis_ = vmis.store();
  vmis.on_change([this](const VmiObject* before, const VmiObject* after) {
    // A VM on a node under maintenance became migratable, migrated or stopped.
    if (before != nullptr) enqueue_node(before->vmi.node_name);
    if (after != nullptr) enqueue_node(after->vmi.node_name);
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
    const std::string* owner = migration.meta.labels.find(kMigrationOwnerLabel);
    if (owner == nullptr) return;
    for (const auto& nm : maintenances_->list()) {
      if (nm->meta.uid == *owner) controller_.enqueue(nm->meta.name);
    }
  });
  auto& configs = cache_.informer<KubeVirtConfig>("the KubeVirt CR cache");
  kubevirt_configs_ = configs.store();
  configs.on_change([this](const KubeVirtConfig*, const KubeVirtConfig*) {
    kubevirt_.checked_at = Clock::time_point{};  // the default strategy is read again
  });
  kubevirt_informers_ = {&vmis, &migrations, &configs};
}

asio::awaitable<void> ControllerImpl::vm_facts(const NodeMaintenance& nm, PodFacts& facts) {
  std::vector<const kube::Pod*> vms;
  for (const kube::Pod& pod : facts.leaving) {
    if (is_virt_launcher(pod) && !vmi_name(pod).empty() && !has_finished(pod) &&
        !is_terminating(pod)) {
      vms.push_back(&pod);
    }
  }
  if (vms.empty()) co_return;
  // Unknown is not safe to evict: a VM's pod is held until KubeVirt's API and the VMI can be
  // read (what was known before stands in meanwhile).
  auto hold_unknown = [&facts](const kube::Pod& pod, const std::string& why) {
    facts.vms[pod.meta.uid] =
        VmVerdict{.action = VmAction::kHold,
                  .reason = std::string(to_string(PendingPodReason::kVmWouldShutDown)),
                  .detail = "cannot tell whether evicting the pod would shut VMI " +
                            pod.meta.namespace_ + "/" + vmi_name(pod) + " down: " + why,
                  .held_as = PendingPodReason::kError};
  };
  if (auto known = co_await kubevirt_defaults(); !known) {
    logger_.warn("KubeVirt's API could not be read", {{"error", known.error().message}});
    if (!kubevirt_.checked) {
      for (const kube::Pod* pod : vms) hold_unknown(*pod, known.error().message);
      co_return;
    }
  }
  // Without the kubevirt.io/v1 API a virt-launcher pod is a pod like any other.
  if (!kubevirt_.served) co_return;
  // From the VMI cache, which wakes the maintenance when a VMI of its node changes.
  for (const kube::Pod* pod : vms) {
    if (const std::optional<Vmi> vmi = read_vmi(pod->meta.namespace_, vmi_name(*pod))) {
      facts.vms[pod->meta.uid] =
          decide_vm(*vmi, kubevirt_.eviction_strategy, nm.spec.vm_eviction_policy);
    }  // else no VM behind it: a pod like any other
  }

  // The operator's migrations, only while it migrates VMs of this node.
  const bool migrates = std::any_of(facts.vms.begin(), facts.vms.end(), [](const auto& entry) {
    return entry.second.action == VmAction::kMigrate;
  });
  if (!migrates) co_return;
  std::string uid = nm.meta.uid;
  Result<std::vector<Migration>> listed = co_await list_migrations(std::move(uid));
  if (!listed) {
    facts.migrations_error = listed.error().describe();
    co_return;
  }
  for (const Migration& migration : *listed) {
    facts.migrations[migration.namespace_ + "/" + migration.vmi_name].push_back(migration);
  }
  for (auto& [key, migrations] : facts.migrations) {
    std::stable_sort(migrations.begin(), migrations.end(),
                     [](const Migration& a, const Migration& b) { return a.attempt < b.attempt; });
  }
}

asio::awaitable<Result<std::vector<Migration>>> ControllerImpl::list_migrations(std::string uid) {
  if (kubevirt_informers_.empty()) {
    // A maintenance deleted before any drain step of this process met a VM.
    NMO_CO_TRY(co_await kubevirt_defaults());
    if (!kubevirt_.served) co_return Error(ErrorCode::kNotFound, "KubeVirt's API is not served");
  }
  std::vector<Migration> out;
  for (const auto& migration : own_migrations_.fresher(migrations_->by_index(kOwnerIndex, uid))) {
    const std::string* owner = migration->meta.labels.find(kMigrationOwnerLabel);
    if (owner != nullptr && *owner == uid) out.push_back(migration->migration);
  }
  co_return out;
}

void ControllerImpl::start_migration(const NodeMaintenance& nm, MigrationRequest request) {
  asio::co_spawn(
      executor_,
      create_migration(nm.meta.name, nm.meta.uid, std::move(request), registry_.memory(nm).alive),
      asio::detached);
}

asio::awaitable<void> ControllerImpl::create_migration(std::string cr_name, std::string cr_uid,
                                                       MigrationRequest request,
                                                       std::shared_ptr<bool> alive) {
  const std::string path = kube::collection_path<Migration>(request.namespace_);
  boost::json::value manifest = migration_manifest(request.namespace_, request.name, request.vmi,
                                                   request.attempt, cr_name, cr_uid);
  // The options are passed, not defaulted: GCC 12 freed a defaulted argument of a coroutine
  // twice here.
  const kube::WriteOptions options;
  Result<boost::json::value> created = co_await client_.create(path, std::move(manifest), options);
  if (created && options_.metrics != nullptr) options_.metrics->on_migration("started");
  if (created) {
    // Until the migration cache shows it, the next drain step must see it (or it would start
    // the same attempt again).
    if (auto decoded = kube::ResourceInfo<MigrationObject>::decode(*created)) {
      own_migrations_.wrote(std::move(*decoded), "");
    }
  }
  if (!*alive) co_return;
  MaintenanceMemory* memory = registry_.find(cr_name, cr_uid);
  if (memory == nullptr) co_return;
  Result<void> answer;
  if (!created) answer = std::move(created).error();
  memory->drain.migration_inbox.push_back(
      MigrationReport{.request = std::move(request), .created = std::move(answer)});
  controller_.enqueue(cr_name);
}

asio::awaitable<std::vector<std::string>> ControllerImpl::cancel_migrations(NodeMaintenance nm) {
  std::vector<std::string> cancelled;
  std::string uid = nm.meta.uid;
  Result<std::vector<Migration>> listed = co_await list_migrations(std::move(uid));
  // Without KubeVirt's API there is nothing to cancel.
  if (!listed && is_not_found(listed.error())) co_return cancelled;
  if (!listed) {
    log_for(nm).warn(
        "could not list the live migrations to cancel; the garbage collector "
        "deletes them with the maintenance",
        {{"error", listed.error().describe()}});
    co_return cancelled;
  }
  for (const Migration& migration : *listed) {
    if (migration.finished()) continue;
    const std::string key = migration.namespace_ + "/" + migration.name;
    std::string path = kube::object_path<Migration>(migration.namespace_, migration.name);
    const kube::DeleteOptions options;  // passed, not defaulted (see create_migration())
    Result<void> removed = co_await client_.remove(std::move(path), options);
    if (!removed && !is_not_found(removed.error())) {
      log_for(nm).warn("could not cancel a live migration",
                       {{"migration", key}, {"error", removed.error().describe()}});
      continue;
    }
    own_migrations_.forget(key);
    log_for(nm).info("live migration cancelled", {{"migration", key}});
    cancelled.push_back(key);
  }
  co_return cancelled;
}

std::optional<Vmi> ControllerImpl::read_vmi(const std::string& ns, const std::string& name) const {
  if (vmis_ == nullptr) return std::nullopt;
  auto found = vmis_->get(ns + "/" + name);
  if (found == nullptr) return std::nullopt;
  return found->vmi;
}

std::vector<kube::PodDisruptionBudget> ControllerImpl::covering_budgets(
    const kube::Pod& pod) const {
  std::vector<kube::PodDisruptionBudget> in_namespace;
  for (const auto& budget : budgets_->by_index(kNamespaceIndex, pod.meta.namespace_)) {
    in_namespace.push_back(*budget);
  }
  return covering_pdbs(pod, in_namespace);
}

}  // namespace nmo::op::internal
