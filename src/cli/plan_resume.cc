#include "cli/plan_resume.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace nmo::cli {

Result<std::string> resume_patch(const op::MaintenancePlan& plan) {
  const std::string& name = plan.meta.name;
  if (!op::plan_stopped(plan.status) || plan.status.stop_token.empty()) {
    std::string message = "MaintenancePlan " + name + " is not stopped by the operator";
    if (plan.spec.paused) {
      message +=
          "; it is paused by its spec.paused, which is yours: set it to false where the "
          "plan is kept (or kubectl patch mp " +
          name + R"( --type=merge -p '{"spec":{"paused":false}}'))";
    }
    return Error(ErrorCode::kConflict, std::move(message));
  }
  const boost::json::object patch{
      {"metadata", {{"annotations", {{op::kResumeAnnotation, plan.status.stop_token}}}}}};
  return boost::json::serialize(patch);
}

std::string resume_confirmation(const op::MaintenancePlan& plan) {
  const kube::Condition* stopped =
      kube::find_condition(plan.status.conditions, op::kStoppedCondition);
  std::string out = "maintenanceplan/" + plan.meta.name + " resumed";
  if (stopped != nullptr && !stopped->message.empty()) {
    out += " (it stopped: " + stopped->message + ")";
  }
  if (plan.spec.paused) {
    out += "; it stays paused by its spec.paused until that is false";
  }
  return out + "\n";
}

}  // namespace nmo::cli
