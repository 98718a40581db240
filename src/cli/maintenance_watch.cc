#include "cli/maintenance_watch.h"

#include <algorithm>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/maintenance_text.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;

// Pending pods drawn under the progress line; the rest are counted ("... and N more").
constexpr std::size_t kMaxPendingLines = 10;

}  // namespace

void MaintenanceHighWater::keep(op::NodeMaintenance nm) {
  if (nm.meta.uid != uid_) {
    uid_ = nm.meta.uid;
    best_progress_ = 0;
    best_evicted_ = 0;
  }
  best_progress_ = std::max(best_progress_, nm.status.drain_progress);
  best_evicted_ = std::max(best_evicted_, nm.status.eviction_pods);
  nm.status.drain_progress = best_progress_;
  nm.status.eviction_pods = best_evicted_;
  shown_ = std::move(nm);
}

std::chrono::seconds maintenance_elapsed(const op::NodeMaintenance& nm,
                                         std::chrono::seconds following, kube::Time now) {
  if (!nm.meta.creation_timestamp) return following;
  return std::chrono::duration_cast<std::chrono::seconds>(now - *nm.meta.creation_timestamp);
}

Frame maintenance_watch_frame(const op::NodeMaintenance& nm, std::chrono::seconds elapsed) {
  Frame frame{.lines = {progress_line(nm, elapsed)}, .signature = {}};
  for (auto& line : pending_lines(nm, kMaxPendingLines)) frame.lines.push_back(std::move(line));
  frame.signature = fmt::format("{}|{}|{}|{}", phase_text(nm), nm.status.drain_progress,
                                nm.status.eviction_pods, nm.status.total_pods);
  for (std::size_t i = 1; i < frame.lines.size(); ++i) frame.signature += "|" + frame.lines[i];
  return frame;
}

json::object maintenance_watch_json(const op::NodeMaintenance& nm, std::chrono::seconds elapsed) {
  json::array pending;
  for (const auto& ref : nm.status.pending_pods_refs) {
    pending.push_back(json::object{
        {"namespace", ref.namespace_},
        {"name", ref.name},
        {"reason", ref.reason ? std::string(op::to_string(*ref.reason)) : std::string()},
        {"message", ref.message}});
  }
  return json::object{{"name", nm.meta.name},
                      {"node", nm.spec.node_name},
                      {"phase", phase_text(nm)},
                      {"drainProgress", nm.status.drain_progress},
                      {"evictionPods", nm.status.eviction_pods},
                      {"totalPods", nm.status.total_pods},
                      {"pendingPods", std::move(pending)},
                      {"lastError", nm.status.last_error},
                      {"elapsedSeconds", elapsed.count()}};
}

std::optional<MaintenanceWatchEnd> maintenance_watch_end(const op::NodeMaintenance& nm) {
  if (nm.status.phase == op::Phase::kSucceeded) return MaintenanceWatchEnd{.exit_code = kExitOk};
  if (nm.status.phase == op::Phase::kFailed) {
    return MaintenanceWatchEnd{
        .exit_code = kExitFailed,
        .error = "NodeMaintenance \"" + nm.meta.name + "\" failed: " + nm.status.last_error};
  }
  return std::nullopt;
}

}  // namespace nmo::cli
