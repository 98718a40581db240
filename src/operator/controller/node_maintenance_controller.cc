#include "operator/controller/node_maintenance_controller.h"

#include <set>
#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/json.hpp>
#include <boost/system/error_code.hpp>

#include "kube/api/resource.h"
#include "operator/controller/internal/controller_impl.h"
#include "operator/gates/etcd_quorum.h"

namespace nmo::op {
namespace internal {
namespace {

// How long stop() lets reconciles in flight finish, and Events drain.
constexpr std::chrono::seconds kStopGrace{10};
constexpr std::chrono::seconds kEventFlushDeadline{5};
// How long a stopping controller lets its evictions in flight finish: one cut off after the API
// server granted it leaves a disruption its budget counts for two minutes (docs/design.md §2.4).
constexpr std::chrono::seconds kEvictionFinishDeadline{5};

// The name of upstream medik8s NMO's validating webhook.
constexpr std::string_view kUpstreamWebhook = "vnodemaintenance.kb.io";

// The string at a JSON pointer, or "" when absent.
std::string text_at(const boost::json::value& object, std::string_view pointer) {
  boost::system::error_code ec;
  const boost::json::value* found = object.find_pointer(pointer, ec);
  return found != nullptr && found->is_string() ? std::string(found->as_string()) : std::string();
}

std::string name_of(const NodeMaintenance* before, const NodeMaintenance* after) {
  return after != nullptr ? after->meta.name : before->meta.name;
}

}  // namespace

ControllerImpl::ControllerImpl(asio::any_io_executor executor, kube::Client& client,
                               runtime::Cache& cache, OperatorOptions options, const Clock& clock)
    : executor_(std::move(executor)),
      client_(client),
      options_(std::move(options)),
      clock_(clock),
      logger_(log::root().with({{"controller", "nodemaintenance"}})),
      cache_(cache),
      view_(cache_, options_, wakeups()),
      recorder_(executor_, options_.events_client != nullptr ? *options_.events_client : client_,
                std::string(kEventComponent), options_.identity, clock_),
      controller_(
          executor_, "nodemaintenance",
          [this](std::string key) {
            // The test hook of OperatorOptions::wedge_reconcile_of, kept out of reconcile().
            if (!options_.wedge_reconcile_of.empty() && key == options_.wedge_reconcile_of) {
              return wedged(std::move(key));
            }
            return reconcile(std::move(key));
          },
          runtime::ControllerOptions{.workers = options_.workers,
                                     .metrics = options_.metrics != nullptr
                                                    ? options_.metrics->controller_metrics(
                                                          "nodemaintenance", options_.workers)
                                                    : nullptr},
          clock_),
      registry_(options_.etcd_quorum_stable_for),
      evictions_(
          executor_, client_, registry_, options_, clock_,
          [this](const kube::Pod& pod) { return view_.covering_budgets(pod); },
          [this](const std::string& name) { controller_.enqueue(name); }),
      kubevirt_(client_, cache_, clock_,
                KubeVirtReader::Wakeups{
                    .vmi_changed = [this](const std::string& node) { enqueue_node(node); },
                    .migration_changed =
                        [this](const std::string& owner) {
                          for (const auto& nm : view_.maintenances()) {
                            if (nm->meta.uid == owner) controller_.enqueue(nm->meta.name);
                          }
                        }}) {
  if (options_.metrics != nullptr) {
    if (auto hooks = options_.metrics->queue_metrics("nodemaintenance")) {
      controller_.queue().set_metrics(std::move(hooks));
    }
  }
  leases_ = std::make_unique<LeaseKeeper>(client_, options_, logger_, view_.node_lease_store(),
                                          view_.slot_store(), view_.node_store());
}

ClusterView::Wakeups ControllerImpl::wakeups() {
  return ClusterView::Wakeups{
      .maintenance_changed =
          [this](const NodeMaintenance* before, const NodeMaintenance* after) {
            controller_.enqueue(name_of(before, after));
            // A new maintenance may be older than a sibling already judged a duplicate.
            if (before == nullptr && after != nullptr) enqueue_node(after->spec.node_name);
            // A maintenance that ends or changes phase may free a slot or change who is oldest.
            if (after == nullptr || before == nullptr ||
                before->status.phase != after->status.phase ||
                after->meta.deletion_timestamp.has_value()) {
              enqueue_waiting();
            }
          },
      .node_changed =
          [this](const kube::Node& node) {
            enqueue_node(node.meta.name);
            // The etcd quorum gate reads the control-plane nodes' readiness.
            if (options_.etcd_quorum_check && is_control_plane(node)) enqueue_waiting();
          },
      .pods_changed = [this](const std::string& node) { enqueue_node(node); },
      .node_lease_changed =
          [this](const std::string& lease_name) {
            // The maintenance of the lease's node keeps its lease (docs/design.md §3.1); waiting
            // ones may go.
            for (const auto& nm : view_.maintenances_with_lease(lease_name)) {
              controller_.enqueue(nm->meta.name);
            }
            enqueue_waiting();
            controller_.enqueue(std::string(kHousekeepingKey));
          },
      .gates_changed = [this] { enqueue_waiting(); },
      .budget_changed =
          [this](const kube::PodDisruptionBudget& budget) { evictions_.budget_changed(budget); },
  };
}

ControllerImpl::~ControllerImpl() = default;

asio::awaitable<Result<runtime::ReconcileAction>> ControllerImpl::wedged(std::string key) {
  logger_.warn("test hook: this reconcile never finishes", {{"nodemaintenance", key}});
  asio::steady_timer forever(executor_, asio::steady_timer::time_point::max());
  boost::system::error_code ec;
  co_await forever.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return Error(ErrorCode::kCancelled, "the wedged reconcile was cancelled");
}

asio::awaitable<Result<void>> ControllerImpl::start() {
  if (options_.etcd_quorum_check) {
    // OpenShift (config.openshift.io served) reports etcd health through its guard PDB; other
    // clusters through the etcd mirror pods (docs/design.md §2.2).
    const std::string openshift_path(kOpenShiftApiGroupPath);
    auto openshift = co_await client_.get_json(openshift_path);
    if (openshift) {
      view_.watch_openshift_guard();
    } else if (!is_not_found(openshift.error())) {
      co_return Error(openshift.error().code,
                      "cannot tell whether this is OpenShift: " + openshift.error().describe());
    }
    logger_.info("etcd quorum check",
                 {{"source", view_.openshift() ? "openshift guard PDB" : "etcd mirror pods"}});
  }
  recorder_.start();

  const std::chrono::milliseconds timeout = kSyncTimeout;
  NMO_CO_TRY(co_await cache_.wait_synced(view_.informers(), timeout));
  co_await warn_about_upstream();
  controller_.enqueue(std::string(kHousekeepingKey));
  controller_.start();
  ready_ = true;
  logger_.info("controller started",
               {{"maintenances", view_.maintenances().size()},
                {"max_parallel_maintenances", options_.max_parallel_maintenances}});
  co_return Result<void>();
}

asio::awaitable<void> ControllerImpl::stop() {
  if (stopped_) co_return;
  stopped_ = true;
  ready_ = false;
  const std::chrono::nanoseconds grace = kStopGrace;
  co_await controller_.stop(grace);
  co_await evictions_.finish(kEvictionFinishDeadline);
  for (const auto& [name, memory] : registry_.memories()) *memory.alive = false;
  co_await recorder_.stop(kEventFlushDeadline);
  // The shared informers stop with the cache; the pod informers go when nobody holds them.
  view_.release_pod_watches();
  logger_.info("controller stopped");
}

asio::awaitable<void> ControllerImpl::warn_about_upstream() {
  // Upstream's validating webhook would still judge every NodeMaintenance (docs/design.md §2.8).
  const std::string hooks_path =
      "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
  auto hooks = co_await client_.get_json(hooks_path);
  if (!hooks) {
    logger_.debug(1, "cannot look for upstream's webhook", {{"error", hooks.error().describe()}});
  } else if (const auto* items = hooks->as_object().if_contains("items");
             items != nullptr && items->is_array()) {
    for (const auto& item : items->as_array()) {
      const auto* webhooks = item.as_object().if_contains("webhooks");
      if (webhooks == nullptr || !webhooks->is_array()) continue;
      for (const auto& webhook : webhooks->as_array()) {
        const auto* name = webhook.as_object().if_contains("name");
        if (name != nullptr && name->is_string() && name->as_string() == kUpstreamWebhook) {
          logger_.warn(
              "upstream medik8s NMO's admission webhook is still installed; remove it, or it "
              "keeps judging NodeMaintenances with upstream's rules",
              {{"webhook", std::string(kUpstreamWebhook)},
               {"configuration", text_at(item, "/metadata/name")}});
        }
      }
    }
  }
  // Upstream's Deployment carries the label key `node-maintenance-operator`; ours does not. In
  // the same namespace both would compete for the same leader Lease.
  const std::string deployments_path =
      "/apis/apps/v1/deployments?labelSelector=node-maintenance-operator";
  auto deployments = co_await client_.get_json(deployments_path);
  if (!deployments) {
    logger_.debug(1, "cannot look for upstream's Deployment",
                  {{"error", deployments.error().describe()}});
  } else if (const auto* items = deployments->as_object().if_contains("items");
             items != nullptr && items->is_array()) {
    for (const auto& item : items->as_array()) {
      logger_.warn(
          "upstream medik8s NMO's Deployment is still running; stop it before this operator "
          "takes over its NodeMaintenances",
          {{"deployment",
            text_at(item, "/metadata/namespace") + "/" + text_at(item, "/metadata/name")}});
    }
  }
}

void ControllerImpl::enqueue_node(const std::string& node) {
  for (const auto& nm : view_.maintenances_of_node(node)) {
    controller_.enqueue(nm->meta.name);
  }
}

void ControllerImpl::enqueue_waiting() {
  for (const auto& nm : view_.maintenances()) {
    const bool waiting = !nm->status.phase.has_value() || *nm->status.phase == Phase::kPending;
    if (waiting || nm->meta.deletion_timestamp.has_value()) controller_.enqueue(nm->meta.name);
  }
}

std::vector<MaintenanceView> ControllerImpl::maintenances() const {
  std::vector<MaintenanceView> views;
  if (!ready_) return views;
  for (const auto& nm : view_.maintenances()) {
    MaintenanceView view{.name = nm->meta.name, .node = nm->spec.node_name};
    const NodeMaintenanceStatus* status = &believed_status(*nm);
    view.phase = status->phase;
    view.drain_progress = status->drain_progress;
    view.pending_pods = static_cast<std::int64_t>(status->pending_pods.size());
    std::set<std::string> blocked;
    if (status->phase == Phase::kPending) {
      if (const Condition* gate = find_condition(status->conditions, kConditionBlocked);
          gate != nullptr && gate->status == ConditionStatus::kTrue) {
        if (gate->reason == kReasonEtcdQuorum) blocked.emplace(events::kBlockedByEtcdQuorum);
        if (gate->reason == kReasonWaitingForLease)
          blocked.emplace(events::kBlockedByNodeHealthCheck);
      }
    }
    if (status->phase == Phase::kRunning) {
      for (const PendingPodRef& ref : status->pending_pods_refs) {
        if (!ref.reason) continue;
        switch (*ref.reason) {
          case PendingPodReason::kBlockedByPdb:
          case PendingPodReason::kEvictionDeferred:
          case PendingPodReason::kMultiplePdbs:
          case PendingPodReason::kNamespaceTerminating:
          case PendingPodReason::kMigratingVm:
          case PendingPodReason::kVmWouldShutDown:
          case PendingPodReason::kVmNotMigratable:
          case PendingPodReason::kHeld:
            blocked.insert(std::string(to_string(*ref.reason)));
            break;
          case PendingPodReason::kError:
            blocked.emplace(events::kDrainError);
            break;
          case PendingPodReason::kEvicting:
          case PendingPodReason::kWaitingForTermination:
            break;
        }
      }
    }
    view.blocked.assign(blocked.begin(), blocked.end());
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace internal

NodeMaintenanceController::NodeMaintenanceController(asio::any_io_executor executor,
                                                     kube::Client& client, runtime::Cache& cache,
                                                     OperatorOptions options, const Clock& clock)
    : impl_(std::make_unique<internal::ControllerImpl>(std::move(executor), client, cache,
                                                       std::move(options), clock)) {}

NodeMaintenanceController::~NodeMaintenanceController() = default;

asio::awaitable<Result<void>> NodeMaintenanceController::start() {
  co_return co_await impl_->start();
}

asio::awaitable<void> NodeMaintenanceController::stop() { co_await impl_->stop(); }

bool NodeMaintenanceController::ready() const { return impl_->ready(); }

std::optional<std::string> NodeMaintenanceController::lease_problem() const {
  return impl_->lease_problem();
}

bool NodeMaintenanceController::healthy(std::chrono::nanoseconds max_stall) const {
  return impl_->healthy(max_stall);
}

int NodeMaintenanceController::active_workers() const { return impl_->active_workers(); }

std::vector<MaintenanceView> NodeMaintenanceController::maintenances() const {
  return impl_->maintenances();
}

}  // namespace nmo::op
