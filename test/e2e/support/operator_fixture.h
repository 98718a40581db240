// GoogleTest fixture for end-to-end tests of the operator process against the local cluster:
// installs what the operator needs (CRD, namespaces), removes NodeMaintenances left by an
// earlier run, starts operators, and at the end deletes the test's NodeMaintenances while an
// operator is still running (so finalizers are processed), checks that none of their Leases is
// left, stops the operators, prints their log tails when the test failed, and restores the
// nodes the test touched, so that one failing test never poisons the next.
//
// The tests need the cluster to themselves (ctest's RESOURCE_LOCK cluster): another operator
// running against it (`make run`) would reconcile their NodeMaintenances too.
//
// Threading: a fixture belongs to the test's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "operator/api/node_maintenance.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_process.h"

namespace nmo::e2e {

/// Names of the operator's contract (docs/design.md §2–§3) that tests look for.
inline constexpr const char* kOperatorNamespace = "node-maintenance-operator-system";
inline constexpr const char* kLeaseNamespace = "medik8s-leases";
inline constexpr const char* kNodeLeaseHolder = "node-maintenance";
inline constexpr const char* kDrainTaintKey = "medik8s.io/drain";
inline constexpr const char* kUnschedulableTaintKey = "node.kubernetes.io/unschedulable";
inline constexpr const char* kExcludeFromRemediationLabel =
    "remediation.medik8s.io/exclude-from-remediation";
inline constexpr const char* kPriorStateAnnotation = "nodemaintenance.medik8s.io/prior-state";
/// Leader-election Lease in the operator namespace (docs/design.md §3.2); not a budget slot.
inline constexpr const char* kLeaderLease = "135b1886.medik8s.io";
/// The Lease on which the operator publishes its --max-parallel-maintenances
/// (src/operator/budget/published_budget.h); not a budget slot either.
inline constexpr const char* kBudgetLease = "nmo-budget";

/// Applies the CRD (deploy/crd/) and creates the operator and lease namespaces; waits until the
/// CRD is Established. Idempotent; does the work once per process.
void install_operator_prerequisites(const Kubectl& kubectl);

/// Deletes the NodeMaintenances named (every one when `names` is empty) and waits until they
/// are gone, which needs a running operator to remove the finalizers. On timeout records a
/// failure naming what is left and strips the finalizers, so the next test starts clean.
/// Returns whether they went in time.
bool delete_node_maintenances(const Kubectl& kubectl, const std::vector<std::string>& names,
                              std::chrono::seconds timeout);

/// One Event of `kubectl get events -n default`, reduced to what tests look at.
struct Event {
  std::string name;
  std::string type;
  std::string reason;
  std::string message;
  std::int64_t count = 1;
  std::string first_timestamp;  // RFC 3339, in seconds: compare with <=
};

/// Events in `default` matching a field selector (e.g. `involvedObject.uid=<uid>`).
std::vector<Event> events_matching(const Kubectl& kubectl, const std::string& field_selector);

/// The Leases of `ns`, as JSON objects.
std::vector<boost::json::object> leases_in(const Kubectl& kubectl, const std::string& ns);

/// Flags every e2e operator gets: the etcd stability window shortened from 30 s to 3 s.
inline const std::vector<std::string> kOperatorFlags = {"--etcd-quorum-stable-for", "3"};
inline constexpr const char* kMirrorAnnotation = "kubernetes.io/config.mirror";

/// Deadlines: the operator reacts to watch events within a second; evictions refused once are
/// retried with a backoff of at most 30 s (docs/design.md §2.4).
inline constexpr std::chrono::seconds kReact{30};
inline constexpr std::chrono::seconds kDrain{90};

/// metadata.name / metadata.uid of an object ("" when absent).
std::string name_of(const boost::json::value& object);
std::string uid_of(const boost::json::value& object);

/// True when the pod has a deletionTimestamp.
bool is_terminating(const boost::json::value& pod);

/// An etcd member as kubeadm runs it: a static pod, seen through its mirror pod in kube-system.
std::string etcd_mirror_pod_manifest(const std::string& node);

/// A Lease node-<node> in the medik8s lease namespace held by `holder`, renewed now, as Node
/// Health Check takes it.
std::string foreign_node_lease_manifest(const std::string& node, const std::string& holder);

/// Node helpers: spec.unschedulable; a label or annotation value ("" when absent); a one-line
/// summary for failure messages; whether a "key=value:effect" taint is present; whether the
/// maintenance taint medik8s.io/drain=draining:NoSchedule is.
bool unschedulable(const boost::json::value& node);
std::string label(const boost::json::value& object, const std::string& key);
std::string annotation(const boost::json::value& object, const std::string& key);
std::string describe_node(const boost::json::value& node);
bool has_taint(const boost::json::value& node, const std::string& taint);
bool drain_tainted(const boost::json::value& node);

class OperatorFixture : public ClusterTest {
 protected:
  /// Installs the prerequisites and removes NodeMaintenances left by an earlier, crashed run.
  void SetUp() override;

  /// Deletes the test's NodeMaintenances (with an operator running), runs the deferred cleanups,
  /// checks that none of their Leases is left, stops the operators, restores the registered
  /// nodes.
  void TearDown() override;

  /// Starts an operator with `flags`; it logs to `<build>/e2e-logs/<Suite>.<Test>[.<n>].log`
  /// and is stopped in TearDown.
  OperatorProcess& start_operator(const std::vector<std::string>& flags);

  /// The node is put back at the end whatever happened: uncordoned, without the maintenance
  /// taint, label and annotation, without the not-ready fault label, and Ready again.
  void restore_node_at_end(const std::string& node);

  /// Runs `cleanup` in TearDown, after the NodeMaintenances are gone (in reverse order).
  void defer(std::function<void()> cleanup);

  /// Creates a NodeMaintenance (`reason` omitted when empty), deleted in TearDown; returns
  /// whether it was accepted.
  bool create_node_maintenance(const std::string& name, const std::string& node,
                               const std::string& reason = {});

  /// The Lease `name` in `ns`, or nullopt.
  std::optional<boost::json::value> lease(const std::string& ns, const std::string& name);

  /// The slot Leases (operator namespace, without the leader and budget Leases) by
  /// holderIdentity.
  std::set<std::string> slot_holders();

  /// Deletes the NodeMaintenance without waiting.
  void remove(const std::string& name);

  /// Waits (90 s) until exactly `count` pods match `selector` in `ns`, all Running and Ready
  /// (wait_running_pods() with this fixture's kubectl).
  bool wait_running(const std::string& ns, const std::string& selector, std::size_t count);

  /// Total count of the events with `reason` of the object with `uid`.
  std::int64_t event_count(const std::string& uid, const std::string& reason);

  /// The NodeMaintenance as JSON, or nullopt when it does not exist.
  std::optional<boost::json::value> get_node_maintenance(const std::string& name);

  /// Waits until the NodeMaintenance's phase is one of `phases`; returns the object seen last.
  std::optional<boost::json::value> wait_phase(const std::string& name,
                                               const std::vector<std::string>& phases,
                                               std::chrono::milliseconds timeout);

  /// Waits until the NodeMaintenance is gone.
  bool wait_gone(const std::string& name, std::chrono::milliseconds timeout);

  /// The Events of the object with `uid`.
  std::vector<Event> events_of(const std::string& uid);

  /// Waits until an Event of the object with `uid` has `reason` (and, when given, exactly
  /// `message`); returns it.
  std::optional<Event> wait_event(const std::string& uid, const std::string& reason,
                                  const std::optional<std::string>& message,
                                  std::chrono::milliseconds timeout);

  /// The node as JSON (records a failure when it does not exist).
  std::optional<boost::json::value> get_node(const std::string& node);

  /// Creates the NodeMaintenance and returns its uid ("" when refused).
  std::string create(const std::string& name, const std::string& node,
                     const std::string& reason = {});

  /// Creates the NodeMaintenance with `spec` (nodeName added) and returns its uid ("" when
  /// refused); deleted in TearDown.
  std::string create_with_spec(const std::string& name, const std::string& node,
                               boost::json::object spec);

  /// Creates `count` kwok nodes named `edge-<prefix>-<random>` and waits until they are Ready;
  /// they are deleted at the end, after the test's NodeMaintenances are gone.
  std::vector<std::string> fresh_nodes(const std::string& prefix, std::size_t count);
  std::string fresh_node(const std::string& prefix) { return fresh_nodes(prefix, 1).front(); }
  /// Creates kwok nodes of these names, deleted like fresh_nodes(); true once all are Ready.
  bool create_nodes(const std::vector<std::string>& names);

  /// Waits (60 s) until the node's Ready condition is True.
  bool wait_node_ready(const std::string& node);

  /// Waits (60 s) until the disruption controller has processed the PDB with `healthy` pods
  /// and `allowed` disruptions.
  bool wait_pdb(const std::string& ns, const std::string& name, std::int64_t healthy,
                std::int64_t allowed);

  /// Waits until the node carries nothing of a maintenance (docs/design.md §2.6): no drain taint
  /// (with or without a value), the label and annotation gone, and schedulable unless
  /// `stays_cordoned`.
  bool wait_node_restored(const std::string& node, bool stays_cordoned,
                          std::chrono::milliseconds timeout);

  /// Whether the node lease of `node` is held by the operator.
  bool node_lease_held(const std::string& node);

 private:
  void print_operator_logs(const std::string& when) const;

  // Node leases of the test's nodes held as node-maintenance, and slots of its maintenances.
  std::vector<std::string> leftover_leases();

  std::vector<std::unique_ptr<OperatorProcess>> operators_;
  std::vector<std::pair<std::string, std::string>> created_;  // NodeMaintenance, node
  std::vector<std::string> nodes_to_restore_;
  std::vector<std::function<void()>> cleanups_;
};

/// "key=value:effect" of each of the node's taints, in order.
std::vector<std::string> taints_of(const boost::json::value& node);

/// Whether the node has a taint with `key` (with or without a value), whatever its effect.
bool has_taint_key(const boost::json::value& node, const std::string& key);

/// How many taints with the key medik8s.io/drain (with or without a value) the node has.
std::size_t drain_taint_count(const boost::json::value& node);

/// The `phase` of a NodeMaintenance ("" when unset), read through maintenance_of(): one that
/// does not decode records a test failure.
std::string phase_of(const boost::json::value& nm);

/// `nm` read as the operator reads it (op::decode_node_maintenance). A NodeMaintenance that does
/// not decode records a test failure naming the field and reads as an empty one.
op::NodeMaintenance maintenance_of(const boost::json::value& nm);

}  // namespace nmo::e2e
