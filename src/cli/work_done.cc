#include "cli/work_done.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/output_format.h"
#include "operator/api/maintenance_plan.h"

namespace nmo::cli {

std::vector<op::NodeMaintenance> maintenances_of_node(const std::vector<op::NodeMaintenance>& all,
                                                      std::string_view node) {
  std::vector<op::NodeMaintenance> of_node;
  for (const auto& nm : all) {
    if (nm.spec.node_name == node) of_node.push_back(nm);
  }
  return of_node;
}

bool can_mark_done(const op::NodeMaintenance& nm) {
  return nm.status.phase == op::Phase::kSucceeded;
}

std::optional<Failure> done_refusal(const std::vector<op::NodeMaintenance>& of_node,
                                    std::string_view node) {
  if (of_node.empty()) {
    return Failure{.message = fmt::format("no NodeMaintenance for node {}", node),
                   .exit_code = kExitNotFound};
  }
  for (const auto& nm : of_node) {
    if (can_mark_done(nm)) return std::nullopt;
  }
  const op::NodeMaintenance& oldest = of_node.front();
  const std::string phase =
      oldest.status.phase ? std::string(op::to_string(*oldest.status.phase)) : "new";
  return Failure{.message = fmt::format("NodeMaintenance {} on node {} is {}, not Succeeded: its "
                                        "drain has not finished, so the work cannot be done yet",
                                        oldest.meta.name, node, phase),
                 .exit_code = kExitFailed};
}

std::string done_patch(kube::Time now) {
  boost::json::object annotations;
  annotations[op::kDoneAnnotation] = kube::format_time(now);
  return boost::json::serialize(boost::json::object{
      {"metadata", boost::json::object{{"annotations", std::move(annotations)}}}});
}

std::string done_confirmation(const op::NodeMaintenance& nm) {
  const std::string head =
      fmt::format("{} marked done (node {}); ", resource_name(nm.meta.name), nm.spec.node_name);
  if (nm.meta.labels.contains(op::kPlanLabel)) {
    return head + "its MaintenancePlan gives the node back\n";
  }
  return head + "delete it to give the node back: kubectl maintenance stop " + nm.spec.node_name +
         "\n";
}

}  // namespace nmo::cli
