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
  if (stopped_) co_return Error(ErrorCode::kCancelled, "stopping");
  NMO_CO_TRY(co_await view_.watch_pods(nm.spec.node_name));
  PodFacts facts;
  // DaemonSet ownership is looked up once per DaemonSet.
  const auto pods = view_.pods_on(nm.spec.node_name);
  for (const auto& pod : pods) {
    bool ds_exists = false;
    if (auto owner = daemon_set_owner(*pod)) {
      ds_exists = co_await daemon_set_exists(owner->namespace_, owner->name, owner->uid);
    }
    if (must_leave(classify_pod(*pod, ds_exists))) facts.leaving.push_back(*pod);
  }
  facts.bound = static_cast<std::int64_t>(pods.size());
  budget_facts(facts);
  co_await vm_facts(nm, facts);
  co_return facts;
}

void ControllerImpl::budget_facts(PodFacts& facts) const {
  for (const kube::Pod& pod : facts.leaving) {
    // Two budgets over one pod make the API refuse every eviction of it (MultiplePDBs).
    const std::vector<kube::PodDisruptionBudget> covering = view_.covering_budgets(pod);
    if (covering.size() != 1) continue;
    const kube::PodDisruptionBudget& budget = covering.front();
    BudgetFact fact{.key = budget.meta.namespace_ + "/" + budget.meta.name,
                    .resource_version = budget.meta.resource_version,
                    .allows = budget.allows_disruption(),
                    .disruptions_allowed = budget.disruptions_allowed,
                    .granted_at = std::nullopt,
                    .allowing_since = std::nullopt};
    if (const auto granted = budget.disrupted_pods.find(pod.meta.name);
        granted != budget.disrupted_pods.end()) {
      fact.granted_at = granted->second;
    }
    fact.allowing_since = evictions_.allowing_since(fact.key);
    facts.budgets.emplace(pod.meta.uid, std::move(fact));
  }
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
  if (auto known = co_await kubevirt_.refresh(); !known) {
    logger_.warn("KubeVirt's API could not be read", {{"error", known.error().message}});
    if (!kubevirt_.checked()) {
      for (const kube::Pod* pod : vms) hold_unknown(*pod, known.error().message);
      co_return;
    }
  }
  // Without the kubevirt.io/v1 API a virt-launcher pod is a pod like any other.
  if (!kubevirt_.served()) co_return;
  // From the VMI cache, which wakes the maintenance when a VMI of its node changes.
  for (const kube::Pod* pod : vms) {
    if (const std::optional<Vmi> vmi = kubevirt_.vmi(pod->meta.namespace_, vmi_name(*pod))) {
      facts.vms[pod->meta.uid] =
          decide_vm(*vmi, kubevirt_.eviction_strategy(), nm.spec.vm_eviction_policy);
    }  // else no VM behind it: a pod like any other
  }

  // The operator's migrations, only while it migrates VMs of this node.
  const bool migrates = std::any_of(facts.vms.begin(), facts.vms.end(), [](const auto& entry) {
    return entry.second.action == VmAction::kMigrate;
  });
  if (!migrates) co_return;
  std::string uid = nm.meta.uid;
  Result<std::vector<Migration>> listed = co_await kubevirt_.migrations_of(std::move(uid));
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
  if (created) kubevirt_.created(*created);
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
  Result<std::vector<Migration>> listed = co_await kubevirt_.migrations_of(std::move(uid));
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
    kubevirt_.deleted(key);
    log_for(nm).info("live migration cancelled", {{"migration", key}});
    cancelled.push_back(key);
  }
  co_return cancelled;
}

}  // namespace nmo::op::internal
