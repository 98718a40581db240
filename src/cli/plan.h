// `kubectl maintenance plan <node>`: a dry run of a NodeMaintenance that changes nothing. From a
// snapshot of the cluster it predicts what the operator would do, with the operator's own rules:
//   - which pods must leave (operator/drain/pod_policy.h: mirror pods and pods of an existing
//     DaemonSet are skipped, everything else is evicted);
//   - which of those will block the drain, as the Eviction API would answer: a pod under more
//     than one PodDisruptionBudget (MultiplePDBs), a pod whose only budget allows no disruption
//     now (BlockedByPDB; an unhealthy pod passes as the API server lets it), a KubeVirt
//     virt-launcher pod the operator holds because its eviction would shut the VM down
//     (VMWouldShutDown) or KubeVirt refuses it for good (VMNotMigratable), as
//     operator/kubevirt/vm_policy.h decides for a maintenance without vmEvictionPolicy (unknown
//     when the kubevirt.io/v1 API is not served); budgets are consumed pod after pod, so a second
//     pod under a budget allowing one disruption waits for the first one's replacement;
//   - which gates would hold the maintenance Pending: an existing maintenance of the node, then
//     the operator's own evaluation (operator/gates/admission_gates.h, with this maintenance
//     added as the youngest): the medik8s node lease held by another component, etcd quorum for
//     a control-plane node (members on nodes other maintenances hold count as down), and the
//     cluster disruption budget. The quorum's stability window is the operator's memory: a
//     safe quorum reads as open here.
//
// `kubectl maintenance plan --plan <name>` predicts, for a MaintenancePlan, which pods it may
// evict twice. While a plan runs, the nodes it takes later carry its steering taint
// (operator/node/steering_taint.h, PreferNoSchedule) so that the pods evicted before go
// elsewhere; a pod that tolerates it is placed as if it were not there, and may land on a node
// the plan drains later. Only pods that must leave (as above) and have a controller (a pod
// without one is not recreated) count, on the nodes whose pods leave while a later node waits.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json/fwd.hpp>

#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/time.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"
#include "operator/drain/pod_policy.h"
#include "operator/gates/admission_gates.h"
#include "operator/kubevirt/vm_policy.h"

namespace nmo::cli {

// The cluster as `plan` read it.
struct PlanInput {
  std::string maintenance_name;  // the CR `start` would create
  kube::Node node;
  kube::Time now{};
  std::vector<kube::Pod> pods;                  // bound to the node
  std::vector<op::DaemonSetRef> daemon_sets;    // existing DaemonSets (namespace, name, uid)
  std::vector<kube::PodDisruptionBudget> pdbs;  // of the pods' namespaces
  bool kubevirt_served = false;                 // kubevirt.io/v1 is served
  std::map<std::string, op::Vmi> vmis;          // "namespace/name" -> the VMI, when found
  // The KubeVirt CR's spec.configuration.evictionStrategy (the VMIs' default), when set.
  std::optional<std::string> kubevirt_eviction_strategy;
  std::vector<op::NodeMaintenance> maintenances;  // every NodeMaintenance
  std::string operator_namespace;
  std::set<std::string> slot_leases;  // names of the Leases in the operator namespace
  std::string lease_namespace;
  std::vector<kube::Lease> node_leases;  // every Lease of the lease namespace
  int max_parallel = 1;
  // Where max_parallel comes from, shown with it ("--max-parallel", "published by the operator
  // on Lease <ns>/nmo-budget"); empty: nothing is shown.
  std::string max_parallel_source;
  bool etcd_quorum_check = true;
  // The control-plane nodes and etcd members, as the operator reads them (admission_gates.h).
  op::EtcdView etcd;
  // The nodes of waiting maintenances that do not exist (those take no place in the budget).
  std::set<std::string> missing_nodes;
};

enum class PodVerdict { kEvict, kSkip, kBlock, kUnknown };

// "evict", "skip", "block", "unknown".
[[nodiscard]] std::string_view to_string(PodVerdict verdict) noexcept;

struct PodPlan {
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  PodVerdict verdict = PodVerdict::kEvict;
  // Skip: "DaemonSet", "MirrorPod". Block: "BlockedByPDB", "MultiplePDBs", "VMNotMigratable".
  // Block: also "VMWouldShutDown". Unknown: "VMMigrationUnknown". Evict: "" or "Finished",
  // "MigratingVM", "WaitsForPDB".
  std::string reason;
  std::string detail;             // one line for humans
  std::vector<std::string> pdbs;  // "namespace/name" of the budgets covering the pod

  friend bool operator==(const PodPlan&, const PodPlan&) = default;
};

struct GatePlan {
  std::string gate;  // "existing maintenance", "node lease", "etcd quorum", "budget"
  bool open = true;
  std::string detail;

  friend bool operator==(const GatePlan&, const GatePlan&) = default;
};

struct Plan {
  std::string node;
  std::string maintenance_name;
  std::vector<PodPlan> pods;  // evict first, then block, unknown, skip; by namespace/name within
  std::vector<GatePlan> gates;

  [[nodiscard]] bool would_start() const;
  [[nodiscard]] std::size_t count(PodVerdict verdict) const;
};

[[nodiscard]] Plan make_plan(const PlanInput& input);

// The one-line summary:
//   would stay Pending: <first closed gate's detail>
//   would start, then block on 2 pods (first: default/vm-db: <detail>)
//   would start at once and drain 5 pods
[[nodiscard]] std::string plan_verdict(const Plan& plan);

// The human report (sections for evicted, blocking, unknown and skipped pods, the gates, the
// verdict), lines ending in '\n'.
[[nodiscard]] std::string plan_report(const Plan& plan);

// The plan for -o json|yaml: {node, maintenance, pods: [{namespace, name, action, reason,
// detail, pdbs}], gates: [{gate, open, detail}], wouldStart, verdict}.
[[nodiscard]] boost::json::value plan_to_json(const Plan& plan);

// The nodes of `plan` whose pods leave while a later node of the plan waits: in plan order
// (status.nodes), every node Waiting or Draining that a Waiting node follows. Pods evicted from
// the others (the last node to wait, nodes already drained) find no node of the plan to come.
[[nodiscard]] std::vector<std::string> nodes_drained_before_others(const op::MaintenancePlan& plan);

// What `plan --plan` read of the cluster.
struct RepeatEvictionInput {
  std::string plan;
  // The plan has no status yet: the operator has not listed its nodes.
  bool nodes_unknown = false;
  std::vector<std::string> nodes;             // nodes_drained_before_others(), in plan order
  std::vector<kube::Pod> pods;                // bound to those nodes
  std::vector<op::DaemonSetRef> daemon_sets;  // existing DaemonSets (namespace, name, uid)
};

// A pod the plan may evict twice.
struct RepeatEviction {
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  std::string node;
  // The toleration that lets it onto the plan's later nodes, in words:
  // "every taint (operator Exists)", "taint nodemaintenance.medik8s.io/planned (operator Exists)".
  std::string toleration;

  friend bool operator==(const RepeatEviction&, const RepeatEviction&) = default;
};

struct RepeatEvictions {
  std::string plan;
  bool nodes_unknown = false;
  std::vector<std::string> nodes;
  std::vector<RepeatEviction> pods;  // by the nodes' plan order, then namespace/name

  friend bool operator==(const RepeatEvictions&, const RepeatEvictions&) = default;
};

// A toleration in words, as RepeatEviction::toleration.
[[nodiscard]] std::string describe_toleration(const kube::Toleration& toleration);

[[nodiscard]] RepeatEvictions find_repeat_evictions(const RepeatEvictionInput& input);

// The human report, lines ending in '\n'; one line per pod:
//   shop/cache-0 on node-worker-05: tolerates every taint (operator Exists); it may be
//   rescheduled onto a node the plan drains later and be evicted again
// (on one line).
[[nodiscard]] std::string repeat_evictions_report(const RepeatEvictions& evictions);

// For -o json|yaml: {plan, nodes, mayBeEvictedAgain: [{namespace, name, node, toleration}]};
// nodes is null while the operator has not listed the plan's nodes.
[[nodiscard]] boost::json::value repeat_evictions_to_json(const RepeatEvictions& evictions);

}  // namespace nmo::cli
