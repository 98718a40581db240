#include "operator/controller/operator.h"

#include <set>
#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/json.hpp>
#include <boost/system/error_code.hpp>

#include "kube/api/resource.h"
#include "operator/controller/internal/operator_impl.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"

namespace nmo::op {
namespace internal {
namespace {

// How long start() waits for each cache's first list.
constexpr std::chrono::seconds kSyncTimeout{60};
// How long stop() lets reconciles in flight finish, and Events drain.
constexpr std::chrono::seconds kStopGrace{10};
constexpr std::chrono::seconds kEventFlushDeadline{5};

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

OperatorImpl::OperatorImpl(asio::any_io_executor executor, kube::Client& client,
                           OperatorOptions options, const Clock& clock)
    : executor_(std::move(executor)),
      client_(client),
      options_(std::move(options)),
      clock_(clock),
      logger_(log::root().with({{"controller", "nodemaintenance"}})),
      maintenances_(std::make_shared<runtime::Store<NodeMaintenance>>()),
      node_leases_(std::make_shared<runtime::Store<kube::Lease>>()),
      slots_(std::make_shared<runtime::Store<kube::Lease>>()),
      etcd_pods_(std::make_shared<runtime::Store<kube::Pod>>()),
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
      quorum_(options_.etcd_quorum_stable_for) {
  if (options_.metrics != nullptr) {
    if (auto hooks = options_.metrics->queue_metrics("nodemaintenance")) {
      controller_.queue().set_metrics(std::move(hooks));
    }
  }
  maintenances_->add_index(std::string(kNodeIndex), [](const NodeMaintenance& nm) {
    return std::vector<std::string>{nm.spec.node_name};
  });
  // The inverse of node_lease_name(), which a hashed lease name cannot be turned back by.
  maintenances_->add_index(std::string(kLeaseIndex), [](const NodeMaintenance& nm) {
    return std::vector<std::string>{node_lease_name(nm.spec.node_name)};
  });
  // The watches this controller declares (the per-node ones come and go with the maintenances).
  watches_
      .add("the NodeMaintenance cache (is the CRD installed?)",
           std::make_unique<runtime::Reflector<NodeMaintenance>>(
               executor_, client_, "", kube::ListOptions{}, maintenances_, clock_))
      .on_change([this](const NodeMaintenance* before, const NodeMaintenance* after) {
        if (after != nullptr && !after->spec.node_name.empty()) watch_node(after->spec.node_name);
        controller_.enqueue(name_of(before, after));
        // A new maintenance may be older than a sibling already judged a duplicate.
        if (before == nullptr && after != nullptr) enqueue_node(after->spec.node_name);
        // A maintenance that ends or changes phase may free a slot or change who is oldest.
        if (after == nullptr || before == nullptr || before->status.phase != after->status.phase ||
            after->meta.deletion_timestamp.has_value()) {
          enqueue_waiting();
        }
        if (after == nullptr) prune_watches();
      });

  watches_
      .add("the Lease cache of namespace " + options_.lease_namespace,
           std::make_unique<runtime::Reflector<kube::Lease>>(
               executor_, client_, options_.lease_namespace, kube::ListOptions{}, node_leases_,
               clock_))
      .on_change([this](const kube::Lease* before, const kube::Lease* after) {
        // The maintenance of the lease's node keeps its lease (docs/design.md §3.1); waiting ones
        // may go.
        const std::string& lease_name = after != nullptr ? after->meta.name : before->meta.name;
        for (const auto& nm : maintenances_->by_index(kLeaseIndex, lease_name)) {
          controller_.enqueue(nm->meta.name);
        }
        enqueue_waiting();
        controller_.enqueue(std::string(kHousekeepingKey));
      });
  watches_
      .add("the Lease cache of namespace " + options_.namespace_,
           std::make_unique<runtime::Reflector<kube::Lease>>(
               executor_, client_, options_.namespace_,
               kube::ListOptions{.label_selector = std::string(kSlotLabel)}, slots_, clock_))
      .on_change([this](const kube::Lease*, const kube::Lease*) { enqueue_waiting(); });

  if (options_.etcd_quorum_check) {
    watches_
        .add("the etcd pod cache",
             std::make_unique<runtime::Reflector<kube::Pod>>(
                 executor_, client_, std::string(kEtcdNamespace),
                 kube::ListOptions{.label_selector = "component=etcd"}, etcd_pods_, clock_))
        .on_change([this](const kube::Pod*, const kube::Pod*) { enqueue_waiting(); });
    for (std::string_view label : {kControlPlaneLabel, kMasterLabel}) {
      auto store = std::make_shared<runtime::Store<kube::Node>>();
      watches_
          .add("the control-plane node cache (" + std::string(label) + ")",
               std::make_unique<runtime::Reflector<kube::Node>>(
                   executor_, client_, "", kube::ListOptions{.label_selector = std::string(label)},
                   store, clock_))
          .on_change([this](const kube::Node*, const kube::Node*) { enqueue_waiting(); });
      control_plane_nodes_.push_back(std::move(store));
    }
  }
}

OperatorImpl::~OperatorImpl() = default;

asio::awaitable<Result<runtime::ReconcileAction>> OperatorImpl::wedged(std::string key) {
  logger_.warn("test hook: this reconcile never finishes", {{"nodemaintenance", key}});
  asio::steady_timer forever(executor_, asio::steady_timer::time_point::max());
  boost::system::error_code ec;
  co_await forever.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return Error(ErrorCode::kCancelled, "the wedged reconcile was cancelled");
}

asio::awaitable<Result<void>> OperatorImpl::start() {
  watches_.start();
  if (options_.etcd_quorum_check) {
    // OpenShift (config.openshift.io served) reports etcd health through its guard PDB; other
    // clusters through the etcd mirror pods (docs/design.md §2.2).
    const std::string openshift_path(kOpenShiftApiGroupPath);
    auto openshift = co_await client_.get_json(openshift_path);
    if (openshift) {
      watch_openshift_guard();
    } else if (openshift.error().code != ErrorCode::kNotFound) {
      co_return Error(openshift.error().code,
                      "cannot tell whether this is OpenShift: " + openshift.error().describe());
    }
    logger_.info("etcd quorum check",
                 {{"source", guard_pdbs_ != nullptr ? "openshift guard PDB" : "etcd mirror pods"}});
  }
  recorder_.start();

  const std::chrono::milliseconds timeout = kSyncTimeout;
  NMO_CO_TRY(co_await watches_.wait_synced(timeout));
  co_await warn_about_upstream();
  controller_.enqueue(std::string(kHousekeepingKey));
  controller_.start();
  ready_ = true;
  logger_.info("controller started",
               {{"maintenances", maintenances_->size()},
                {"max_parallel_maintenances", options_.max_parallel_maintenances}});
  co_return Result<void>();
}

asio::awaitable<void> OperatorImpl::stop() {
  if (stopped_) co_return;
  stopped_ = true;
  ready_ = false;
  const std::chrono::nanoseconds grace = kStopGrace;
  co_await controller_.stop(grace);
  for (auto& [name, state] : maintenances_state_) *state.alive = false;
  co_await recorder_.stop(kEventFlushDeadline);
  co_await watches_.stop();
  for (auto& [name, watch] : node_watches_) {
    co_await watch.node->stop();
    if (watch.pods) co_await watch.pods->stop();
  }
  logger_.info("controller stopped");
}

asio::awaitable<void> OperatorImpl::warn_about_upstream() {
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

void OperatorImpl::watch_openshift_guard() {
  const std::string ns(kOpenShiftEtcdNamespace);
  guard_pdbs_ = std::make_shared<runtime::Store<kube::PodDisruptionBudget>>();
  guard_pods_ = std::make_shared<runtime::Store<kube::Pod>>();
  // Added after the set started, so each starts at once: the handler comes first.
  auto pdbs = std::make_unique<runtime::Reflector<kube::PodDisruptionBudget>>(
      executor_, client_, ns, kube::ListOptions{}, guard_pdbs_, clock_);
  pdbs->on_change([this](const kube::PodDisruptionBudget*, const kube::PodDisruptionBudget*) {
    enqueue_waiting();
  });
  watches_.add("the etcd guard PDB cache of " + ns, std::move(pdbs));
  auto pods = std::make_unique<runtime::Reflector<kube::Pod>>(
      executor_, client_, ns, kube::ListOptions{}, guard_pods_, clock_);
  pods->on_change([this](const kube::Pod*, const kube::Pod*) { enqueue_waiting(); });
  watches_.add("the etcd guard pod cache of " + ns, std::move(pods));
}

void OperatorImpl::watch_node(const std::string& node) {
  if (stopped_ || node_watches_.contains(node)) return;
  NodeWatch watch;
  watch.node = std::make_unique<runtime::Reflector<kube::Node>>(
      executor_, client_, "", kube::ListOptions{.field_selector = "metadata.name=" + node},
      std::make_shared<runtime::Store<kube::Node>>(), clock_);
  watch.node->on_change([this, node](const kube::Node*, const kube::Node*) { enqueue_node(node); });
  watch.node->start();
  node_watches_.emplace(node, std::move(watch));
}

asio::awaitable<Result<void>> OperatorImpl::watch_pods(std::string node) {
  auto found = node_watches_.find(node);
  if (found == node_watches_.end()) {
    watch_node(node);
    found = node_watches_.find(node);
    if (found == node_watches_.end()) co_return Error(ErrorCode::kCancelled, "stopping");
  }
  if (!found->second.pods) {
    auto pods = std::make_unique<runtime::Reflector<kube::Pod>>(
        executor_, client_, "", kube::ListOptions{.field_selector = "spec.nodeName=" + node},
        std::make_shared<runtime::Store<kube::Pod>>(), clock_);
    pods->on_change([this, node](const kube::Pod*, const kube::Pod*) { enqueue_node(node); });
    pods->start();
    found->second.pods = std::move(pods);
  }
  runtime::Reflector<kube::Pod>* pods = found->second.pods.get();
  const std::chrono::milliseconds timeout = kSyncTimeout;
  if (!co_await pods->wait_synced(timeout)) {
    co_return Error(ErrorCode::kTimeout, "the pods of node " + node + " did not sync");
  }
  co_return Result<void>();
}

void OperatorImpl::prune_watches() {
  for (auto it = node_watches_.begin(); it != node_watches_.end();) {
    if (!maintenances_->by_index(kNodeIndex, it->first).empty()) {
      ++it;
      continue;
    }
    // Stopping is asynchronous: the reflectors live on in the coroutine until they ended.
    auto watch = std::make_shared<NodeWatch>(std::move(it->second));
    it = node_watches_.erase(it);
    asio::co_spawn(
        executor_,
        [watch]() -> asio::awaitable<void> {
          co_await watch->node->stop();
          if (watch->pods) co_await watch->pods->stop();
        },
        asio::detached);
  }
}

void OperatorImpl::enqueue_node(const std::string& node) {
  for (const auto& nm : maintenances_->by_index(kNodeIndex, node)) {
    controller_.enqueue(nm->meta.name);
  }
}

void OperatorImpl::enqueue_waiting() {
  for (const auto& nm : maintenances_->list()) {
    const bool waiting = !nm->status.phase.has_value() || *nm->status.phase == Phase::kPending;
    if (waiting || nm->meta.deletion_timestamp.has_value()) controller_.enqueue(nm->meta.name);
  }
}

std::shared_ptr<const kube::Node> OperatorImpl::node(const std::string& name) const {
  auto found = node_watches_.find(name);
  if (found == node_watches_.end()) return nullptr;
  return found->second.node->store()->get(name);
}

bool OperatorImpl::node_synced(const std::string& name) const {
  auto found = node_watches_.find(name);
  return found != node_watches_.end() && found->second.node->synced();
}

std::vector<std::shared_ptr<const kube::Pod>> OperatorImpl::pods_on(const std::string& node) const {
  auto found = node_watches_.find(node);
  if (found == node_watches_.end() || !found->second.pods) return {};
  return found->second.pods->store()->list();
}

std::string OperatorImpl::node_lease_ref(const std::string& node) const {
  return options_.lease_namespace + "/" + node_lease_name(node);
}

std::optional<std::string> OperatorImpl::lease_node(const kube::Lease& lease) const {
  if (auto named = maintenances_->by_index(kLeaseIndex, lease.meta.name); !named.empty()) {
    return named.front()->spec.node_name;
  }
  return node_of_lease(lease);
}

std::shared_ptr<const kube::Lease> OperatorImpl::node_lease(const std::string& node) const {
  return node_leases_->get(options_.lease_namespace + "/" + node_lease_name(node));
}

std::shared_ptr<const kube::Lease> OperatorImpl::slot(const std::string& cr) const {
  return slots_->get(options_.namespace_ + "/" + slot_lease_name(cr));
}

std::vector<MaintenanceView> OperatorImpl::maintenances() const {
  std::vector<MaintenanceView> views;
  if (!ready_) return views;
  for (const auto& nm : maintenances_->list()) {
    MaintenanceView view{.name = nm->meta.name, .node = nm->spec.node_name};
    const NodeMaintenanceStatus* status = &believed_status(*nm);
    view.phase = status->phase;
    view.drain_progress = status->drain_progress;
    view.pending_pods = static_cast<std::int64_t>(status->pending_pods.size());
    std::set<std::string> blocked;
    if (status->phase == Phase::kPending) {
      if (const Condition* gate = find_condition(status->conditions, kConditionBlocked);
          gate != nullptr && gate->status == ConditionStatus::kTrue) {
        if (gate->reason == "EtcdQuorum") blocked.insert("BlockedByEtcdQuorum");
        if (gate->reason == "WaitingForLease") blocked.insert("BlockedByNodeHealthCheck");
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
            blocked.insert("DrainError");
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

Operator::Operator(asio::any_io_executor executor, kube::Client& client, OperatorOptions options,
                   const Clock& clock)
    : impl_(std::make_unique<internal::OperatorImpl>(std::move(executor), client,
                                                     std::move(options), clock)) {}

Operator::~Operator() = default;

asio::awaitable<Result<void>> Operator::start() { co_return co_await impl_->start(); }

asio::awaitable<void> Operator::stop() { co_await impl_->stop(); }

bool Operator::ready() const { return impl_->ready(); }

std::optional<std::string> Operator::lease_problem() const { return impl_->lease_problem(); }

bool Operator::healthy(std::chrono::nanoseconds max_stall) const {
  return impl_->healthy(max_stall);
}

int Operator::active_workers() const { return impl_->active_workers(); }

std::vector<MaintenanceView> Operator::maintenances() const { return impl_->maintenances(); }

}  // namespace nmo::op
