// What `kubectl maintenance watch NAME` and `start --wait` say about a NodeMaintenance while they
// follow it (docs/cli.md): its drawing (the progress line and the pending pods,
// maintenance_text.h), the JSON line of -o json, and the state that ends the watch with its exit
// status. The bar never goes backwards: MaintenanceHighWater keeps the highest percentage and
// evicted count seen.
//
// Threading: pure functions; a MaintenanceHighWater belongs to its one caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "cli/watch_frame.h"
#include "kube/api/time.h"
#include "operator/api/node_maintenance.h"

namespace nmo::cli {

// The maintenance as last seen, with status.drainProgress and status.evictionPods never below
// the highest seen for the same maintenance (uid): the operator may count again from a lower
// number after a restart, which would read as going backwards. A new maintenance of the same name
// starts from its own numbers.
class MaintenanceHighWater {
 public:
  // Keeps `nm`, its progress raised to the highest seen.
  void keep(op::NodeMaintenance nm);
  // The maintenance last kept (default-constructed before the first keep()).
  [[nodiscard]] const op::NodeMaintenance& shown() const { return shown_; }

 private:
  op::NodeMaintenance shown_;
  std::string uid_;  // the maintenance the marks belong to
  std::int64_t best_progress_ = 0;
  std::int64_t best_evicted_ = 0;
};

// How long the maintenance has been going at `now`: since its creation, or `following` (since
// the watch began) when it has no creationTimestamp.
[[nodiscard]] std::chrono::seconds maintenance_elapsed(const op::NodeMaintenance& nm,
                                                       std::chrono::seconds following,
                                                       kube::Time now);

// The drawing: the progress line, then up to 10 pending pods; its signature is the phase, the
// progress, the pod counts and the pending lines (not the elapsed time).
[[nodiscard]] Frame maintenance_watch_frame(const op::NodeMaintenance& nm,
                                            std::chrono::seconds elapsed);

// One line of `watch NAME -o json`:
//   {"name", "node", "phase" (phase_text), "drainProgress", "evictionPods", "totalPods",
//    "pendingPods": [{"namespace", "name", "reason", "message"}], "lastError", "elapsedSeconds"}
[[nodiscard]] boost::json::object maintenance_watch_json(const op::NodeMaintenance& nm,
                                                         std::chrono::seconds elapsed);

// How following a maintenance ends at this state.
struct MaintenanceWatchEnd {
  int exit_code = 0;  // kExitOk when it Succeeded, kExitFailed when it Failed
  // For a Failed maintenance, the one-line error:
  // `NodeMaintenance "NAME" failed: <status.lastError>`; "" when it Succeeded.
  std::string error;

  friend bool operator==(const MaintenanceWatchEnd&, const MaintenanceWatchEnd&) = default;
};

// The end of the watch for a Succeeded or Failed maintenance; std::nullopt while it goes on.
[[nodiscard]] std::optional<MaintenanceWatchEnd> maintenance_watch_end(
    const op::NodeMaintenance& nm);

}  // namespace nmo::cli
