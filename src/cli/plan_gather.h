// What `kubectl maintenance plan <node>` reads of the cluster before predicting (plan.h): the
// node, its pods with their DaemonSets, PodDisruptionBudgets and KubeVirt VMs, every
// NodeMaintenance, the budget's slot Leases and the node leases, and the etcd members the
// quorum gate counts, read the way the operator reads them (operator/gates/admission_gates.h).
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

}  // namespace nmo::cli
