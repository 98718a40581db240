#include "followed.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/maintenance_text.h"
#include "cli/plan_status_text.h"
#include "cli/plan_watch.h"
#include "console.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;

using kube::wall_now;

constexpr std::size_t kMaxPendingLines = 10;

class FollowedMaintenance final : public Followed {
 public:
  [[nodiscard]] std::string_view kind() const override { return op::kKind; }
  [[nodiscard]] std::string collection() const override { return maintenance_path(); }

  asio::awaitable<Outcome<Done>> read(Session& session, std::string name) override {
    auto found = co_await session.find_maintenance(name);
    if (!found) co_return found.failure();
    if (!found->has_value()) {
      co_return Failure{.message = "NodeMaintenance \"" + name + "\" not found",
                        .exit_code = kExitNotFound};
    }
    keep(std::move((*found)->nm));
    co_return Done{};
  }

  [[nodiscard]] Result<void> take(const json::value& object) override {
    NMO_TRY_ASSIGN(op::NodeMaintenance nm, op::decode_node_maintenance(object));
    keep(std::move(nm));
    return {};
  }

  [[nodiscard]] std::string resource_version() const override {
    return shown_.meta.resource_version;
  }
  [[nodiscard]] std::string phase() const override { return phase_text(shown_); }

  [[nodiscard]] Frame frame(std::chrono::seconds following) const override {
    Frame frame{.lines = {progress_line(shown_, elapsed(following))}, .signature = {}};
    for (auto& line : pending_lines(shown_, kMaxPendingLines)) {
      frame.lines.push_back(std::move(line));
    }
    frame.signature = fmt::format("{}|{}|{}|{}", phase_text(shown_), shown_.status.drain_progress,
                                  shown_.status.eviction_pods, shown_.status.total_pods);
    for (std::size_t i = 1; i < frame.lines.size(); ++i) frame.signature += "|" + frame.lines[i];
    return frame;
  }

  [[nodiscard]] json::value json_line(std::chrono::seconds following) const override {
    json::array pending;
    for (const auto& ref : shown_.status.pending_pods_refs) {
      pending.push_back(json::object{
          {"namespace", ref.namespace_},
          {"name", ref.name},
          {"reason", ref.reason ? std::string(op::to_string(*ref.reason)) : std::string()},
          {"message", ref.message}});
    }
    return json::object{{"name", shown_.meta.name},
                        {"node", shown_.spec.node_name},
                        {"phase", phase_text(shown_)},
                        {"drainProgress", shown_.status.drain_progress},
                        {"evictionPods", shown_.status.eviction_pods},
                        {"totalPods", shown_.status.total_pods},
                        {"pendingPods", std::move(pending)},
                        {"lastError", shown_.status.last_error},
                        {"elapsedSeconds", elapsed(following).count()}};
  }

  [[nodiscard]] std::optional<int> final_status() const override {
    if (shown_.status.phase == op::Phase::kSucceeded) return kExitOk;
    if (shown_.status.phase == op::Phase::kFailed) {
      return report(Failure{.message = "NodeMaintenance \"" + shown_.meta.name +
                                       "\" failed: " + shown_.status.last_error,
                            .exit_code = kExitFailed});
    }
    return std::nullopt;
  }

 private:
  // Keeps a new state of the maintenance, never with less progress than already shown.
  void keep(op::NodeMaintenance nm) {
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

  // Since the maintenance was created; since following began when it has no creation time.
  [[nodiscard]] std::chrono::seconds elapsed(std::chrono::seconds following) const {
    if (!shown_.meta.creation_timestamp) return following;
    return std::chrono::duration_cast<std::chrono::seconds>(wall_now() -
                                                            *shown_.meta.creation_timestamp);
  }

  op::NodeMaintenance shown_;  // the last state kept, after the high-water marks
  std::string uid_;            // the maintenance the marks belong to
  std::int64_t best_progress_ = 0;
  std::int64_t best_evicted_ = 0;
};

class FollowedPlan final : public Followed {
 public:
  [[nodiscard]] std::string_view kind() const override { return op::kPlanKind; }
  [[nodiscard]] std::string collection() const override {
    return kube::collection_path<op::MaintenancePlan>();
  }

  asio::awaitable<Outcome<Done>> read(Session& session, std::string name) override {
    auto found = co_await session.maintenance_plan(name);
    if (!found) co_return found.failure();
    shown_ = std::move(found->plan);
    co_return Done{};
  }

  [[nodiscard]] Result<void> take(const json::value& object) override {
    NMO_TRY_ASSIGN(shown_, op::decode_maintenance_plan(object));
    return {};
  }

  [[nodiscard]] std::string resource_version() const override {
    return shown_.meta.resource_version;
  }
  [[nodiscard]] std::string phase() const override { return plan_phase_text(shown_); }

  // The plan-status report, with a blank line after it to set the blocks of a pipe apart.
  [[nodiscard]] Frame frame(std::chrono::seconds /*following*/) const override {
    Frame frame{.lines = {}, .signature = plan_watch_signature(shown_)};
    const std::string report = plan_status_report(shown_, wall_now());
    for (std::size_t start = 0; start < report.size();) {
      const std::size_t end = std::min(report.find('\n', start), report.size());
      frame.lines.push_back(report.substr(start, end - start));
      start = end + 1;
    }
    frame.lines.emplace_back();
    return frame;
  }

  [[nodiscard]] json::value json_line(std::chrono::seconds /*following*/) const override {
    return plan_watch_json(shown_);
  }

  [[nodiscard]] std::optional<int> final_status() const override {
    const std::optional<PlanWatchEnd> end = plan_watch_end(shown_);
    if (!end) return std::nullopt;
    if (end->error.empty()) return end->exit_code;
    return report(Failure{.message = end->error, .exit_code = end->exit_code});
  }

 private:
  op::MaintenancePlan shown_;
};

}  // namespace

std::unique_ptr<Followed> followed_maintenance() { return std::make_unique<FollowedMaintenance>(); }

std::unique_ptr<Followed> followed_plan() { return std::make_unique<FollowedPlan>(); }

}  // namespace nmo::cli
