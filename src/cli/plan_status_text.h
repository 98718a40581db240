// How a MaintenancePlan reads on a terminal, for `kubectl maintenance plan-status`: a header with
// the counts, a progress bar, the next window, the ETA and the plan's message, then one row per
// node in plan order.
//
//   MaintenancePlan rack-a: Running — 2 of 5 done, 1 in progress, 2 waiting, 0 failed
//   [################........................] 40%
//   ETA: 2026-03-07T16:40:00Z
//
//   NODE        PHASE           MAINTENANCE        STARTED                DURATION   MESSAGE
//   worker-01   Done            -                  2026-03-07T14:00:05Z   12m40s     -
//   worker-03   InMaintenance   rack-a-worker-03   2026-03-07T14:25:31Z   4m12s      waiting ...
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kube/api/time.h"
#include "operator/api/maintenance_plan.h"

namespace nmo::cli {

// True before the operator has written the plan's status (no phase, no nodes): plan-status then
// says so instead of showing zeros.
[[nodiscard]] bool plan_not_started(const op::MaintenancePlan& plan);

// done * 100 / total, rounded down; 0 for a plan without nodes.
[[nodiscard]] std::int64_t plan_percent(const op::MaintenancePlanStatus& status);

// "MaintenancePlan NAME: PHASE — DONE of TOTAL done, IN in progress, WAITING waiting, FAILED
// failed" ("MaintenancePlan NAME: not started yet (is the operator running?)" before the
// operator has seen it).
[[nodiscard]] std::string plan_header(const op::MaintenancePlan& plan);

// The node table's header and one row: NODE, PHASE, MAINTENANCE, STARTED (RFC 3339), DURATION
// (startedAt to finishedAt, or to `now` while the node is in progress: "4m12s"), MESSAGE;
// empty cells read "-".
[[nodiscard]] std::vector<std::string> plan_node_header();
[[nodiscard]] std::vector<std::string> plan_node_row(const op::PlanNodeStatus& node,
                                                     kube::Time now);

// The whole plan-status report, lines ending in '\n': the header, then (once started) the bar
// of 40 cells with the percentage, "Next window: TEXT (RFC 3339)", "ETA: RFC 3339" and
// "Message: ..." when set, and the node table after a blank line.
[[nodiscard]] std::string plan_status_report(const op::MaintenancePlan& plan, kube::Time now);

}  // namespace nmo::cli
