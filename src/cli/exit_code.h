// The exit statuses of kubectl-maintenance, documented in its --help (docs/cli.md: meaningful exit
// codes a script can branch on).
//
// Threading: compile-time constants.
#pragma once

namespace nmo::cli {

inline constexpr int kExitOk = 0;
// The operation failed: the maintenance (for plan-status --watch: the plan) ended Failed, the API
// server refused a write, or `done` was asked for a node whose drain has not Succeeded. (`plan`
// exits 0 whatever it predicts: its verdict is in the output.)
inline constexpr int kExitFailed = 1;
// Bad command line (CLI11's own code for usage errors is 106; we map it to 2, as kubectl does).
inline constexpr int kExitUsage = 2;
// The node, NodeMaintenance or MaintenancePlan named on the command line does not exist, or was
// deleted while followed (for `done`: the node has no NodeMaintenance).
inline constexpr int kExitNotFound = 3;
// The cluster cannot be used: API server unreachable, kubeconfig unusable, credentials refused,
// or the NodeMaintenance API (CRD) not installed (for plan-status: the MaintenancePlan API).
inline constexpr int kExitUnavailable = 4;
// --timeout passed before the awaited state was reached.
inline constexpr int kExitTimeout = 5;
// `watch`, `--wait` and `--watch` interrupted by a signal exit 128 + its number, as a shell
// reports it (130 for Ctrl-C, 143 for SIGTERM), after restoring the terminal.
inline constexpr int kExitSignalBase = 128;

}  // namespace nmo::cli
