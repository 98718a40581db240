// `kubectl maintenance rollout NAME`: a MaintenancePlan from the command line (docs/cli.md,
// "rollout"). The flags map one to one onto the plan's spec (docs/design.md §10):
//
//   --nodes a,b,c | --selector KEY=VALUE,...   spec.nodes | spec.nodeSelector (kubectl -l syntax)
//   --order AsListed|ByName|ByZone             spec.order
//   --reason TEXT                              spec.reason
//   --max-parallel N|P%                        spec.maxParallel
//   --max-unavailable N|P%                     spec.maxUnavailable
//   --window "[DAYS ]HH:MM-HH:MM" (repeatable) spec.windows; DAYS is a comma list of Mon..Sun
//                                              and ranges ("Mon-Fri,Sun"), none = every day
//   --time-zone ZONE                           spec.timeZone (IANA)
//   --blackout YYYY-MM-DD (repeatable)         spec.blackoutDates
//   --done-when Confirmed|NodeRebooted|Soaked  spec.doneWhen
//   --soak-time DURATION                       spec.soakTime (required with Soaked)
//   --health-gate-timeout DURATION             spec.healthGateTimeout
//   --paused                                   spec.paused
//
// What can be checked without the cluster is checked here and reported naming the flag, before
// anything is sent (exit 2). The time zone is checked by the operator against its own time-zone
// database (an admin's laptop may have none or an older one); a plan it cannot act on reads
// Failed with the reason in `kubectl maintenance plan-status NAME`.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "operator/api/maintenance_plan.h"

namespace nmo::cli {

// The flags of `rollout`, as given (empty: not given).
struct RolloutFlags {
  std::vector<std::string> nodes;  // each may hold a comma list
  std::string selector;
  std::string order;
  std::string reason;
  std::string max_parallel;
  std::string max_unavailable;
  std::vector<std::string> windows;
  std::string time_zone;
  std::vector<std::string> blackout_dates;
  std::string done_when;
  std::string on_window_close;
  std::string soak_time;
  std::string health_gate_timeout;
  bool paused = false;
};

// The spec the flags describe, or an ErrorCode::kInvalid error naming the flag, e.g.
//   --window "Sat 22:00": expected [DAYS ]HH:MM-HH:MM, e.g. "Sat,Sun 22:00-06:00"
//   --max-parallel "two": expected a count or a percentage, e.g. 2 or 25%
//   exactly one of --nodes and --selector
[[nodiscard]] Result<op::MaintenancePlanSpec> rollout_spec(const RolloutFlags& flags);

// The MaintenancePlan object to create: apiVersion, kind, metadata.name and `spec`.
[[nodiscard]] boost::json::object rollout_object(const std::string& name,
                                                 const op::MaintenancePlanSpec& spec);

// What `rollout` prints once the plan is created, ending in '\n':
//   maintenanceplan/NAME created: nodes by selector role=worker, by name, 1 at a time,
//   window Sat 22:00-06:00 (Asia/Taipei), each node done when confirmed (...)
//   follow it: kubectl maintenance plan-status NAME
// With `dry_run` (--dry-run: the API server checked the plan and stored nothing) the first line
// says "accepted by the API server (dry run, nothing created)" and no "follow it" line follows.
[[nodiscard]] std::string rollout_confirmation(const std::string& name,
                                               const op::MaintenancePlanSpec& spec, bool dry_run);

}  // namespace nmo::cli
