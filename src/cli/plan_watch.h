// What `kubectl maintenance plan-status NAME --watch` says about a MaintenancePlan while it
// follows it (docs/cli.md): the JSON line of -o json, what counts as a change worth a new line or
// block, and the state that ends the watch with its exit status. The drawing itself is
// plan_status_report() (plan_status_text.h).
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "operator/api/maintenance_plan.h"

namespace nmo::cli {

// The plan's phase as plan-status --watch names it: status.phase; "New" before the operator has
// written a status (as a NodeMaintenance without a phase reads), "Unknown" for a status with
// nodes but no phase (a half-written one, as plan_header() reads it).
[[nodiscard]] std::string plan_phase_text(const op::MaintenancePlan& plan);

// One line of `plan-status NAME --watch -o json`, a compact view of the status:
//   {"name", "phase" (plan_phase_text), "total", "done", "inProgress", "waiting", "failed",
//    "currentNodes": [names], "message", "nextWindow" (RFC 3339 or null), "nextWindowText",
//    "eta" (RFC 3339 or null), "nodes": [{"name", "phase", "maintenance", "message"}]}
// Strings the operator has not set are "".
[[nodiscard]] boost::json::object plan_watch_json(const op::MaintenancePlan& plan);

// What tells one state of the plan from the next, for printing changes only: the JSON line
// without its ETA. The operator computes the ETA from the time of each look, so an ETA that only
// moves on is no change of its own (it is shown with the next one).
[[nodiscard]] std::string plan_watch_signature(const op::MaintenancePlan& plan);

// How following a plan ends at this state.
struct PlanWatchEnd {
  int exit_code = 0;  // kExitOk when it Succeeded, kExitFailed when it Failed
  // For a Failed plan, the one-line error: `MaintenancePlan "NAME" failed: <status.message>`
  // (without the colon when the message is empty); "" when it Succeeded.
  std::string error;

  friend bool operator==(const PlanWatchEnd&, const PlanWatchEnd&) = default;
};

// The end of the watch for a Succeeded or Failed plan; std::nullopt while it goes on (no status
// yet, Running, WaitingForWindow, Paused: a paused plan may be resumed).
[[nodiscard]] std::optional<PlanWatchEnd> plan_watch_end(const op::MaintenancePlan& plan);

}  // namespace nmo::cli
