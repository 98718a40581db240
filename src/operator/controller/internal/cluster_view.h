// ClusterView: the cluster as the NodeMaintenance controller reads it, from the process's shared
// cache (runtime/cache.h): the NodeMaintenances (indexed by node and by node lease name), the
// nodes (indexed by control-plane role), the node leases and budget slot Leases, the
// PodDisruptionBudgets (indexed by namespace), where etcd health is read (the etcd member pods,
// or OpenShift's guard PDB and its pods), and the pods of each node a maintenance drains (one
// scoped informer per node, held while a NodeMaintenance names it). It declares those informers,
// hands out what it reads and never writes; what a change means is the controller's.
//
// The controller is told of changes through Wakeups, not by registering on the informers
// itself: the guard's and the pods' informers are declared later than the constructor (once
// OpenShift is known, once a drain needs a node's pods), so their handlers must be at hand
// then, and the informer types stay out of the controller.
//
// Threading: on the controller's one executor (controller_impl.h); the wake-ups run there too.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "http/asio.h"
#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "operator/api/node_maintenance.h"
#include "operator/controller/node_maintenance_controller.h"
#include "operator/gates/admission_gates.h"
#include "runtime/cache.h"
#include "runtime/reflector.h"
#include "runtime/store.h"

namespace nmo::op::internal {

// The indexes of the NodeMaintenance cache: by spec.nodeName, and by the name of that node's
// node lease; of the node cache: "true" for a control-plane node (either role label).
inline constexpr std::string_view kNodeIndex = "node";
inline constexpr std::string_view kLeaseIndex = "lease";
inline constexpr std::string_view kControlPlaneIndex = "control-plane";
// The index of the PodDisruptionBudget cache: by namespace.
inline constexpr std::string_view kNamespaceIndex = "namespace";
// How this controller's informers are named in errors ("... did not sync").
inline constexpr std::string_view kNodeCache = "the node cache";
inline constexpr std::string_view kPodDisruptionBudgetCache = "the PodDisruptionBudget cache";
// How long start() waits for the caches' first lists, and a drain for its node's pods.
inline constexpr std::chrono::seconds kSyncTimeout{60};

class ClusterView {
 public:
  using MaintenanceSnapshot = std::shared_ptr<const NodeMaintenance>;

  // Who to wake, and on what change.
  struct Wakeups {
    // A NodeMaintenance was created (`before` null), changed, or deleted (`after` null).
    std::function<void(const NodeMaintenance* before, const NodeMaintenance* after)>
        maintenance_changed;
    // A Node changed (as it is now, or as it was when deleted).
    std::function<void(const kube::Node& node)> node_changed;
    // A pod on `node` changed (only nodes whose pods are watched: watch_pods()).
    std::function<void(const std::string& node)> pods_changed;
    // The Lease `lease_name` of the lease namespace changed.
    std::function<void(const std::string& lease_name)> node_lease_changed;
    // Something only the gates of waiting maintenances read changed: a budget slot Lease, an
    // etcd member pod, OpenShift's etcd guard PDB or one of its pods.
    std::function<void()> gates_changed;
    // A PodDisruptionBudget was created or changed (as it is now).
    std::function<void(const kube::PodDisruptionBudget& budget)> budget_changed;
  };

  // Declares the informers in `cache` (the etcd member pods only with
  // options.etcd_quorum_check). `cache` and `options` must outlive the view.
  ClusterView(runtime::Cache& cache, const OperatorOptions& options, Wakeups wakeups);

  // The informers start() waits for before the first reconcile.
  [[nodiscard]] const std::vector<const runtime::internal::ReflectorLoop*>& informers() const {
    return informers_;
  }
  // OpenShift: declares the informers of the etcd guard PDB and its pods in openshift-etcd, read
  // from then on instead of the etcd member pods, and adds them to informers().
  void watch_openshift_guard();

  // ---- NodeMaintenances ----
  // The NodeMaintenance `name`, or null.
  [[nodiscard]] MaintenanceSnapshot maintenance(const std::string& name) const;
  [[nodiscard]] std::vector<MaintenanceSnapshot> maintenances() const;
  [[nodiscard]] std::vector<MaintenanceSnapshot> maintenances_of_node(
      const std::string& node) const;
  // Those whose node's node lease is named `lease_name` (node_lease_name(), which a hashed name
  // cannot be turned back by).
  [[nodiscard]] std::vector<MaintenanceSnapshot> maintenances_with_lease(
      const std::string& lease_name) const;

  // ---- Nodes and Leases ----
  // The Node `name`, or null.
  [[nodiscard]] std::shared_ptr<const kube::Node> node(const std::string& name) const;
  [[nodiscard]] bool nodes_synced() const;
  [[nodiscard]] std::vector<std::shared_ptr<const kube::Node>> control_plane_nodes() const;
  // Every Lease of the lease namespace.
  [[nodiscard]] std::vector<std::shared_ptr<const kube::Lease>> node_leases() const;
  // The node whose node lease `lease` is: the node of a NodeMaintenance whose lease name it is,
  // else what the Lease tells (node_of_lease()); std::nullopt for a Lease of another kind.
  [[nodiscard]] std::optional<std::string> lease_node(const kube::Lease& lease) const;
  // The stores LeaseKeeper reads (lease_keeper.h).
  [[nodiscard]] const std::shared_ptr<runtime::Store<kube::Lease>>& node_lease_store() const {
    return node_leases_;
  }
  [[nodiscard]] const std::shared_ptr<runtime::Store<kube::Lease>>& slot_store() const {
    return slots_;
  }
  [[nodiscard]] const std::shared_ptr<runtime::Store<kube::Node>>& node_store() const {
    return nodes_;
  }

  // ---- Pods and budgets ----
  // Holds the pod informer of `node` unless held already, and waits until it is synced.
  asio::awaitable<Result<void>> watch_pods(std::string node);
  // The pods on `node`; none until its pod informer is held and synced.
  [[nodiscard]] std::vector<std::shared_ptr<const kube::Pod>> pods_on(
      const std::string& node) const;
  // Lets go of the pod informers of nodes no NodeMaintenance names any more (done on every
  // NodeMaintenance deletion), or of all of them.
  void prune_pod_watches();
  void release_pod_watches();
  // The PodDisruptionBudgets covering `pod`.
  [[nodiscard]] std::vector<kube::PodDisruptionBudget> covering_budgets(const kube::Pod& pod) const;

  // ---- etcd ----
  // Whether etcd health is read from OpenShift's guard (watch_openshift_guard() was called).
  [[nodiscard]] bool openshift() const { return guard_pdbs_ != nullptr; }
  // Where etcd health is read: the control-plane nodes' readiness, and the guard PDBs and pods
  // on OpenShift, else the etcd member pods (none without options.etcd_quorum_check).
  [[nodiscard]] EtcdView etcd() const;

 private:
  void watch_maintenances();
  void watch_nodes_and_leases();

  runtime::Cache& cache_;
  const OperatorOptions& options_;
  Wakeups wakeups_;
  std::vector<const runtime::internal::ReflectorLoop*> informers_;
  std::shared_ptr<runtime::Store<NodeMaintenance>> maintenances_;
  // Every Node: one informer for all maintenances (and the plans), not one watch per node.
  std::shared_ptr<runtime::Store<kube::Node>> nodes_;
  std::shared_ptr<runtime::Store<kube::Lease>> node_leases_;
  std::shared_ptr<runtime::Store<kube::Lease>> slots_;
  std::shared_ptr<runtime::Store<kube::Pod>> etcd_pods_;
  // Every PodDisruptionBudget: which cover a refused pod (the Events' and status's messages).
  std::shared_ptr<runtime::Store<kube::PodDisruptionBudget>> budgets_;
  // OpenShift only (config.openshift.io served): the PDBs and pods of openshift-etcd.
  std::shared_ptr<runtime::Store<kube::PodDisruptionBudget>> guard_pdbs_;
  std::shared_ptr<runtime::Store<kube::Pod>> guard_pods_;
  // The pods of each node a maintenance drains, while a NodeMaintenance names the node.
  std::map<std::string, runtime::InformerHandle<kube::Pod>> pod_watches_;
};

}  // namespace nmo::op::internal
