#include "operator/controller/actions.h"

#include <algorithm>

namespace nmo::op {
namespace {

std::string ms(Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

std::string phase_name(const NodeMaintenanceStatus& status) {
  return status.phase ? std::string(to_string(*status.phase)) : "-";
}

// The describe() of each kind; `now` for those that carry a time.
struct Describer {
  Clock::time_point now;

  std::string operator()(const actions::AddFinalizer&) const { return "AddFinalizer"; }
  std::string operator()(const actions::WriteStatus& a) const {
    return "WriteStatus(" + phase_name(a.status) + (a.wake_for_delayed_write ? "" : ", no wake") +
           ")";
  }
  std::string operator()(const actions::Believe& a) const {
    return "Believe(" + phase_name(a.status) + ")";
  }
  std::string operator()(const actions::Announce& a) const {
    return "Announce(" + a.event.reason + ")";
  }
  std::string operator()(const actions::EmitEvent& a) const {
    return "Event(" + a.event.reason + (a.on_node ? " on Node" : "") +
           (a.pod ? " about " + a.pod->meta.name : "") + ")";
  }
  std::string operator()(const actions::Cordon& a) const {
    return a.event_if_changed ? "Cordon(then " + a.event_if_changed->reason + ")" : "Cordon";
  }
  std::string operator()(const actions::RestoreNode& a) const {
    return a.for_removal ? "RestoreNode(for removal)" : "RestoreNode";
  }
  std::string operator()(const actions::TakeSlot&) const { return "TakeSlot"; }
  std::string operator()(const actions::ReleaseSlot&) const { return "ReleaseSlot"; }
  std::string operator()(const actions::TakeNodeLease&) const { return "TakeNodeLease"; }
  std::string operator()(const actions::RenewNodeLease&) const { return "RenewNodeLease"; }
  std::string operator()(const actions::ReleaseNodeLease&) const { return "ReleaseNodeLease"; }
  std::string operator()(const actions::StopEvictions&) const { return "StopEvictions"; }
  std::string operator()(const actions::ResetEvictions&) const { return "ResetEvictions"; }
  std::string operator()(const actions::StartEviction& a) const {
    return "StartEviction(" + a.pod.meta.name +
           (a.budget_allowed_for ? ", budget allows since " + ms(*a.budget_allowed_for) : "") + ")";
  }
  std::string operator()(const actions::CreateMigration& a) const {
    return "CreateMigration(" + a.request.name + ")";
  }
  std::string operator()(const actions::MigrationEnded& a) const {
    return a.succeeded ? "MigrationEnded(succeeded)" : "MigrationEnded(failed)";
  }
  std::string operator()(const actions::CancelMigrations& a) const {
    return a.for_removal ? "CancelMigrations(for removal)" : "CancelMigrations";
  }
  std::string operator()(const actions::WakeAfter& a) const {
    return "WakeAfter(" + ms(a.after) + ")";
  }
  std::string operator()(const actions::DrainCompleted& a) const {
    return "DrainCompleted(" + ms(a.took) + ")";
  }
  std::string operator()(const actions::ForgetQuorum&) const { return "ForgetQuorum"; }
  std::string operator()(const actions::RemoveFinalizer&) const { return "RemoveFinalizer"; }
  std::string operator()(const actions::Log& a) const { return "Log(" + a.note.message + ")"; }
  std::string operator()(const actions::Requeue& a) const {
    return "Requeue(+" + ms(a.at - now) + ")";
  }
};

}  // namespace

bool operator==(const LogNote& a, const LogNote& b) {
  const auto same_field = [](const log::Field& x, const log::Field& y) {
    return x.key == y.key && x.value == y.value && x.raw == y.raw;
  };
  return a.level == b.level && a.message == b.message &&
         std::equal(a.fields.begin(), a.fields.end(), b.fields.begin(), b.fields.end(), same_field);
}

std::string describe(const Action& action, Clock::time_point now) {
  return std::visit(Describer{.now = now}, action);
}

}  // namespace nmo::op
