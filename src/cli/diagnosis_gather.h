// What `kubectl maintenance diagnose` reads of the cluster: for a NodeMaintenance its Events,
// node, node lease, budget slots, pending pods with their PDBs and the server's version
// (diagnosis.h); for a MaintenancePlan its Events and the diagnosis verdict of each node still
// draining (plan_diagnosis.h).
//
// Threading: one command coroutine on the io_context's single thread.
#pragma once

#include <string>

#include "cli/cluster_reader.h"
#include "cli/diagnosis.h"
#include "cli/outcome.h"
#include "cli/plan_diagnosis.h"
#include "http/asio.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"

namespace nmo::cli {

struct DiagnosisRequest {
  std::string operator_namespace;
  std::string lease_namespace;
  int max_parallel = 0;  // --max-parallel; 0: what the operator published, else its default
};

asio::awaitable<Outcome<DiagnosisInput>> gather_diagnosis(ClusterReader& reader,
                                                          op::NodeMaintenance nm,
                                                          DiagnosisRequest request);

asio::awaitable<Outcome<PlanDiagnosisInput>> gather_plan_diagnosis(ClusterReader& reader,
                                                                   op::MaintenancePlan plan,
                                                                   DiagnosisRequest request);

}  // namespace nmo::cli
