// What `kubectl maintenance plan <node>` reads of the cluster before predicting (plan.h): the
// node, its pods with their DaemonSets, PodDisruptionBudgets and KubeVirt VMs, every
// NodeMaintenance, the budget's slot Leases and the node leases, and the etcd members the
// quorum gate counts, read the way the operator reads them (operator/gates/admission_gates.h).
// For `plan --plan <name>`, the pods of the MaintenancePlan's nodes to come and their
// DaemonSets.
//
// Threading: one command coroutine on the io_context's single thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/cluster_reader.h"
#include "cli/outcome.h"
#include "cli/plan.h"
#include "http/asio.h"
#include "kube/api/lease.h"
#include "operator/api/maintenance_plan.h"

namespace nmo::cli {

struct PlanRequest {
  std::string node;
  std::string maintenance_name;  // the CR `start` would create
  std::string operator_namespace;
  std::string lease_namespace;
  bool etcd_quorum_check = true;
  int max_parallel = 0;  // --max-parallel; 0: what the operator published, else its default
};

// The budget to plan with: `max_parallel_flag` when above 0, else what the operator published
// on its budget Lease among `operator_leases`, else the operator's default; and where it came
// from ("--max-parallel", "published by the operator on Lease <ns>/nmo-budget", ...).
[[nodiscard]] std::pair<int, std::string> budget_of(
    int max_parallel_flag, const std::string& operator_namespace,
    const std::vector<kube::Lease>& operator_leases);

// Reads everything make_plan() needs; a node that does not exist is exit 3.
asio::awaitable<Outcome<PlanInput>> gather_plan(ClusterReader& reader, PlanRequest request);

// Reads what find_repeat_evictions() needs of `plan` (`plan --plan`): the pods of the nodes whose
// pods leave while a later node waits (nodes_drained_before_others()), and the DaemonSets owning
// them. A node that no longer exists has no pods.
asio::awaitable<Outcome<RepeatEvictionInput>> gather_repeat_evictions(ClusterReader& reader,
                                                                      op::MaintenancePlan plan);

}  // namespace nmo::cli
