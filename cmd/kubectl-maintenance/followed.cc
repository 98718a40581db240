#include "followed.h"

#include <utility>

#include <boost/json.hpp>

#include "cli/exit_code.h"
#include "cli/maintenance_text.h"
#include "cli/maintenance_watch.h"
#include "cli/plan_status_text.h"
#include "cli/plan_watch.h"
#include "console.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;

using kube::wall_now;

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
    maintenance_.keep(std::move((*found)->nm));
    co_return Done{};
  }

  [[nodiscard]] Result<void> take(const json::value& object) override {
    NMO_TRY_ASSIGN(op::NodeMaintenance nm, op::decode_node_maintenance(object));
    maintenance_.keep(std::move(nm));
    return {};
  }

  [[nodiscard]] std::string resource_version() const override {
    return maintenance_.shown().meta.resource_version;
  }
  [[nodiscard]] std::string phase() const override { return phase_text(maintenance_.shown()); }

  [[nodiscard]] Frame frame(std::chrono::seconds following) const override {
    return maintenance_watch_frame(maintenance_.shown(), elapsed(following));
  }

  [[nodiscard]] json::value json_line(std::chrono::seconds following) const override {
    return maintenance_watch_json(maintenance_.shown(), elapsed(following));
  }

  [[nodiscard]] std::optional<int> final_status() const override {
    const std::optional<MaintenanceWatchEnd> end = maintenance_watch_end(maintenance_.shown());
    if (!end) return std::nullopt;
    if (end->error.empty()) return end->exit_code;
    return report(Failure{.message = end->error, .exit_code = end->exit_code});
  }

 private:
  [[nodiscard]] std::chrono::seconds elapsed(std::chrono::seconds following) const {
    return maintenance_elapsed(maintenance_.shown(), following, wall_now());
  }

  MaintenanceHighWater maintenance_;
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
    Frame frame{.lines = split_lines(plan_status_report(shown_, wall_now())),
                .signature = plan_watch_signature(shown_)};
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
