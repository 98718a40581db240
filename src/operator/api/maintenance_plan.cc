#include "operator/api/maintenance_plan.h"

#include <array>
#include <cstddef>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"
#include "operator/api/internal/enum_names.h"

namespace nmo::op {
namespace {

using internal::parse_enum;
using kube::internal::FieldPath;
using kube::internal::get_array;
using kube::internal::get_bool;
using kube::internal::get_object;
using kube::internal::get_optional_time;
using kube::internal::get_string;
using kube::internal::get_string_list;

constexpr std::array<std::string_view, 3> kOrderNames = {"AsListed", "ByName", "ByZone"};
constexpr std::array<std::string_view, 3> kDoneWhenNames = {"Confirmed", "NodeRebooted", "Soaked"};
constexpr std::array<std::string_view, 2> kWindowCloseNames = {"Finish", "Pause"};
constexpr std::array<std::string_view, 7> kNodePhaseNames = {
    "Waiting", "Draining", "InMaintenance", "Restoring", "HealthCheck", "Done", "Failed"};
constexpr std::array<std::string_view, 5> kPlanPhaseNames = {"Running", "WaitingForWindow",
                                                             "Paused", "Succeeded", "Failed"};

// Every top-level field encode_plan_status() may write, for plan_status_merge_patch()'s nulls.
constexpr std::array<std::string_view, 15> kStatusFields = {
    "phase",      "observedGeneration", "total",      "done",           "inProgress", "waiting",
    "failed",     "currentNodes",       "nextWindow", "nextWindowText", "eta",        "message",
    "conditions", "stopToken",          "nodes"};

// An enum field of the spec that must not make decoding fail: its error is kept for the
// controller to report (see MaintenancePlanSpec).
template <typename Enum, std::size_t N>
Result<void> decode_lenient_enum(const boost::json::object& spec, std::string_view key,
                                 const FieldPath& path,
                                 const std::array<std::string_view, N>& names,
                                 std::string_view what, std::optional<Enum>& value,
                                 std::string& error) {
  NMO_TRY_ASSIGN(const std::string text, get_string(spec, key, path));
  if (text.empty()) {
    return {};
  }
  Result<Enum> parsed = parse_enum<Enum>(text, names, what);
  if (parsed.has_value()) {
    value = *parsed;
  } else {
    error = path.field(key).str() + ": " + parsed.error().message;
  }
  return {};
}

Result<MaintenancePlanSpec> decode_spec(const boost::json::object& spec, const FieldPath& path) {
  MaintenancePlanSpec out;
  NMO_TRY_ASSIGN(out.nodes, get_string_list(spec, "nodes", path));
  if (const boost::json::value* selector = kube::internal::find_field(spec, "nodeSelector")) {
    NMO_TRY_ASSIGN(kube::LabelSelector decoded,
                   kube::internal::decode_label_selector_at(*selector, path.field("nodeSelector")));
    out.node_selector = std::move(decoded);
  }
  NMO_TRY(decode_lenient_enum<PlanOrder>(spec, "order", path, kOrderNames, "order", out.order,
                                         out.order_error));
  NMO_TRY_ASSIGN(out.reason, get_string(spec, "reason", path));
  NMO_TRY_ASSIGN(out.max_parallel,
                 kube::internal::get_optional_int_or_string(spec, "maxParallel", path));
  NMO_TRY_ASSIGN(out.max_unavailable,
                 kube::internal::get_optional_int_or_string(spec, "maxUnavailable", path));
  NMO_TRY_ASSIGN(out.time_zone, get_string(spec, "timeZone", path));
  NMO_TRY_ASSIGN(const boost::json::array* windows, get_array(spec, "windows", path));
  if (windows != nullptr) {
    const FieldPath windows_path = path.field("windows");
    for (std::size_t i = 0; i < windows->size(); ++i) {
      const FieldPath here = windows_path.element(i);
      const boost::json::object* window = (*windows)[i].if_object();
      if (window == nullptr) {
        return kube::internal::type_error(here, "an object", (*windows)[i]);
      }
      PlanWindow decoded;
      NMO_TRY_ASSIGN(decoded.days, get_string_list(*window, "days", here));
      NMO_TRY_ASSIGN(decoded.start, get_string(*window, "start", here));
      NMO_TRY_ASSIGN(decoded.end, get_string(*window, "end", here));
      out.windows.push_back(std::move(decoded));
    }
  }
  NMO_TRY_ASSIGN(out.blackout_dates, get_string_list(spec, "blackoutDates", path));
  NMO_TRY(decode_lenient_enum<WindowClose>(spec, "onWindowClose", path, kWindowCloseNames,
                                           "onWindowClose value", out.on_window_close,
                                           out.on_window_close_error));
  NMO_TRY(decode_lenient_enum<DoneWhen>(spec, "doneWhen", path, kDoneWhenNames, "doneWhen value",
                                        out.done_when, out.done_when_error));
  NMO_TRY_ASSIGN(out.soak_time, get_string(spec, "soakTime", path));
  NMO_TRY_ASSIGN(out.health_gate_timeout, get_string(spec, "healthGateTimeout", path));
  NMO_TRY_ASSIGN(out.paused, get_bool(spec, "paused", path));
  return out;
}

Result<PlanNodeStatus> decode_node_status(const boost::json::value& value, const FieldPath& path) {
  const boost::json::object* node = value.if_object();
  if (node == nullptr) {
    return kube::internal::type_error(path, "an object", value);
  }
  PlanNodeStatus out;
  NMO_TRY_ASSIGN(out.name, get_string(*node, "name", path));
  NMO_TRY_ASSIGN(const std::string phase, get_string(*node, "phase", path));
  if (!phase.empty()) {
    Result<PlanNodePhase> parsed = parse_enum<PlanNodePhase>(phase, kNodePhaseNames, "phase");
    if (!parsed.has_value()) {
      return kube::internal::field_error(path.field("phase"), parsed.error().message);
    }
    out.phase = *parsed;
  }
  NMO_TRY_ASSIGN(out.maintenance, get_string(*node, "maintenance", path));
  NMO_TRY_ASSIGN(out.boot_id, get_string(*node, "bootID", path));
  NMO_TRY_ASSIGN(out.budgets, get_string_list(*node, "budgets", path));
  NMO_TRY_ASSIGN(out.vms, get_string_list(*node, "vms", path));
  NMO_TRY_ASSIGN(out.started_at, get_optional_time(*node, "startedAt", path));
  NMO_TRY_ASSIGN(out.drained_at, get_optional_time(*node, "drainedAt", path));
  NMO_TRY_ASSIGN(out.completed_at, get_optional_time(*node, "completedAt", path));
  NMO_TRY_ASSIGN(out.restored_at, get_optional_time(*node, "restoredAt", path));
  NMO_TRY_ASSIGN(out.gate_started_at, get_optional_time(*node, "gateStartedAt", path));
  NMO_TRY_ASSIGN(out.finished_at, get_optional_time(*node, "finishedAt", path));
  NMO_TRY_ASSIGN(out.message, get_string(*node, "message", path));
  NMO_TRY_ASSIGN(out.took_seconds,
                 kube::internal::get_int<std::int64_t>(*node, "tookSeconds", path));
  return out;
}

Result<MaintenancePlanStatus> decode_status(const boost::json::object& status,
                                            const FieldPath& path) {
  MaintenancePlanStatus out;
  NMO_TRY_ASSIGN(const std::string phase, get_string(status, "phase", path));
  if (!phase.empty()) {
    Result<PlanPhase> parsed = parse_enum<PlanPhase>(phase, kPlanPhaseNames, "phase");
    if (!parsed.has_value()) {
      return kube::internal::field_error(path.field("phase"), parsed.error().message);
    }
    out.phase = *parsed;
  }
  using kube::internal::get_int;
  NMO_TRY_ASSIGN(out.observed_generation,
                 get_int<std::int64_t>(status, "observedGeneration", path));
  NMO_TRY_ASSIGN(out.total, get_int<std::int64_t>(status, "total", path));
  NMO_TRY_ASSIGN(out.done, get_int<std::int64_t>(status, "done", path));
  NMO_TRY_ASSIGN(out.in_progress, get_int<std::int64_t>(status, "inProgress", path));
  NMO_TRY_ASSIGN(out.waiting, get_int<std::int64_t>(status, "waiting", path));
  NMO_TRY_ASSIGN(out.failed, get_int<std::int64_t>(status, "failed", path));
  NMO_TRY_ASSIGN(out.current_nodes, get_string_list(status, "currentNodes", path));
  NMO_TRY_ASSIGN(out.next_window, get_optional_time(status, "nextWindow", path));
  NMO_TRY_ASSIGN(out.next_window_text, get_string(status, "nextWindowText", path));
  NMO_TRY_ASSIGN(out.eta, get_optional_time(status, "eta", path));
  NMO_TRY_ASSIGN(out.message, get_string(status, "message", path));
  NMO_TRY_ASSIGN(const boost::json::array* conditions, get_array(status, "conditions", path));
  if (conditions != nullptr) {
    const FieldPath conditions_path = path.field("conditions");
    for (std::size_t i = 0; i < conditions->size(); ++i) {
      NMO_TRY_ASSIGN(kube::Condition condition, kube::internal::decode_condition_at(
                                                    (*conditions)[i], conditions_path.element(i)));
      out.conditions.push_back(std::move(condition));
    }
  }
  NMO_TRY_ASSIGN(out.stop_token, get_string(status, "stopToken", path));
  NMO_TRY_ASSIGN(const boost::json::array* nodes, get_array(status, "nodes", path));
  if (nodes != nullptr) {
    const FieldPath nodes_path = path.field("nodes");
    out.nodes.reserve(nodes->size());
    for (std::size_t i = 0; i < nodes->size(); ++i) {
      NMO_TRY_ASSIGN(PlanNodeStatus node, decode_node_status((*nodes)[i], nodes_path.element(i)));
      out.nodes.push_back(std::move(node));
    }
  }
  return out;
}

boost::json::array string_array(const std::vector<std::string>& values) {
  boost::json::array out;
  out.reserve(values.size());
  for (const std::string& value : values) {
    out.emplace_back(value);
  }
  return out;
}

void put_time(boost::json::object& out, std::string_view key,
              const std::optional<kube::Time>& time) {
  if (time.has_value()) {
    out[key] = kube::format_time(*time);
  }
}

void put_string(boost::json::object& out, std::string_view key, const std::string& value) {
  if (!value.empty()) {
    out[key] = value;
  }
}

void put_int_or_string(boost::json::object& out, std::string_view key,
                       const std::optional<kube::IntOrString>& value) {
  if (!value.has_value()) {
    return;
  }
  if (value->is_int) {
    out[key] = value->int_value;
  } else {
    out[key] = value->str_value;
  }
}

boost::json::object encode_node_status(const PlanNodeStatus& node) {
  boost::json::object out;
  out["name"] = node.name;
  out["phase"] = to_string(node.phase);
  put_string(out, "maintenance", node.maintenance);
  put_string(out, "bootID", node.boot_id);
  if (!node.budgets.empty()) {
    out["budgets"] = string_array(node.budgets);
  }
  if (!node.vms.empty()) {
    out["vms"] = string_array(node.vms);
  }
  put_time(out, "startedAt", node.started_at);
  put_time(out, "drainedAt", node.drained_at);
  put_time(out, "completedAt", node.completed_at);
  put_time(out, "restoredAt", node.restored_at);
  put_time(out, "gateStartedAt", node.gate_started_at);
  put_time(out, "finishedAt", node.finished_at);
  put_string(out, "message", node.message);
  if (node.took_seconds != 0) {
    out["tookSeconds"] = node.took_seconds;
  }
  return out;
}

}  // namespace

std::string_view to_string(PlanOrder order) noexcept {
  return kOrderNames[static_cast<std::size_t>(order)];
}

std::string_view to_string(DoneWhen done) noexcept {
  return kDoneWhenNames[static_cast<std::size_t>(done)];
}

std::string_view to_string(WindowClose close) noexcept {
  return kWindowCloseNames[static_cast<std::size_t>(close)];
}

std::string_view to_string(PlanNodePhase phase) noexcept {
  return kNodePhaseNames[static_cast<std::size_t>(phase)];
}

std::string_view to_string(PlanPhase phase) noexcept {
  return kPlanPhaseNames[static_cast<std::size_t>(phase)];
}

Result<MaintenancePlan> decode_maintenance_plan(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* root,
                 kube::internal::object_of_kind(object, kPlanKind));
  MaintenancePlan out;
  NMO_TRY_ASSIGN(out.meta, kube::decode_meta(object));
  const FieldPath root_path;
  const FieldPath spec_path = root_path.field("spec");
  NMO_TRY_ASSIGN(const boost::json::object* spec, get_object(*root, "spec", root_path));
  if (spec != nullptr) {
    NMO_TRY_ASSIGN(out.spec, decode_spec(*spec, spec_path));
  }
  const FieldPath status_path = root_path.field("status");
  NMO_TRY_ASSIGN(const boost::json::object* status, get_object(*root, "status", root_path));
  if (status != nullptr) {
    NMO_TRY_ASSIGN(out.status, decode_status(*status, status_path));
  }
  return out;
}

bool plan_stopped(const MaintenancePlanStatus& status) noexcept {
  const kube::Condition* stopped = kube::find_condition(status.conditions, kStoppedCondition);
  return stopped != nullptr && stopped->status == kube::ConditionStatus::kTrue;
}

boost::json::object encode_plan_spec(const MaintenancePlanSpec& spec) {
  boost::json::object out;
  if (!spec.nodes.empty()) {
    out["nodes"] = string_array(spec.nodes);
  }
  if (spec.node_selector.has_value()) {
    out["nodeSelector"] = kube::encode_label_selector(*spec.node_selector);
  }
  if (spec.order.has_value()) {
    out["order"] = to_string(*spec.order);
  }
  put_string(out, "reason", spec.reason);
  put_int_or_string(out, "maxParallel", spec.max_parallel);
  put_int_or_string(out, "maxUnavailable", spec.max_unavailable);
  put_string(out, "timeZone", spec.time_zone);
  if (!spec.windows.empty()) {
    boost::json::array windows;
    windows.reserve(spec.windows.size());
    for (const PlanWindow& window : spec.windows) {
      boost::json::object encoded;
      if (!window.days.empty()) {
        encoded["days"] = string_array(window.days);
      }
      encoded["start"] = window.start;
      encoded["end"] = window.end;
      windows.emplace_back(std::move(encoded));
    }
    out["windows"] = std::move(windows);
  }
  if (!spec.blackout_dates.empty()) {
    out["blackoutDates"] = string_array(spec.blackout_dates);
  }
  if (spec.on_window_close.has_value()) {
    out["onWindowClose"] = to_string(*spec.on_window_close);
  }
  if (spec.done_when.has_value()) {
    out["doneWhen"] = to_string(*spec.done_when);
  }
  put_string(out, "soakTime", spec.soak_time);
  put_string(out, "healthGateTimeout", spec.health_gate_timeout);
  if (spec.paused) {
    out["paused"] = true;
  }
  return out;
}

boost::json::object encode_plan_status(const MaintenancePlanStatus& status) {
  boost::json::object out;
  if (status.phase.has_value()) {
    out["phase"] = to_string(*status.phase);
  }
  out["observedGeneration"] = status.observed_generation;
  out["total"] = status.total;
  out["done"] = status.done;
  out["inProgress"] = status.in_progress;
  out["waiting"] = status.waiting;
  out["failed"] = status.failed;
  if (!status.current_nodes.empty()) {
    out["currentNodes"] = string_array(status.current_nodes);
  }
  put_time(out, "nextWindow", status.next_window);
  put_string(out, "nextWindowText", status.next_window_text);
  put_time(out, "eta", status.eta);
  put_string(out, "message", status.message);
  if (!status.conditions.empty()) {
    boost::json::array conditions;
    for (const kube::Condition& condition : status.conditions) {
      conditions.emplace_back(kube::encode_condition(condition));
    }
    out["conditions"] = std::move(conditions);
  }
  put_string(out, "stopToken", status.stop_token);
  if (!status.nodes.empty()) {
    boost::json::array nodes;
    nodes.reserve(status.nodes.size());
    for (const PlanNodeStatus& node : status.nodes) {
      nodes.emplace_back(encode_node_status(node));
    }
    out["nodes"] = std::move(nodes);
  }
  return out;
}

boost::json::object plan_status_merge_patch(const MaintenancePlanStatus& status) {
  boost::json::object fields = encode_plan_status(status);
  for (const std::string_view field : kStatusFields) {
    if (!fields.contains(field)) {
      fields[field] = nullptr;
    }
  }
  boost::json::object patch;
  patch["status"] = std::move(fields);
  return patch;
}

}  // namespace nmo::op
