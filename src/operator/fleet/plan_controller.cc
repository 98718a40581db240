#include "operator/fleet/plan_controller.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
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
#include "operator/gates/node_lease.h"
#include "operator/kubevirt/vm_policy.h"
#include "operator/node/lifecycle_conditions.h"
#include "runtime/controller.h"
#include "runtime/event_recorder.h"
#include "runtime/finalizer.h"
#include "runtime/reflector.h"
#include "runtime/store.h"

namespace nmo::op::fleet {
namespace internal {

namespace {

namespace json = boost::json;

// How often a cluster without the MaintenancePlan API is asked again.
constexpr std::chrono::minutes kApiRecheck{1};
// How long stop() lets a reconcile in flight finish, and the Events be written.
constexpr std::chrono::seconds kStopGrace{10};

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

// The NodeMaintenance carries the plan's uid.
bool carries_uid(const kube::ObjectMeta& meta, const std::string& uid) {
  const std::string* carried = meta.annotations.find(kPlanUidAnnotation);
  return carried != nullptr && !uid.empty() && *carried == uid;
}

}  // namespace

class PlanControllerImpl {
 public:
  PlanControllerImpl(asio::any_io_executor executor, kube::Client& client,
                     PlanControllerOptions options)
      : executor_(std::move(executor)),
        client_(client),
        options_(std::move(options)),
        logger_(log::root().with({{"controller", "maintenanceplan"}})),
        plans_(std::make_shared<runtime::Store<MaintenancePlan>>()),
        plan_maintenances_(std::make_shared<runtime::Store<NodeMaintenance>>()),
        recorder_(executor_, options_.events_client != nullptr ? *options_.events_client : client_,
                  std::string(kEventComponent), options_.identity),
        controller_(
            executor_, "maintenanceplan",
            [this](std::string key) { return reconcile(std::move(key)); },
            runtime::ControllerOptions{.workers = 1}),
        plan_reflector_(executor_, client_, "", {}, plans_),
        maintenance_reflector_(executor_, client_, "",
                               kube::ListOptions{.label_selector = std::string(kPlanLabel)},
                               plan_maintenances_),
        timer_(executor_),
        run_ended_(executor_, asio::steady_timer::time_point::max()) {
    plan_reflector_.on_change([this](const MaintenancePlan*, const MaintenancePlan* now) {
      if (now != nullptr) {
        controller_.enqueue(now->meta.name);
      }
    });
    maintenance_reflector_.on_change(
        [this](const NodeMaintenance* before, const NodeMaintenance* now) {
          const NodeMaintenance* seen = now != nullptr ? now : before;
          if (const std::string* plan = seen->meta.labels.find(kPlanLabel)) {
            controller_.enqueue(*plan);
          }
        });
  }

  asio::awaitable<void> run() {
    // What the last failed probe met, said once until it changes (an API not served, RBAC
    // without MaintenancePlans such as upstream NMO's roles, or a passing error).
    std::optional<ErrorCode> said;
    while (!stopping_) {
      kube::ListOptions probe;
      probe.limit = 1;
      auto served = co_await client_.list<MaintenancePlan>("", probe);
      if (served.has_value()) {
        break;
      }
      const ErrorCode code = served.error().code;
      if (said != code) {
        logger_.info(code == ErrorCode::kNotFound
                         ? "the MaintenancePlan API is not served (install "
                           "deploy/crd/nodemaintenance.medik8s.io_maintenanceplans.yaml); plans "
                           "are off until it is"
                     : code == ErrorCode::kForbidden
                         ? "listing MaintenancePlans is forbidden (apply deploy/rbac); plans are "
                           "off until it is allowed"
                         : "could not list MaintenancePlans; trying again",
                     {{"error", served.error().message}});
        said = code;
      }
      timer_.expires_after(kApiRecheck);
      boost::system::error_code ignored;
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    if (!stopping_) {
      recorder_.start();
      plan_reflector_.start();
      maintenance_reflector_.start();
      controller_.start();
      started_ = true;
      logger_.info("watching MaintenancePlans");
    }
    running_ = false;
    run_ended_.cancel();
  }

  asio::awaitable<void> stop() {
    stopping_ = true;
    timer_.cancel();
    if (running_) {
      // run() cancels this timer when it returns; it never expires by itself.
      boost::system::error_code ignored;
      co_await run_ended_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    if (started_) {
      co_await controller_.stop(kStopGrace);
      co_await plan_reflector_.stop();
      co_await maintenance_reflector_.stop();
      co_await recorder_.stop(kStopGrace);
      started_ = false;
    }
  }

  void mark_running() { running_ = true; }

  std::vector<MaintenancePlan> plans() const {
    std::vector<MaintenancePlan> out;
    if (!started_) return out;
    for (const auto& plan : plans_->list()) out.push_back(*plan);
    return out;
  }

 private:
  asio::awaitable<Result<runtime::ReconcileAction>> reconcile(std::string name);
  asio::awaitable<Result<World>> read_world(const MaintenancePlan& plan);
  asio::awaitable<Result<void>> drop_owner_references(const MaintenancePlan& plan,
                                                      const std::vector<std::string>& names);
  asio::awaitable<Result<void>> load_budgets();
  asio::awaitable<Result<void>> read_vms(const MaintenancePlan& plan, World& world);
  asio::awaitable<Result<void>> read_warnings(const MaintenancePlan& plan, World& world);
  asio::awaitable<Result<void>> read_leases(const MaintenancePlan& plan, World& world);
  asio::awaitable<Result<void>> record_covered(PlanNodeStatus& entry);
  asio::awaitable<void> create_maintenances(const MaintenancePlan& plan, Decision& decision);
  asio::awaitable<Result<void>> sync_planned(const MaintenancePlan& plan, const Decision& decision);
  asio::awaitable<Result<void>> carry_out(const MaintenancePlan& plan, Decision& decision);
  // A JSON merge patch of the NodeMaintenance's metadata; one already gone is no error.
  asio::awaitable<Result<void>> patch_metadata(std::string maintenance,
                                               boost::json::object metadata);

  asio::any_io_executor executor_;
  kube::Client& client_;
  PlanControllerOptions options_;
  log::Logger logger_;
  std::shared_ptr<runtime::Store<MaintenancePlan>> plans_;
  std::shared_ptr<runtime::Store<NodeMaintenance>> plan_maintenances_;
  runtime::EventRecorder recorder_;
  runtime::Controller controller_;
  runtime::Reflector<MaintenancePlan> plan_reflector_;
  runtime::Reflector<NodeMaintenance> maintenance_reflector_;
  asio::steady_timer timer_;
  asio::steady_timer run_ended_;
  // Every PodDisruptionBudget, listed at most once per reconcile (for the health gate and for the
  // budgets covering a node that starts); reset when a reconcile begins.
  std::optional<std::vector<kube::PodDisruptionBudget>> budgets_;
  // The plans as this controller last wrote them, by name, with the resourceVersion each write
  // replaced: until the watch delivers the write, the store still shows that older version, and
  // deciding from it would repeat the last decision's Events (and its finalizer removal).
  std::map<std::string, std::pair<std::string, MaintenancePlan>, std::less<>> written_;
  // The nodes of the plan in reconcile (one worker), as read_world() listed them, by name: what
  // MaintenancePlanned is converged from without another read.
  std::map<std::string, kube::Node, std::less<>> nodes_;
  bool said_events_forbidden_ = false;
  bool said_node_status_forbidden_ = false;
  bool stopping_ = false;
  bool running_ = false;
  bool started_ = false;
};

asio::awaitable<Result<World>> PlanControllerImpl::read_world(const MaintenancePlan& plan) {
  World world;
  world.now = kube::wall_now();
  // Nodes: by the selector on the server, and whatever else the plan names.
  std::set<std::string, std::less<>> wanted(plan.spec.nodes.begin(), plan.spec.nodes.end());
  for (const PlanNodeStatus& entry : plan.status.nodes) {
    wanted.insert(entry.name);
  }
  kube::ListOptions node_options;
  if (plan.spec.node_selector.has_value()) {
    node_options.label_selector = plan.spec.node_selector->to_query();
  }
  // Served from the API server's watch cache: the plan looks every few seconds.
  node_options.resource_version = "0";
  auto nodes = co_await client_.list_all<kube::Node>("", node_options);
  if (!nodes.has_value()) {
    co_return nodes.error();
  }
  const auto facts_of = [](const kube::Node& node) {
    NodeFacts facts;
    facts.name = node.meta.name;
    facts.ready = node.is_ready();
    facts.unschedulable = node.unschedulable;
    facts.control_plane = node.meta.labels.contains(kControlPlaneLabel);
    if (const std::string* zone = node.meta.labels.find(kZoneLabel)) {
      facts.zone = *zone;
    }
    facts.boot_id = node.boot_id;
    return facts;
  };
  const bool by_selector = plan.spec.node_selector.has_value();
  nodes_.clear();
  for (kube::Node& node : nodes->items) {
    if (by_selector || wanted.contains(node.meta.name)) {
      world.nodes.push_back(facts_of(node));
      wanted.erase(node.meta.name);
      std::string name = node.meta.name;
      nodes_.emplace(std::move(name), std::move(node));
    }
  }
  if (by_selector) {
    // Nodes of the plan that no longer match its selector: still the plan's.
    for (const std::string& name : wanted) {
      auto node = co_await client_.get<kube::Node>("", name);
      if (node.has_value()) {
        world.nodes.push_back(facts_of(*node));
        nodes_.emplace(name, std::move(*node));
      } else if (node.error().code != ErrorCode::kNotFound) {
        co_return node.error();
      }
    }
  }
  const kube::ListOptions every;
  auto maintenances = co_await client_.list_all<NodeMaintenance>("", every);
  if (!maintenances.has_value()) {
    co_return maintenances.error();
  }
  std::vector<std::string> referenced;
  for (const NodeMaintenance& maintenance : maintenances->items) {
    MaintenanceFacts facts;
    facts.name = maintenance.meta.name;
    facts.node = maintenance.spec.node_name;
    facts.owned = carries_uid(maintenance.meta, plan.meta.uid);
    if (owner_referenced(maintenance.meta, plan.meta.uid)) {
      facts.owned = true;
      referenced.push_back(maintenance.meta.name);
    }
    facts.deleting = maintenance.meta.deletion_timestamp.has_value();
    facts.phase = maintenance.status.phase;
    facts.last_error = maintenance.status.last_error;
    facts.pending_pods = static_cast<std::int64_t>(maintenance.status.pending_pods.size());
    facts.done_marked = maintenance.meta.annotations.contains(kDoneAnnotation);
    if (const std::string* hold = maintenance.meta.annotations.find(kHoldAnnotation)) {
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
    auto loaded = co_await load_budgets();
    if (!loaded.has_value()) {
      co_return loaded.error();
    }
    for (const kube::PodDisruptionBudget& budget : *budgets_) {
      world.budgets.push_back({budget.meta.namespace_ + "/" + budget.meta.name,
                               budget.current_healthy, budget.desired_healthy});
    }
  }
  auto vms = co_await read_vms(plan, world);
  if (!vms.has_value()) {
    co_return vms.error();
  }
  auto warnings = co_await read_warnings(plan, world);
  if (!warnings.has_value()) {
    co_return warnings.error();
  }
  auto leases = co_await read_leases(plan, world);
  if (!leases.has_value()) {
    co_return leases.error();
  }
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

asio::awaitable<Result<void>> PlanControllerImpl::load_budgets() {
  if (budgets_.has_value()) {
    co_return Result<void>{};
  }
  const kube::ListOptions every;
  auto budgets = co_await client_.list_all<kube::PodDisruptionBudget>("", every);
  if (!budgets.has_value()) {
    co_return budgets.error();
  }
  budgets_ = std::move(budgets->items);
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
      // Named arguments: GCC 12 may destroy temporaries passed to a coroutine twice.
      std::string namespace_ = key.substr(0, slash);
      std::string vm_name = key.substr(slash + 1);
      auto vmi = co_await client_.get<Vmi>(namespace_, vm_name);
      if (!vmi.has_value()) {
        // Deleted since, or KubeVirt no longer served: nothing to wait for.
        if (vmi.error().code == ErrorCode::kNotFound) {
          continue;
        }
        co_return vmi.error();
      }
      world.vms.push_back({key, vmi->phase, vmi->migrating});
    }
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> PlanControllerImpl::read_warnings(const MaintenancePlan& plan,
                                                                World& world) {
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
      kube::ListOptions options;
      options.field_selector = "involvedObject.name=" + about + ",type=Warning";
      std::string events_namespace(runtime::kClusterScopedEventNamespace);
      auto events = co_await client_.list_all<kube::Event>(events_namespace, options);
      if (!events.has_value() && events.error().code == ErrorCode::kForbidden) {
        // An install from before this check (no `list` on events in its Role): the gate goes
        // without it rather than stopping the plan.
        if (!said_events_forbidden_) {
          logger_.warn(
              "cannot list Events; the health gate does not look at the operator's "
              "Warnings (apply deploy/rbac/event_role.yaml)",
              {{"error", events.error().message}});
          said_events_forbidden_ = true;
        }
        co_return Result<void>{};
      }
      if (!events.has_value()) {
        co_return events.error();
      }
      for (kube::Event& event : events->items) {
        const bool ours = event.component == kEventComponent;
        const bool about_it = (event.involved.kind == "Node" && about == entry.name) ||
                              (event.involved.kind == kKind && about == entry.maintenance);
        if (ours && about_it && event.last_seen.has_value()) {
          world.warnings.push_back(
              {entry.name, std::move(event.reason), std::move(event.message), *event.last_seen});
        }
      }
    }
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> PlanControllerImpl::read_leases(const MaintenancePlan& plan,
                                                              World& world) {
  // maxUnavailable counts every node of the plan whose Lease someone else holds, and the health
  // gate waits while someone else holds a node's (docs/design.md §10). One LIST: the node lease
  // Role allows no GET, and the namespace holds a Lease only per node in maintenance or
  // remediation.
  const bool needed = plan.spec.max_unavailable.has_value() ||
                      std::any_of(plan.status.nodes.begin(), plan.status.nodes.end(),
                                  [](const auto& entry) { return gate_phase(entry.phase); });
  if (!needed) {
    co_return Result<void>{};
  }
  const kube::ListOptions every;
  auto leases = co_await client_.list_all<kube::Lease>(options_.lease_namespace, every);
  if (!leases.has_value() && leases.error().code != ErrorCode::kNotFound) {
    co_return leases.error();
  }
  std::map<std::string, const kube::Lease*, std::less<>> by_name;
  if (leases.has_value()) {
    for (const kube::Lease& lease : leases->items) {
      by_name[lease.meta.name] = &lease;
    }
  }
  for (const NodeFacts& node : world.nodes) {
    const auto lease = by_name.find(node_lease_name(node.name));
    if (lease != by_name.end() &&
        classify_node_lease(*lease->second, world.now) == NodeLeaseState::kHeldByOther) {
      world.leased_by_others[node.name] = lease_holder(*lease->second);
    }
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> PlanControllerImpl::record_covered(PlanNodeStatus& entry) {
  kube::ListOptions on_node;
  on_node.field_selector = "spec.nodeName=" + entry.name;
  auto pods = co_await client_.list_all<kube::Pod>("", on_node);
  if (!pods.has_value()) {
    co_return pods.error();
  }
  auto loaded = co_await load_budgets();
  if (!loaded.has_value()) {
    co_return loaded.error();
  }
  entry.budgets.clear();
  for (const kube::PodDisruptionBudget& budget : *budgets_) {
    const bool covers = std::any_of(pods->items.begin(), pods->items.end(), [&](const auto& pod) {
      return pod.meta.namespace_ == budget.meta.namespace_ && budget.selects(pod.meta.labels);
    });
    if (covers) {
      entry.budgets.push_back(budget.meta.namespace_ + "/" + budget.meta.name);
    }
  }
  entry.vms.clear();
  for (const kube::Pod& pod : pods->items) {
    const std::string vmi = vmi_name(pod);
    if (is_virt_launcher(pod) && !vmi.empty()) {
      entry.vms.push_back(pod.meta.namespace_ + "/" + vmi);
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
    json::object object{
        {"apiVersion", kApiVersion},
        {"kind", kKind},
        {"metadata",
         json::object{{"name", start.maintenance},
                      {"labels", json::object{{kPlanLabel, plan.meta.name}}},
                      {"annotations", json::object{{kPlanUidAnnotation, plan.meta.uid}}}}},
        {"spec",
         json::object{{"nodeName", start.node},
                      {"reason", plan.spec.reason.empty() ? "MaintenancePlan " + plan.meta.name
                                                          : plan.spec.reason}}}};
    const std::string path = kube::collection_path<NodeMaintenance>("");
    json::value manifest(std::move(object));
    const kube::WriteOptions write;
    auto created = co_await client_.create(path, std::move(manifest), write);
    if (created.has_value()) {
      continue;
    }
    std::string reason = "NodeNotStarted";
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
      reason = "NameCollision";
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
      return event.reason == "NodeStarted" && event.node == start.node;
    });
    decision.events.push_back({true, reason, "node " + start.node + ": " + why, start.node});
  }
}

asio::awaitable<Result<void>> PlanControllerImpl::sync_planned(const MaintenancePlan& plan,
                                                               const Decision& decision) {
  // MaintenancePlanned on the nodes the plan will take (docs/design.md §2.10), from the status
  // this reconcile writes: True on its Waiting entries while the plan lives and is not finished,
  // absent everywhere else. Level-triggered: every reconcile converges every node of the plan.
  const bool live = options_.node_lifecycle_conditions && !decision.remove_finalizer &&
                    !plan.meta.deletion_timestamp.has_value() &&
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
  for (const auto& [name, cached] : nodes_) {
    std::optional<std::string> message;
    if (const auto found = planned.find(name); found != planned.end()) message = found->second;
    // The listed node decides first (no request while it already says it), then a fresh read:
    // the list comes from the watch cache and its resourceVersion may be behind.
    if (!planned_patch(cached, plan.meta.name, message, kube::wall_now())) continue;
    auto current = co_await client_.get<kube::Node>("", name);
    if (!current.has_value()) {
      if (current.error().code == ErrorCode::kNotFound) continue;
      co_return current.error();
    }
    const auto patch = planned_patch(*current, plan.meta.name, message, kube::wall_now());
    if (!patch) continue;
    const std::string path = kube::object_path<kube::Node>("", name) + "/status";
    std::string body = json::serialize(*patch);
    const kube::WriteOptions write;
    auto written =
        co_await client_.patch(path, kube::PatchType::kStrategicMerge, std::move(body), write);
    if (written.has_value() || written.error().code == ErrorCode::kNotFound) continue;
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
    co_return Result<void>{};
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> PlanControllerImpl::patch_metadata(std::string maintenance,
                                                                 json::object metadata) {
  const json::object patch{{"metadata", std::move(metadata)}};
  const std::string path = kube::object_path<NodeMaintenance>("", maintenance);
  std::string body = json::serialize(patch);
  const kube::WriteOptions write;
  auto patched = co_await client_.patch(path, kube::PatchType::kMergePatch, std::move(body), write);
  // A maintenance deleted meanwhile has nothing left to change.
  if (!patched.has_value() && patched.error().code != ErrorCode::kNotFound) {
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
    if (!removed.has_value() && removed.error().code != ErrorCode::kNotFound) {
      co_return removed.error();
    }
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
  }
  for (PlanEvent& event : decision.events) {
    recorder_.record(plan_ref(plan), {.type = event.warning ? runtime::EventType::kWarning
                                                            : runtime::EventType::kNormal,
                                      .reason = std::move(event.reason),
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
  const auto snapshot = plans_->get(name);
  if (snapshot == nullptr) {
    written_.erase(name);
    co_return runtime::ReconcileAction::done();
  }
  MaintenancePlan plan = *snapshot;
  if (const auto mine = written_.find(name); mine != written_.end()) {
    if (mine->second.first == plan.meta.resource_version) {
      plan = mine->second.second;  // the store has not seen our last write yet
    } else {
      written_.erase(mine);
    }
  }
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
  budgets_.reset();
  auto world = co_await read_world(plan);
  if (!world.has_value()) {
    co_return world.error();
  }
  world->progress_poll = options_.poll;
  Decision decision = decide(plan, *world);
  // Before carry_out(): a deleted plan's conditions go before its finalizer does.
  auto planned = co_await sync_planned(plan, decision);
  if (!planned.has_value()) {
    co_return planned.error();
  }
  auto done = co_await carry_out(plan, decision);
  if (!done.has_value()) {
    co_return done.error();
  }
  MaintenancePlan after = plan;
  after.status = decision.status;
  if (decision.remove_finalizer) {
    std::erase(after.meta.finalizers, std::string(kPlanFinalizer));
  }
  written_[name] = {snapshot->meta.resource_version, std::move(after)};
  if (decision.remove_finalizer) {
    co_return runtime::ReconcileAction::done();
  }
  co_return runtime::ReconcileAction::after(decision.requeue_after);
}

}  // namespace internal

PlanController::PlanController(asio::any_io_executor executor, kube::Client& client,
                               PlanControllerOptions options)
    : impl_(std::make_unique<internal::PlanControllerImpl>(std::move(executor), client,
                                                           std::move(options))) {}

PlanController::~PlanController() = default;

asio::awaitable<Result<void>> PlanController::start() {
  impl_->mark_running();
  asio::co_spawn(co_await asio::this_coro::executor, impl_->run(), asio::detached);
  co_return Result<void>{};
}

asio::awaitable<void> PlanController::stop() { co_await impl_->stop(); }

std::vector<MaintenancePlan> PlanController::plans() const { return impl_->plans(); }

}  // namespace nmo::op::fleet
