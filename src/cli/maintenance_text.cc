#include "cli/maintenance_text.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "cli/text.h"
#include "operator/node/lifecycle_conditions.h"

namespace nmo::cli {

namespace {

bool is_blocked_reason(const std::optional<op::PendingPodReason>& reason) {
  return reason && *reason != op::PendingPodReason::kEvicting &&
         *reason != op::PendingPodReason::kWaitingForTermination;
}

std::string age_of(const op::NodeMaintenance& nm, kube::Time now) {
  if (!nm.meta.creation_timestamp) return "<unknown>";
  return format_age(
      std::chrono::duration_cast<std::chrono::seconds>(now - *nm.meta.creation_timestamp));
}

std::string pod_reason_text(const op::PendingPodRef& ref) {
  std::string text = ref.reason ? std::string(op::to_string(*ref.reason)) : "Pending";
  if (!ref.message.empty()) text += " (" + ref.message + ")";
  return text;
}

}  // namespace

std::string phase_text(const op::NodeMaintenance& nm) {
  return nm.status.phase ? std::string(op::to_string(*nm.status.phase)) : "New";
}

std::string blocking_summary(const op::NodeMaintenance& nm) {
  if (!nm.status.phase) return "";
  switch (*nm.status.phase) {
    case op::Phase::kPending: {
      const op::Condition* blocked =
          op::find_condition(nm.status.conditions, op::kConditionBlocked);
      if (blocked != nullptr && blocked->status == op::ConditionStatus::kTrue) {
        return blocked->message.empty() ? blocked->reason : blocked->message;
      }
      return "";
    }
    case op::Phase::kRunning: {
      std::map<std::string, int> counts;
      for (const auto& ref : nm.status.pending_pods_refs) {
        if (is_blocked_reason(ref.reason)) ++counts[std::string(op::to_string(*ref.reason))];
      }
      std::string text;
      for (const auto& [reason, count] : counts) {
        text += (text.empty() ? "" : ", ") + fmt::format("{} ({})", reason, count);
      }
      return text;
    }
    case op::Phase::kFailed:
      return nm.status.last_error;
    case op::Phase::kSucceeded:
      return "";
  }
  return "";
}

std::vector<std::string> list_header(bool wide) {
  std::vector<std::string> header{"NAME",    "NODE", "PHASE",   "PROGRESS",
                                  "PENDING", "AGE",  "BLOCKING"};
  if (wide) header.insert(header.end(), {"EVICTED", "CONDITIONS", "REASON"});
  return header;
}

std::string node_lifecycle_summary(const kube::Node& node) {
  std::string out;
  for (const kube::NodeCondition& c : op::well_known_lifecycle_conditions(node)) {
    if (c.status == "True") out += (out.empty() ? "" : ",") + c.type;
  }
  return out.empty() ? "-" : out;
}

std::vector<std::string> list_row(const op::NodeMaintenance& nm, kube::Time now, bool wide,
                                  const std::optional<kube::Node>& node) {
  const bool started = nm.status.phase && *nm.status.phase != op::Phase::kPending;
  std::vector<std::string> row{
      nm.meta.name,
      nm.spec.node_name,
      phase_text(nm),
      started ? fmt::format("{}%", nm.status.drain_progress) : "-",
      std::to_string(nm.status.pending_pods_refs.empty() ? nm.status.pending_pods.size()
                                                         : nm.status.pending_pods_refs.size()),
      age_of(nm, now),
      blocking_summary(nm)};
  if (wide) {
    row.push_back(started ? fmt::format("{}/{}", nm.status.eviction_pods, nm.status.total_pods)
                          : "-");
    row.push_back(node ? node_lifecycle_summary(*node) : "-");
    row.push_back(nm.spec.reason.empty() ? "-" : nm.spec.reason);
  }
  return row;
}

std::string status_report(const op::NodeMaintenance& nm, kube::Time now) {
  const auto& st = nm.status;
  std::string out;
  auto field = [&out](std::string_view key, const std::string& value) {
    out += fmt::format("{:<14}{}\n", std::string(key) + ":", value);
  };
  field("Name", nm.meta.name);
  field("Node", nm.spec.node_name);
  if (!nm.spec.reason.empty()) field("Reason", nm.spec.reason);
  if (!nm.spec.drain_timeout_text.empty()) field("Drain timeout", nm.spec.drain_timeout_text);
  field("Age", age_of(nm, now));
  if (nm.meta.deletion_timestamp) field("Deleting", "yes (the operator is undoing its changes)");
  field("Phase", phase_text(nm));
  if (st.phase && *st.phase != op::Phase::kPending) {
    field("Progress", fmt::format("{}% ({} of {} pods gone)", st.drain_progress, st.eviction_pods,
                                  st.total_pods));
  }
  const std::string blocking = blocking_summary(nm);
  if (!blocking.empty() && (!st.phase || *st.phase != op::Phase::kFailed)) {
    field("Blocked by", blocking);
  }
  if (!st.last_error.empty()) field("Last error", st.last_error);
  if (st.error_on_lease_count > 0) {
    field("Lease errors", std::to_string(st.error_on_lease_count));
  }
  if (st.last_update) field("Last update", kube::format_time(*st.last_update));
  if (!st.pending_pods_refs.empty()) {
    out += fmt::format("Pending pods ({}):\n", st.pending_pods_refs.size());
    for (const auto& ref : st.pending_pods_refs) {
      out += fmt::format("  {}/{}: {}\n", ref.namespace_, ref.name, pod_reason_text(ref));
    }
  } else if (!st.pending_pods.empty()) {
    out += fmt::format("Pending pods ({}):\n", st.pending_pods.size());
    for (const auto& name : st.pending_pods) out += "  " + name + "\n";
  }
  if (!st.conditions.empty()) {
    out += "Conditions:\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : st.conditions) {
      rows.push_back({c.type, std::string(op::to_string(c.status)), c.reason, c.message});
    }
    const std::string table = format_table({"TYPE", "STATUS", "REASON", "MESSAGE"}, rows);
    std::size_t start = 0;
    while (start < table.size()) {
      const std::size_t end = table.find('\n', start);
      out += "  " + table.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
  return out;
}

std::string progress_bar(std::int64_t percent, std::size_t width) {
  const std::int64_t clamped = std::clamp<std::int64_t>(percent, 0, 100);
  const auto filled = static_cast<std::size_t>(clamped) * width / 100;
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

std::string progress_line(const op::NodeMaintenance& nm, std::chrono::seconds elapsed) {
  const auto& st = nm.status;
  const bool started = st.phase && *st.phase != op::Phase::kPending;
  const std::int64_t percent = started ? st.drain_progress : 0;
  return fmt::format("{} ({})  {}  {}  {:>3}%  {}/{} pods  {}", nm.meta.name, nm.spec.node_name,
                     phase_text(nm), progress_bar(percent, 20), percent, st.eviction_pods,
                     st.total_pods, format_elapsed(elapsed));
}

std::vector<std::string> pending_lines(const op::NodeMaintenance& nm, std::size_t limit) {
  std::vector<std::string> lines;
  const auto& st = nm.status;
  if (st.phase == op::Phase::kPending || (st.phase == op::Phase::kFailed)) {
    const std::string blocking = blocking_summary(nm);
    if (!blocking.empty()) lines.push_back("  waiting: " + blocking);
  }
  const auto& refs = st.pending_pods_refs;
  for (std::size_t i = 0; i < refs.size() && i < limit; ++i) {
    lines.push_back(fmt::format("  pending {}/{}: {}", refs[i].namespace_, refs[i].name,
                                pod_reason_text(refs[i])));
  }
  if (refs.size() > limit) lines.push_back(fmt::format("  ... and {} more", refs.size() - limit));
  return lines;
}

bool is_final(const op::NodeMaintenance& nm) {
  return nm.status.phase == op::Phase::kSucceeded || nm.status.phase == op::Phase::kFailed;
}

}  // namespace nmo::cli
