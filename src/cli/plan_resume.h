// `kubectl maintenance resume PLAN`: goes on with a MaintenancePlan the operator stopped (a node
// failed, a health gate timed out; docs/design.md §10). It writes the plan's current stop token
// into the annotation nodemaintenance.medik8s.io/resume, never spec.paused: spec.paused is the
// user's own (often held in Git), and a token belongs to one stop only, so re-applying an old
// manifest cannot resume a later stop.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <string>

#include "base/result.h"
#include "operator/api/maintenance_plan.h"

namespace nmo::cli {

// The JSON merge patch that resumes `plan`'s stop. An ErrorCode::kConflict error when the
// operator has not stopped the plan, saying what else holds it if anything (spec.paused).
[[nodiscard]] Result<std::string> resume_patch(const op::MaintenancePlan& plan);

// What `resume` prints once the patch is written: "maintenanceplan/NAME resumed (it stopped:
// MESSAGE)\n".
[[nodiscard]] std::string resume_confirmation(const op::MaintenancePlan& plan);

}  // namespace nmo::cli
