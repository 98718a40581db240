#include "operator/fleet/plan_controller.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "base/log.h"
#include "kube/api/event.h"
#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"
#include "operator/fleet/rollout.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/gates/node_lease.h"
#include "operator/kubevirt/vm_policy.h"
#include "operator/node/lifecycle_conditions.h"
#include "operator/node/steering_taint.h"
#include "runtime/cache.h"
#include "runtime/controller.h"
#include "runtime/event_recorder.h"
#include "runtime/finalizer.h"
#include "runtime/own_writes.h"
#include "runtime/reflector.h"
#include "runtime/store.h"

namespace nmo::op::fleet {
namespace internal {

namespace {

namespace json = boost::json;

// How long the first sync of the caches, or of a node's pods, is waited for at a time.
constexpr std::chrono::seconds kSyncTimeout{60};
// How long stop() lets a reconcile in flight finish, and the Events be written.
constexpr std::chrono::seconds kStopGrace{10};
// The reconcile key of the sweep that takes the steering taint off every node no plan wants it on
// (a plan's finalizer removed by hand, --plan-steering-taint=false). Not a valid object name, so
// no plan can take it.
constexpr std::string_view kSteeringSweepKey = "#steering-sweep";

// A write that lost a race: a Conflict, or a failed `test` of a JSON Patch (422, Invalid).
runtime::ObjectRef plan_ref(const MaintenancePlan& plan) {
  return {.api_version = std::string(kPlanApiVersion),
          .kind = std::string(kPlanKind),
          .namespace_ = {},
          .name = plan.meta.name,
          .uid = plan.meta.uid};
}

// True for the phases in which the health gate is (or is about to be) looked at.
bool gate_phase(PlanNodePhase phase) {
  return phase == PlanNodePhase::kRestoring || phase == PlanNodePhase::kHealthCheck;
}

// An owner reference to the plan: what NodeMaintenances created before kPlanUidAnnotation
// carried. The plan takes it off at its next look (docs/design.md §10).
bool owner_referenced(const kube::ObjectMeta& meta, const std::string& uid) {
  return std::any_of(meta.owner_references.begin(), meta.owner_references.end(),
                     [&](const kube::OwnerReference& owner) { return owner.uid == uid; });
}

// The index of the Warning Event cache: by involvedObject.name.
constexpr std::string_view kInvolvedIndex = "involved";

// The plan names the node: in spec.nodes, or as an entry of its status.
bool names_node(const MaintenancePlan& plan, std::string_view node) {
  return std::find(plan.spec.nodes.begin(), plan.spec.nodes.end(), node) != plan.spec.nodes.end() ||
         std::any_of(plan.status.nodes.begin(), plan.status.nodes.end(),
                     [&](const PlanNodeStatus& entry) { return entry.name == node; });
}

// The NodeMaintenance carries the plan's uid.
bool carries_uid(const kube::ObjectMeta& meta, const std::string& uid) {
  const std::string* carried = meta.annotations.find(kPlanUidAnnotation);
  return carried != nullptr && !uid.empty() && *carried == uid;
}

}  // namespace

class PlanControllerImpl {
 public:
  PlanControllerImpl(asio::any_io_executor executor, kube::Client& client, runtime::Cache& cache,
                     PlanControllerOptions options)
      : executor_(std::move(executor)),
        client_(client),
        cache_(cache),
        options_(std::move(options)),
        logger_(log::root().with({{"controller", "maintenanceplan"}})),
        recorder_(executor_, options_.events_client != nullptr ? *options_.events_client : client_,
                  std::string(kEventComponent), options_.identity),
        controller_(
            executor_, "maintenanceplan",
            [this](std::string key) { return reconcile(std::move(key)); },
            runtime::ControllerOptions{.workers = 1}) {
    // What a plan reads, from the process's shared cache (the NodeMaintenance controller
    // declares the same informers and shares them). The plans themselves are declared once
    // their API is served (run()).
    auto& maintenances = cache_.informer<NodeMaintenance>(std::string(kMaintenanceCache));
    maintenances_ = maintenances.store();
    maintenances.on_change([this](const NodeMaintenance* before, const NodeMaintenance* now) {
      const NodeMaintenance* seen = now != nullptr ? now : before;
      if (const std::string* plan = seen->meta.labels.find(kPlanLabel)) enqueue(*plan);
    });
    auto& nodes = cache_.informer<kube::Node>("the node cache");
    nodes_ = nodes.store();
    nodes.on_change([this](const kube::Node* before, const kube::Node* now) {
      // A node of a plan changed (readiness, cordon, boot): its plan looks again. A node that
      // comes, goes or changes labels may enter or leave a plan's selector.
      const kube::Node& node = now != nullptr ? *now : *before;
      const bool membership =
          before == nullptr || now == nullptr || before->meta.labels != now->meta.labels;
      for_each_plan([&](const MaintenancePlan& plan) {
        if ((membership && plan.spec.node_selector.has_value()) ||
            names_node(plan, node.meta.name)) {
          enqueue(plan.meta.name);
        }
      });
    });
    auto& leases = cache_.informer<kube::Lease>(
        "the Lease cache of namespace " + options_.lease_namespace, options_.lease_namespace);
    leases_ = leases.store();
    leases.on_change([this](const kube::Lease*, const kube::Lease*) {
      // maxUnavailable and the health gate count the nodes someone else holds.
      for_each_plan([&](const MaintenancePlan& plan) { enqueue(plan.meta.name); });
    });
    auto& budgets = cache_.informer<kube::PodDisruptionBudget>("the PodDisruptionBudget cache");
    budgets_ = budgets.store();
    budgets.on_change([this](const kube::PodDisruptionBudget* before,
                             const kube::PodDisruptionBudget* now) {
      // The health gate of a node waits for the budgets that covered its pods.
      const kube::PodDisruptionBudget& budget = now != nullptr ? *now : *before;
      const std::string key = budget.meta.namespace_ + "/" + budget.meta.name;
      for_each_plan([&](const MaintenancePlan& plan) {
        for (const PlanNodeStatus& entry : plan.status.nodes) {
          if (gate_phase(entry.phase) &&
              std::find(entry.budgets.begin(), entry.budgets.end(), key) != entry.budgets.end()) {
            enqueue(plan.meta.name);
            return;
          }
        }
      });
    });
    auto& warnings = cache_.informer<kube::Event>(
        "the cache of the operator's Warning Events",
        std::string(runtime::kClusterScopedEventNamespace),
        kube::ListOptions{.field_selector =
                              "source=" + std::string(kEventComponent) + ",type=Warning"});
    warnings_ = warnings.store();
    runtime::Cache::add_index(warnings, std::string(kInvolvedIndex), [](const kube::Event& event) {
      return std::vector<std::string>{event.involved.name};
    });
    warnings.on_change([this](const kube::Event*, const kube::Event* now) {
      // A new Warning about a node in its health gate (or its maintenance) holds the gate.
      if (now == nullptr) return;
      for_each_plan([&](const MaintenancePlan& plan) {
        for (const PlanNodeStatus& entry : plan.status.nodes) {
          if (gate_phase(entry.phase) &&
              (entry.name == now->involved.name || entry.maintenance == now->involved.name)) {
            enqueue(plan.meta.name);
            return;
          }
        }
      });
    });
    informers_ = {&maintenances, &nodes, &leases, &budgets};
  }

  asio::awaitable<Result<void>> start() {
    // Declared now that the API is served (the Manager starts this controller then); the cache
    // runs, so the informer starts at once, after this handler is in place.
    auto& plans = cache_.informer<MaintenancePlan>("the MaintenancePlan cache");
    plans_ = plans.store();
    plans.on_change([this](const MaintenancePlan*, const MaintenancePlan* now) {
      // A plan gone may leave its steering taint behind (its finalizer removed by hand).
      enqueue(now != nullptr ? now->meta.name : std::string(kSteeringSweepKey));
    });
    informers_.push_back(&plans);
    const std::chrono::milliseconds timeout = kSyncTimeout;
    NMO_CO_TRY(co_await cache_.wait_synced(informers_, timeout));
    recorder_.start();
    controller_.start();
    started_ = true;
    for (const auto& plan : plans_->list()) controller_.enqueue(plan->meta.name);
    controller_.enqueue(std::string(kSteeringSweepKey));
    logger_.info("watching MaintenancePlans");
    co_return Result<void>{};
  }

  asio::awaitable<void> stop() {
    if (started_) {
      co_await controller_.stop(kStopGrace);
      co_await recorder_.stop(kStopGrace);
      started_ = false;
    }
  }

  std::vector<MaintenancePlan> plans() const {
    std::vector<MaintenancePlan> out;
    if (!started_ || plans_ == nullptr) return out;
    for (const auto& plan : plans_->list()) out.push_back(*plan);
    return out;
  }

 private:
  asio::awaitable<Result<runtime::ReconcileAction>> reconcile(std::string name);
  asio::awaitable<Result<World>> read_world(const MaintenancePlan& plan);
  asio::awaitable<Result<void>> drop_owner_references(const MaintenancePlan& plan,
                                                      const std::vector<std::string>& names);
  asio::awaitable<Result<void>> read_vms(const MaintenancePlan& plan, World& world);
  void read_warnings(const MaintenancePlan& plan, World& world);
  void read_leases(const MaintenancePlan& plan, World& world) const;
  // Runs `visit` on every plan in the cache (none before its API is served).
  template <typename Visit>
  void for_each_plan(Visit visit) const {
    if (plans_ == nullptr) return;
    for (const auto& plan : plans_->list()) visit(*plan);
  }
  // Queues the plan `name`, once the controller runs.
  void enqueue(const std::string& name) {
    if (started_) controller_.enqueue(name);
  }
  asio::awaitable<Result<void>> record_covered(PlanNodeStatus& entry);
  asio::awaitable<void> create_maintenances(const MaintenancePlan& plan, Decision& decision);
  asio::awaitable<Result<void>> sync_planned(const MaintenancePlan& plan, const Decision& decision);
  // The nodes the steering taint belongs on, from every cached plan (as this controller last
  // wrote it while the cache is behind); `reconciled` with `decided`, both given or both null,
  // as this reconcile decided it.
  std::set<std::string> steered(const MaintenancePlan* reconciled, const Decision* decided);
  // Puts the steering taint on `node` (as just read) or takes it off. Returns the node as written,
  // or as given when there was nothing to write, or when the write lost a race and
  // `retry_races` is false (the next look converges it); a race is an error otherwise.
  asio::awaitable<Result<kube::Node>> write_steering(kube::Node node, bool wanted,
                                                     bool retry_races);
  // The sweep (kSteeringSweepKey): the steering taint off every cached node no plan wants it on.
  asio::awaitable<Result<runtime::ReconcileAction>> sweep_steering();
  asio::awaitable<Result<void>> carry_out(const MaintenancePlan& plan, Decision& decision);
  // A JSON merge patch of the NodeMaintenance's metadata; one already gone is no error.
  asio::awaitable<Result<void>> patch_metadata(std::string maintenance,
                                               boost::json::object metadata);

  asio::any_io_executor executor_;
  kube::Client& client_;
  runtime::Cache& cache_;
  PlanControllerOptions options_;
  log::Logger logger_;
  // The stores of the shared cache this controller reads; plans_ is null until the
  // MaintenancePlan API is served. run() waits for informers_ before the first reconcile.
  std::shared_ptr<runtime::Store<MaintenancePlan>> plans_;
  std::shared_ptr<runtime::Store<NodeMaintenance>> maintenances_;
  std::shared_ptr<runtime::Store<kube::Node>> nodes_;
  std::shared_ptr<runtime::Store<kube::Lease>> leases_;
  std::shared_ptr<runtime::Store<kube::PodDisruptionBudget>> budgets_;
  // The operator's own Warning Events about cluster-scoped objects, by involvedObject.name; not
  // waited for (a Role without `watch` on events only costs the health gate this input).
  std::shared_ptr<runtime::Store<kube::Event>> warnings_;
  // The VMIs, declared the first time a node in the health gate had VMs (null before).
  std::shared_ptr<runtime::Store<VmiObject>> vmis_;
  std::vector<const runtime::internal::ReflectorLoop*> informers_;
  runtime::EventRecorder recorder_;
  runtime::Controller controller_;
  // Read-your-own-writes: the plans as this controller last wrote them (until the watch
  // delivers a write, deciding from the older cached plan would repeat the last decision's
  // Events and its finalizer removal), and the NodeMaintenances it created (until the watch
  // delivers one, it would look deleted by someone else).
  runtime::OwnWrites<MaintenancePlan> own_plans_;
  runtime::OwnWrites<NodeMaintenance> own_maintenances_;
  // The resourceVersion the last status write of carry_out() returned; "" when it wrote none.
  std::string written_version_;
  // The nodes of the plan in reconcile (one worker), as read_world() found them in the cache, by
  // name: what MaintenancePlanned is converged from without another read.
  std::map<std::string, std::shared_ptr<const kube::Node>, std::less<>> plan_nodes_;
  bool said_events_unsynced_ = false;
  bool said_node_status_forbidden_ = false;
  bool started_ = false;
};

asio::awaitable<Result<World>> PlanControllerImpl::read_world(const MaintenancePlan& plan) {
  World world;
  world.now = kube::wall_now();
  // Nodes, from the cache: those the selector matches, and whatever else the plan names (a
  // node that no longer matches its selector is still the plan's).
  std::set<std::string, std::less<>> wanted(plan.spec.nodes.begin(), plan.spec.nodes.end());
  for (const PlanNodeStatus& entry : plan.status.nodes) {
    wanted.insert(entry.name);
  }
  const auto facts_of = [](const kube::Node& node) {
    NodeFacts facts;
    facts.name = node.meta.name;
    facts.ready = node.is_ready();
    facts.unschedulable = node.unschedulable;
    facts.control_plane = is_control_plane(node);
    if (const std::string* zone = node.meta.labels.find(kZoneLabel)) {
      facts.zone = *zone;
    }
    facts.boot_id = node.boot_id;
    return facts;
  };
  plan_nodes_.clear();
  if (plan.spec.node_selector.has_value()) {
    for (const auto& node : nodes_->list()) {
      if (plan.spec.node_selector->matches(node->meta.labels)) {
        wanted.erase(node->meta.name);
        plan_nodes_.emplace(node->meta.name, node);
      }
    }
  }
  for (const std::string& name : wanted) {
    if (auto node = nodes_->get(name)) {
      plan_nodes_.emplace(name, std::move(node));
    }
  }
  for (const auto& [name, node] : plan_nodes_) {
    world.nodes.push_back(facts_of(*node));
  }
  std::vector<std::string> referenced;
  for (const auto& maintenance : own_maintenances_.fresher(maintenances_->list())) {
    MaintenanceFacts facts;
    facts.name = maintenance->meta.name;
    facts.node = maintenance->spec.node_name;
    facts.owned = carries_uid(maintenance->meta, plan.meta.uid);
    if (owner_referenced(maintenance->meta, plan.meta.uid)) {
      facts.owned = true;
      referenced.push_back(maintenance->meta.name);
    }
    facts.deleting = maintenance->meta.deletion_timestamp.has_value();
    facts.phase = maintenance->status.phase;
    facts.last_error = maintenance->status.last_error;
    facts.pending_pods = static_cast<std::int64_t>(maintenance->status.pending_pods.size());
    facts.done_marked = maintenance->meta.annotations.contains(kDoneAnnotation);
    if (const std::string* hold = maintenance->meta.annotations.find(kHoldAnnotation)) {
      facts.hold = *hold;
    }
    world.maintenances.push_back(std::move(facts));
  }
  auto dropped = co_await drop_owner_references(plan, referenced);
  if (!dropped.has_value()) {
    co_return dropped.error();
  }
  const bool gate_needs_budgets = std::any_of(
      plan.status.nodes.begin(), plan.status.nodes.end(),
      [](const auto& entry) { return !entry.budgets.empty() && gate_phase(entry.phase); });
  if (gate_needs_budgets) {
    for (const auto& budget : budgets_->list()) {
      world.budgets.push_back({budget->meta.namespace_ + "/" + budget->meta.name,
                               budget->current_healthy, budget->desired_healthy});
    }
  }
  auto vms = co_await read_vms(plan, world);
  if (!vms.has_value()) {
    co_return vms.error();
  }
  read_warnings(plan, world);
  read_leases(plan, world);
  co_return world;
}

asio::awaitable<Result<void>> PlanControllerImpl::drop_owner_references(
    const MaintenancePlan& plan, const std::vector<std::string>& names) {
  // The garbage collector must never get to delete a drained node's NodeMaintenance with its
  // plan: the owner reference goes, the uid annotation says whose it is.
  for (const std::string& name : names) {
    json::object metadata{{"ownerReferences", nullptr},
                          {"annotations", json::object{{kPlanUidAnnotation, plan.meta.uid}}}};
    auto patched = co_await patch_metadata(name, std::move(metadata));
    if (!patched.has_value()) {
      co_return patched.error();
    }
    logger_.info("took the plan's owner reference off a NodeMaintenance",
                 {{"plan", plan.meta.name}, {"maintenance", name}});
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> PlanControllerImpl::read_vms(const MaintenancePlan& plan,
                                                           World& world) {
  for (const PlanNodeStatus& entry : plan.status.nodes) {
    if (!gate_phase(entry.phase)) {
      continue;
    }
    for (const std::string& key : entry.vms) {
      const auto slash = key.find('/');
      if (slash == std::string::npos) {
        continue;
      }
      // The VMI cache the NodeMaintenance controller shares (its node had VMs, so KubeVirt is
      // served); until it has listed, one GET.
      if (vmis_ == nullptr) vmis_ = cache_.informer<VmiObject>(std::string(kVmiCache)).store();
      if (vmis_->has_synced()) {
        if (const auto vmi = vmis_->get(key)) {
          world.vms.push_back({key, vmi->vmi.phase, vmi->vmi.migrating});
        }
        continue;
      }
      // Named arguments: GCC 12 may destroy temporaries passed to a coroutine twice.
      std::string namespace_ = key.substr(0, slash);
      std::string vm_name = key.substr(slash + 1);
      auto vmi = co_await client_.get<Vmi>(namespace_, vm_name);
      if (!vmi.has_value()) {
        // Deleted since, or KubeVirt no longer served: nothing to wait for.
        if (is_not_found(vmi.error())) {
          continue;
        }
        co_return vmi.error();
      }
      world.vms.push_back({key, vmi->phase, vmi->migrating});
    }
  }
  co_return Result<void>{};
}

void PlanControllerImpl::read_warnings(const MaintenancePlan& plan, World& world) {
  const bool gating = std::any_of(plan.status.nodes.begin(), plan.status.nodes.end(),
                                  [](const auto& entry) { return gate_phase(entry.phase); });
  if (!gating) {
    return;
  }
  if (!warnings_->has_synced()) {
    // An install from before this check (no `list`/`watch` on events in its Role), or a cache
    // still listing: the gate goes without it rather than stopping the plan.
    if (!said_events_unsynced_) {
      logger_.warn(
          "the cache of the operator's Warning Events has not synced; the health gate does not "
          "look at them until it has (apply deploy/rbac/event_role.yaml)");
      said_events_unsynced_ = true;
    }
    return;
  }
  for (const PlanNodeStatus& entry : plan.status.nodes) {
    if (!gate_phase(entry.phase)) {
      continue;
    }
    // Events about the node and about its NodeMaintenance (both cluster-scoped).
    const std::array<std::string, 2> subjects{entry.name, entry.maintenance};
    for (const std::string& about : subjects) {
      if (about.empty()) {
        continue;
      }
      for (const auto& event : warnings_->by_index(kInvolvedIndex, about)) {
        const bool about_it = (event->involved.kind == "Node" && about == entry.name) ||
                              (event->involved.kind == kKind && about == entry.maintenance);
        if (about_it && event->last_seen.has_value()) {
          world.warnings.push_back({entry.name, event->reason, event->message, *event->last_seen});
        }
      }
    }
  }
}

void PlanControllerImpl::read_leases(const MaintenancePlan& plan, World& world) const {
  // maxUnavailable counts every node of the plan whose Lease someone else holds, and the health
  // gate waits while someone else holds a node's (docs/design.md §10).
  const bool needed = plan.spec.max_unavailable.has_value() ||
                      std::any_of(plan.status.nodes.begin(), plan.status.nodes.end(),
                                  [](const auto& entry) { return gate_phase(entry.phase); });
  if (!needed) {
    return;
  }
  for (const NodeFacts& node : world.nodes) {
    const auto lease = leases_->get(options_.lease_namespace + "/" + node_lease_name(node.name));
    if (lease != nullptr &&
        classify_node_lease(*lease, world.now) == NodeLeaseState::kHeldByOther) {
      world.leased_by_others[node.name] = lease_holder(*lease);
    }
  }
}

asio::awaitable<Result<void>> PlanControllerImpl::record_covered(PlanNodeStatus& entry) {
  // The pods of the node from the cache's scoped informer, the one the NodeMaintenance
  // controller holds while it drains the node: released here, it lingers until the drain takes
  // it over, so the node's pods are listed once.
  auto pods =
      cache_.acquire<kube::Pod>("the pods of node " + entry.name, "",
                                kube::ListOptions{.field_selector = "spec.nodeName=" + entry.name});
  const std::chrono::milliseconds timeout = kSyncTimeout;
  if (!pods || !co_await pods.wait_synced(timeout)) {
    co_return Error(ErrorCode::kTimeout, "the pods of node " + entry.name + " did not sync");
  }
  const auto on_node = pods.store().list();
  entry.budgets.clear();
  for (const auto& budget : budgets_->list()) {
    const bool covers = std::any_of(on_node.begin(), on_node.end(), [&](const auto& pod) {
      return pod->meta.namespace_ == budget->meta.namespace_ && budget->selects(pod->meta.labels);
    });
    if (covers) {
      entry.budgets.push_back(budget->meta.namespace_ + "/" + budget->meta.name);
    }
  }
  entry.vms.clear();
  for (const auto& pod : on_node) {
    const std::string vmi = vmi_name(*pod);
    if (is_virt_launcher(*pod) && !vmi.empty()) {
      entry.vms.push_back(pod->meta.namespace_ + "/" + vmi);
    }
  }
  co_return Result<void>{};
}

asio::awaitable<void> PlanControllerImpl::create_maintenances(const MaintenancePlan& plan,
                                                              Decision& decision) {
  for (const StartNode& start : decision.create) {
    auto entry = std::find_if(decision.status.nodes.begin(), decision.status.nodes.end(),
                              [&](const PlanNodeStatus& e) { return e.name == start.node; });
    // The budgets that cover the node's pods now, and its VMs: the health gate waits for them
    // later.
    if (entry != decision.status.nodes.end()) {
      auto recorded = co_await record_covered(*entry);
      if (!recorded.has_value()) {
        logger_.warn(
            "could not read what runs on a node the plan starts; its health gate will "
            "not wait for its budgets and VMs",
            {{"plan", plan.meta.name}, {"node", start.node}, {"error", recorded.error().message}});
      }
    }
    // No owner reference: a delete of the plan, whatever its propagation policy, must not let the
    // garbage collector give a drained node back (docs/design.md §10).
    kube::ObjectMeta meta;
    meta.name = start.maintenance;
    meta.labels.set(std::string(kPlanLabel), plan.meta.name);
    meta.annotations.set(std::string(kPlanUidAnnotation), plan.meta.uid);
    NodeMaintenanceSpec spec;
    spec.node_name = start.node;
    spec.reason = plan.spec.reason.empty() ? "MaintenancePlan " + plan.meta.name : plan.spec.reason;
    const std::string path = kube::collection_path<NodeMaintenance>("");
    json::value manifest = node_maintenance_object(meta, spec);
    const kube::WriteOptions write;
    auto created = co_await client_.create(path, std::move(manifest), write);
    if (created.has_value()) {
      if (auto decoded = decode_node_maintenance(*created); decoded.has_value()) {
        own_maintenances_.wrote(std::move(*decoded), "");
      }
      continue;
    }
    PlanEventReason reason = PlanEventReason::kNodeNotStarted;
    std::string why =
        "could not create NodeMaintenance " + start.maintenance + ": " + created.error().message;
    if (created.error().code == ErrorCode::kAlreadyExists) {
      // Made since the plan looked: its own only with its uid and this node (created before a
      // lost status write); anybody else's is never adopted.
      auto existing = co_await client_.get<NodeMaintenance>("", start.maintenance);
      if (existing.has_value() && carries_uid(existing->meta, plan.meta.uid) &&
          existing->spec.node_name == start.node) {
        continue;
      }
      reason = PlanEventReason::kNameCollision;
      why = "NodeMaintenance " + start.maintenance +
            " exists and is not this plan's; the node waits until it is gone";
    } else {
      logger_.warn(
          "could not create a NodeMaintenance",
          {{"plan", plan.meta.name}, {"node", start.node}, {"error", created.error().message}});
    }
    if (entry != decision.status.nodes.end()) {
      *entry = PlanNodeStatus{.name = entry->name};
      entry->message = why;
    }
    std::erase_if(decision.events, [&](const PlanEvent& event) {
      return event.reason == PlanEventReason::kNodeStarted && event.node == start.node;
    });
    decision.events.push_back({reason, "node " + start.node + ": " + why, start.node});
  }
}

asio::awaitable<Result<void>> PlanControllerImpl::sync_planned(const MaintenancePlan& plan,
                                                               const Decision& decision) {
  // MaintenancePlanned on the nodes the plan will take (docs/design.md §2.10), from the status
  // this reconcile writes: True on its Waiting entries while the plan lives and is not finished,
  // absent everywhere else. The steering taint (§10, "Steering") from the same status and every
  // other plan's. Level-triggered: every reconcile converges every node of the plan, before a
  // node's NodeMaintenance is created and before the plan's finalizer goes.
  const bool deleting = decision.remove_finalizer || plan.meta.deletion_timestamp.has_value();
  const bool live = options_.node_lifecycle_conditions && !deleting &&
                    decision.status.phase != PlanPhase::kSucceeded &&
                    decision.status.phase != PlanPhase::kFailed;
  const std::string window = plan.spec.windows.empty() ? "" : decision.status.next_window_text;
  std::map<std::string, std::string, std::less<>> planned;
  if (live) {
    const std::size_t total = decision.status.nodes.size();
    for (std::size_t i = 0; i < total; ++i) {
      const PlanNodeStatus& entry = decision.status.nodes[i];
      if (entry.phase == PlanNodePhase::kWaiting) {
        planned[entry.name] = planned_message(plan.meta.name, i + 1, total, window);
      }
    }
  }
  const std::set<std::string> steered_here = steered(&plan, &decision);
  // Cleared when nodes/status patch is forbidden: the plan goes on without the condition.
  bool write_conditions = true;
  for (const auto& [name, cached] : plan_nodes_) {
    std::optional<std::string> message;
    if (const auto found = planned.find(name); found != planned.end()) message = found->second;
    const bool steer = steered_here.contains(name);
    // The cached node decides first (no request while it already is as wanted), then a fresh
    // read: the cache may be behind.
    const bool condition_stale =
        write_conditions && planned_patch(*cached, plan.meta.name, message, kube::wall_now());
    if (!condition_stale && !steering_patch(*cached, steer)) continue;
    auto current = co_await client_.get<kube::Node>("", name);
    if (!current.has_value()) {
      if (is_not_found(current.error())) continue;
      co_return current.error();
    }
    // The taint first: its answer is the node the condition's patch, which carries the
    // resourceVersion, builds on. A lost race is retried when the taint goes (a plan being
    // deleted, a node whose turn came, a plan that ended: nothing else would come back for it
    // soon), and left to the next look when it is put on.
    auto node = co_await write_steering(std::move(*current), steer, deleting || !steer);
    if (!node.has_value()) {
      if (is_not_found(node.error())) continue;
      co_return node.error();
    }
    if (!write_conditions) continue;
    const auto patch = planned_patch(*node, plan.meta.name, message, kube::wall_now());
    if (!patch) continue;
    const std::string path = kube::object_path<kube::Node>("", name) + "/status";
    std::string body = json::serialize(*patch);
    const kube::WriteOptions write;
    auto written =
        co_await client_.patch(path, kube::PatchType::kStrategicMerge, std::move(body), write);
    if (written.has_value() || is_not_found(written.error())) continue;
    // The node changed since the read (a kubelet's heartbeat): the next look converges it. A
    // live plan does not hold its nodes back for that; a plan being deleted retries, so that its
    // conditions go before its finalizer.
    if (written.error().code == ErrorCode::kConflict && live) continue;
    if (written.error().code != ErrorCode::kForbidden) co_return written.error();
    // Roles without nodes/status patch: the plan goes on without the condition.
    if (!said_node_status_forbidden_) {
      logger_.warn(
          "writing MaintenancePlanned is forbidden; the plans go on without it (grant nodes/status "
          "patch: deploy/rbac, or run with --node-lifecycle-conditions=false)",
          {{"error", written.error().message}});
      said_node_status_forbidden_ = true;
    }
    write_conditions = false;
  }
  co_return Result<void>{};
}

std::set<std::string> PlanControllerImpl::steered(const MaintenancePlan* reconciled,
                                                  const Decision* decided) {
  const auto plans = own_plans_.fresher(plans_->list());
  std::vector<PlanSteering> steering;
  steering.reserve(plans.size() + 1);
  for (const auto& plan : plans) {
    if (reconciled == nullptr || plan->meta.name != reconciled->meta.name) {
      steering.push_back(
          {.deleting = plan->meta.deletion_timestamp.has_value(), .status = &plan->status});
    }
  }
  if (reconciled != nullptr) {
    steering.push_back(
        {.deleting = decided->remove_finalizer || reconciled->meta.deletion_timestamp.has_value(),
         .status = &decided->status});
  }
  return steered_nodes(steering, options_.steering_taint);
}

asio::awaitable<Result<kube::Node>> PlanControllerImpl::write_steering(kube::Node node, bool wanted,
                                                                       bool retry_races) {
  const auto patch = steering_patch(node, wanted);
  if (!patch) co_return node;
  const std::string path = kube::object_path<kube::Node>("", node.meta.name);
  std::string body = json::serialize(*patch);
  const kube::WriteOptions write;
  auto written = co_await client_.patch(path, kube::PatchType::kJsonPatch, std::move(body), write);
  if (!written.has_value()) {
    // The node changed since the read (the NodeMaintenance controller's cordon): a live plan
    // moves on, and its next look converges the node.
    if (is_write_conflict(written.error()) && !retry_races) co_return node;
    co_return written.error();
  }
  co_return kube::decode_node(*written);
}

asio::awaitable<Result<runtime::ReconcileAction>> PlanControllerImpl::sweep_steering() {
  const std::set<std::string> wanted = steered(nullptr, nullptr);
  std::optional<Error> failed;
  for (const auto& cached : nodes_->list()) {
    if (!has_steering_taint(*cached) || wanted.contains(cached->meta.name)) continue;
    // Nothing else brings the sweep back: what fails is retried, after the other nodes.
    auto current = co_await client_.get<kube::Node>("", cached->meta.name);
    if (!current.has_value()) {
      if (!is_not_found(current.error())) failed = current.error();
      continue;
    }
    if (!has_steering_taint(*current)) continue;
    auto written = co_await write_steering(std::move(*current), false, true);
    if (!written.has_value()) {
      if (!is_not_found(written.error())) failed = written.error();
      continue;
    }
    logger_.info("took the steering taint off a node no plan takes later",
                 {{"node", cached->meta.name}});
  }
  if (failed) co_return *failed;
  co_return runtime::ReconcileAction::done();
}

asio::awaitable<Result<void>> PlanControllerImpl::patch_metadata(std::string maintenance,
                                                                 json::object metadata) {
  const json::object patch{{"metadata", std::move(metadata)}};
  const std::string path = kube::object_path<NodeMaintenance>("", maintenance);
  std::string body = json::serialize(patch);
  const kube::WriteOptions write;
  auto patched = co_await client_.patch(path, kube::PatchType::kMergePatch, std::move(body), write);
  // A maintenance deleted meanwhile has nothing left to change.
  if (!patched.has_value() && !is_not_found(patched.error())) {
    co_return patched.error();
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> PlanControllerImpl::carry_out(const MaintenancePlan& plan,
                                                            Decision& decision) {
  co_await create_maintenances(plan, decision);
  const kube::WriteOptions write;
  for (const std::string& name : decision.remove) {
    const std::string maintenance_path = kube::object_path<NodeMaintenance>("", name);
    const kube::DeleteOptions options;
    auto removed = co_await client_.remove(maintenance_path, options);
    if (!removed.has_value() && !is_not_found(removed.error())) {
      co_return removed.error();
    }
    own_maintenances_.forget(name);
  }
  for (const HoldNode& hold : decision.hold) {
    json::object held_by{{"annotations", json::object{{kHoldAnnotation, hold.message}}}};
    auto held = co_await patch_metadata(hold.maintenance, std::move(held_by));
    if (!held.has_value()) {
      co_return held.error();
    }
  }
  for (const std::string& name : decision.unhold) {
    json::object lift{{"annotations", json::object{{kHoldAnnotation, nullptr}}}};
    auto lifted = co_await patch_metadata(name, std::move(lift));
    if (!lifted.has_value()) {
      co_return lifted.error();
    }
  }
  for (const std::string& name : decision.release) {
    json::object release{{"labels", json::object{{kPlanLabel, nullptr}}},
                         {"annotations", json::object{{kPlanUidAnnotation, nullptr}}}};
    auto released = co_await patch_metadata(name, std::move(release));
    if (!released.has_value()) {
      co_return released.error();
    }
  }
  const std::string path = kube::object_path<MaintenancePlan>("", plan.meta.name);
  if (decision.status != plan.status && !decision.remove_finalizer) {
    const std::string status_path = path + "/status";
    std::string body = json::serialize(plan_status_merge_patch(decision.status));
    auto written =
        co_await client_.patch(status_path, kube::PatchType::kMergePatch, std::move(body), write);
    if (!written.has_value()) {
      co_return written.error();
    }
    written_version_ = kube::resource_version_of(*written);
  }
  for (PlanEvent& event : decision.events) {
    recorder_.record(plan_ref(plan), {.type = event.warning() ? runtime::EventType::kWarning
                                                              : runtime::EventType::kNormal,
                                      .reason = std::string(to_string(event.reason)),
                                      .message = std::move(event.message),
                                      .related = std::nullopt});
  }
  if (decision.remove_finalizer) {
    std::string finalizer(kPlanFinalizer);
    auto removed = co_await runtime::remove_finalizer(client_, path, plan.meta, finalizer);
    if (!removed.has_value()) {
      co_return removed.error();
    }
  }
  co_return Result<void>{};
}

asio::awaitable<Result<runtime::ReconcileAction>> PlanControllerImpl::reconcile(std::string name) {
  if (name == kSteeringSweepKey) co_return co_await sweep_steering();
  const auto cached = plans_->get(name);
  if (cached == nullptr) {
    own_plans_.forget(name);
    co_return runtime::ReconcileAction::done();
  }
  const auto snapshot = own_plans_.fresher(name, cached);
  MaintenancePlan plan = *snapshot;
  const std::string path = kube::object_path<MaintenancePlan>("", plan.meta.name);
  if (!plan.meta.deletion_timestamp.has_value() &&
      !runtime::has_finalizer(plan.meta, kPlanFinalizer)) {
    std::string finalizer(kPlanFinalizer);
    auto added = co_await runtime::add_finalizer(client_, path, plan.meta, finalizer);
    if (!added.has_value()) {
      co_return added.error();
    }
    // The finalizer's write comes back through the watch and queues the plan again.
    co_return runtime::ReconcileAction::done();
  }
  if (plan.meta.deletion_timestamp.has_value() &&
      !runtime::has_finalizer(plan.meta, kPlanFinalizer)) {
    co_return runtime::ReconcileAction::done();
  }
  auto world = co_await read_world(plan);
  if (!world.has_value()) {
    co_return world.error();
  }
  world->progress_poll = options_.poll;
  Decision decision = decide(plan, *world);
  // Before carry_out(): a node's steering taint goes before its NodeMaintenance is created, and a
  // deleted plan's conditions and taints before its finalizer does.
  auto planned = co_await sync_planned(plan, decision);
  if (!planned.has_value()) {
    co_return planned.error();
  }
  written_version_.clear();
  auto done = co_await carry_out(plan, decision);
  if (!done.has_value()) {
    co_return done.error();
  }
  if (!written_version_.empty() || decision.remove_finalizer) {
    MaintenancePlan after = plan;
    after.status = decision.status;
    // After a finalizer removal the version is unknown (the plan goes); "" links no later write.
    after.meta.resource_version = decision.remove_finalizer ? std::string() : written_version_;
    if (decision.remove_finalizer) {
      std::erase(after.meta.finalizers, std::string(kPlanFinalizer));
    }
    own_plans_.wrote(std::move(after), plan.meta.resource_version);
  }
  if (decision.remove_finalizer) {
    co_return runtime::ReconcileAction::done();
  }
  co_return runtime::ReconcileAction::after(decision.requeue_after);
}

}  // namespace internal

PlanController::PlanController(asio::any_io_executor executor, kube::Client& client,
                               runtime::Cache& cache, PlanControllerOptions options)
    : impl_(std::make_unique<internal::PlanControllerImpl>(std::move(executor), client, cache,
                                                           std::move(options))) {}

PlanController::~PlanController() = default;

asio::awaitable<Result<void>> PlanController::start() { co_return co_await impl_->start(); }

asio::awaitable<void> PlanController::stop() { co_await impl_->stop(); }

std::vector<MaintenancePlan> PlanController::plans() const { return impl_->plans(); }

}  // namespace nmo::op::fleet
