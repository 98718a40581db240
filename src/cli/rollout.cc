#include "cli/rollout.h"

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

#include <boost/json/object.hpp>

#include "base/strings.h"
#include "kube/api/duration.h"
#include "kube/api/label_selector.h"

namespace nmo::cli {
namespace {

constexpr std::array<std::string_view, 7> kDays = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr std::string_view kWindowForm =
    R"(expected [DAYS ]HH:MM-HH:MM, e.g. "Sat,Sun 22:00-06:00")";

Error flag_error(std::string_view flag, std::string_view value, std::string_view why) {
  return Error(ErrorCode::kInvalid,
               std::string(flag) + " " + quoted(value, 80) + ": " + std::string(why));
}

// Where `day` is in kDays, if it is one.
std::optional<std::size_t> day_index(std::string_view day) {
  for (std::size_t i = 0; i < kDays.size(); ++i) {
    if (kDays[i] == day) return i;
  }
  return std::nullopt;
}

bool is_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "HH:MM", 00:00..23:59.
bool is_time_of_day(std::string_view text) {
  if (text.size() != 5 || text[2] != ':' || !is_digits(text.substr(0, 2)) ||
      !is_digits(text.substr(3, 2))) {
    return false;
  }
  return std::stoi(std::string(text.substr(0, 2))) < 24 &&
         std::stoi(std::string(text.substr(3, 2))) < 60;
}

// "Mon-Fri,Sun" -> {"Mon", "Tue", "Wed", "Thu", "Fri", "Sun"}: ranges run forward through the
// week ("Sat-Mon" is Sat, Sun, Mon); a day named twice is listed once.
Result<std::vector<std::string>> parse_days(std::string_view flag, std::string_view window,
                                            std::string_view text) {
  std::array<bool, kDays.size()> chosen{};
  for (const std::string_view part : split(text, ',')) {
    const std::size_t dash = part.find('-');
    const std::string_view first = trim(part.substr(0, dash));
    const std::string_view last =
        dash == std::string_view::npos ? first : trim(part.substr(dash + 1));
    const std::optional<std::size_t> from = day_index(first);
    const std::optional<std::size_t> to = day_index(last);
    if (!from || !to) {
      return flag_error(
          flag, window,
          "unknown day " + quoted(from ? last : first, 20) +
              " (days are Mon, Tue, Wed, Thu, Fri, Sat, Sun, or ranges like Mon-Fri)");
    }
    for (std::size_t day = *from;; day = (day + 1) % kDays.size()) {
      chosen[day] = true;
      if (day == *to) break;
    }
  }
  std::vector<std::string> days;
  for (std::size_t i = 0; i < kDays.size(); ++i) {
    if (chosen[i]) days.emplace_back(kDays[i]);
  }
  return days;
}

Result<op::PlanWindow> parse_window(std::string_view text) {
  constexpr std::string_view kFlag = "--window";
  const std::string_view trimmed = trim(text);
  const std::size_t space = trimmed.rfind(' ');
  const std::string_view times =
      space == std::string_view::npos ? trimmed : trimmed.substr(space + 1);
  const std::size_t dash = times.find('-');
  if (dash == std::string_view::npos || !is_time_of_day(times.substr(0, dash)) ||
      !is_time_of_day(times.substr(dash + 1))) {
    return flag_error(kFlag, text, kWindowForm);
  }
  op::PlanWindow window;
  window.start = std::string(times.substr(0, dash));
  window.end = std::string(times.substr(dash + 1));
  if (space != std::string_view::npos) {
    NMO_TRY_ASSIGN(window.days, parse_days(kFlag, text, trim(trimmed.substr(0, space))));
  }
  return window;
}

// "YYYY-MM-DD", a real date.
bool is_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-' || !is_digits(text.substr(0, 4)) ||
      !is_digits(text.substr(5, 2)) || !is_digits(text.substr(8, 2))) {
    return false;
  }
  const std::chrono::year_month_day date{
      std::chrono::year(std::stoi(std::string(text.substr(0, 4)))),
      std::chrono::month(static_cast<unsigned>(std::stoi(std::string(text.substr(5, 2))))),
      std::chrono::day(static_cast<unsigned>(std::stoi(std::string(text.substr(8, 2)))))};
  return date.ok();
}

// "3" or "25%" (a percentage from 1 to 100); unset when empty.
Result<std::optional<kube::IntOrString>> parse_limit(std::string_view flag, std::string_view text) {
  if (text.empty()) return std::optional<kube::IntOrString>();
  constexpr std::string_view kForm = "expected a count or a percentage, e.g. 2 or 25%";
  if (text.back() == '%') {
    const std::string_view number = text.substr(0, text.size() - 1);
    if (!is_digits(number) || number.size() > 3 || std::stoi(std::string(number)) < 1 ||
        std::stoi(std::string(number)) > 100) {
      return flag_error(flag, text, kForm);
    }
    return std::optional(kube::IntOrString::from_string(std::string(text)));
  }
  if (!is_digits(text) || text.size() > 6 || std::stoi(std::string(text)) < 1) {
    return flag_error(flag, text, kForm);
  }
  return std::optional(kube::IntOrString::from_int(std::stoi(std::string(text))));
}

Result<void> check_duration(std::string_view flag, const std::string& text) {
  if (text.empty()) return {};
  if (auto parsed = kube::parse_duration(text); !parsed) {
    return flag_error(flag, text, parsed.error().message);
  }
  return {};
}

template <typename Enum, std::size_t N>
Result<std::optional<Enum>> parse_choice(
    std::string_view flag, std::string_view text,
    const std::array<std::pair<std::string_view, Enum>, N>& choices) {
  if (text.empty()) return std::optional<Enum>();
  std::vector<std::string> names;
  for (const auto& [name, value] : choices) {
    if (name == text) return std::optional(value);
    names.emplace_back(name);
  }
  return flag_error(flag, text, "expected one of " + join(names, ", "));
}

std::string limit_text(const std::optional<kube::IntOrString>& limit) {
  return limit ? limit->to_string() : "1";
}

}  // namespace

Result<op::MaintenancePlanSpec> rollout_spec(const RolloutFlags& flags) {
  op::MaintenancePlanSpec spec;
  for (const std::string& list : flags.nodes) {
    for (const std::string_view node : split(list, ',')) {
      const std::string_view name = trim(node);
      if (!name.empty()) spec.nodes.emplace_back(name);
    }
  }
  if (spec.nodes.empty() == flags.selector.empty()) {
    return Error(ErrorCode::kInvalid,
                 "exactly one of --nodes and --selector: the nodes to take out, by name or by "
                 "label");
  }
  if (!flags.selector.empty()) {
    auto selector = kube::parse_selector(flags.selector);
    if (!selector) return flag_error("--selector", flags.selector, selector.error().message);
    if (selector->empty()) {
      return flag_error("--selector", flags.selector, "selects every node; name labels to match");
    }
    spec.node_selector = std::move(*selector);
  }
  constexpr std::array<std::pair<std::string_view, op::PlanOrder>, 3> kOrders = {
      {{"AsListed", op::PlanOrder::kAsListed},
       {"ByName", op::PlanOrder::kByName},
       {"ByZone", op::PlanOrder::kByZone}}};
  NMO_TRY_ASSIGN(spec.order, parse_choice("--order", flags.order, kOrders));
  if (spec.order == op::PlanOrder::kAsListed && spec.nodes.empty()) {
    return flag_error("--order", flags.order,
                      "needs --nodes: a selector's nodes have no list order");
  }
  spec.reason = flags.reason;
  NMO_TRY_ASSIGN(spec.max_parallel, parse_limit("--max-parallel", flags.max_parallel));
  NMO_TRY_ASSIGN(spec.max_unavailable, parse_limit("--max-unavailable", flags.max_unavailable));
  for (const std::string& text : flags.windows) {
    NMO_TRY_ASSIGN(op::PlanWindow window, parse_window(text));
    spec.windows.push_back(std::move(window));
  }
  spec.time_zone = flags.time_zone;
  for (const std::string& date : flags.blackout_dates) {
    if (!is_date(date)) return flag_error("--blackout", date, "expected a date YYYY-MM-DD");
    spec.blackout_dates.push_back(date);
  }
  constexpr std::array<std::pair<std::string_view, op::WindowClose>, 2> kWindowClose = {
      {{"Finish", op::WindowClose::kFinish}, {"Pause", op::WindowClose::kPause}}};
  NMO_TRY_ASSIGN(spec.on_window_close,
                 parse_choice("--on-window-close", flags.on_window_close, kWindowClose));
  if (spec.on_window_close && spec.windows.empty()) {
    return Error(ErrorCode::kInvalid, "--on-window-close goes with --window");
  }
  constexpr std::array<std::pair<std::string_view, op::DoneWhen>, 3> kDoneWhen = {
      {{"Confirmed", op::DoneWhen::kConfirmed},
       {"NodeRebooted", op::DoneWhen::kNodeRebooted},
       {"Soaked", op::DoneWhen::kSoaked}}};
  NMO_TRY_ASSIGN(spec.done_when, parse_choice("--done-when", flags.done_when, kDoneWhen));
  NMO_TRY(check_duration("--soak-time", flags.soak_time));
  if ((spec.done_when == op::DoneWhen::kSoaked) == flags.soak_time.empty()) {
    return Error(ErrorCode::kInvalid,
                 "--soak-time goes with --done-when Soaked, and Soaked needs --soak-time");
  }
  spec.soak_time = flags.soak_time;
  NMO_TRY(check_duration("--health-gate-timeout", flags.health_gate_timeout));
  spec.health_gate_timeout = flags.health_gate_timeout;
  spec.paused = flags.paused;
  return spec;
}

boost::json::object rollout_object(const std::string& name, const op::MaintenancePlanSpec& spec) {
  return boost::json::object{{"apiVersion", op::kPlanApiVersion},
                             {"kind", op::kPlanKind},
                             {"metadata", boost::json::object{{"name", name}}},
                             {"spec", op::encode_plan_spec(spec)}};
}

std::string rollout_confirmation(const std::string& name, const op::MaintenancePlanSpec& spec,
                                 bool dry_run) {
  std::vector<std::string> parts;
  if (spec.node_selector) {
    parts.push_back("nodes by selector " + spec.node_selector->to_query());
  } else {
    parts.push_back(std::to_string(spec.nodes.size()) +
                    (spec.nodes.size() == 1 ? " node" : " nodes") + " (" + join(spec.nodes, ", ") +
                    ")");
  }
  const op::PlanOrder order =
      spec.order.value_or(spec.nodes.empty() ? op::PlanOrder::kByName : op::PlanOrder::kAsListed);
  parts.emplace_back(order == op::PlanOrder::kAsListed ? "in the order listed"
                     : order == op::PlanOrder::kByName ? "by name"
                                                       : "zone by zone");
  parts.push_back(limit_text(spec.max_parallel) + " at a time");
  if (spec.max_unavailable) {
    parts.push_back("at most " + spec.max_unavailable->to_string() + " unavailable");
  }
  if (spec.windows.empty()) {
    parts.emplace_back("any time");
  } else {
    std::vector<std::string> windows;
    for (const op::PlanWindow& window : spec.windows) {
      windows.push_back((window.days.empty() ? "daily" : join(window.days, ",")) + " " +
                        window.start + "-" + window.end);
    }
    parts.push_back((windows.size() == 1 ? "window " : "windows ") + join(windows, "; ") + " (" +
                    (spec.time_zone.empty() ? std::string("UTC") : spec.time_zone) + ")");
    if (spec.on_window_close == op::WindowClose::kPause) {
      parts.emplace_back("a drain under way held when the window closes");
    }
  }
  if (!spec.blackout_dates.empty()) {
    parts.push_back("never on " + join(spec.blackout_dates, ", "));
  }
  switch (spec.done_when.value_or(op::DoneWhen::kConfirmed)) {
    case op::DoneWhen::kConfirmed:
      parts.emplace_back("each node done when confirmed (kubectl maintenance done NODE)");
      break;
    case op::DoneWhen::kNodeRebooted:
      parts.emplace_back("each node done once rebooted and Ready");
      break;
    case op::DoneWhen::kSoaked:
      parts.push_back("each node done " + spec.soak_time + " after its drain");
      break;
  }
  std::string out =
      "maintenanceplan/" + name +
      (dry_run ? " accepted by the API server (dry run, nothing created): " : " created: ") +
      join(parts, ", ") + "\n";
  if (dry_run) return out;
  if (spec.paused) {
    out +=
        "it is paused: nothing starts until spec.paused is false (kubectl patch "
        "maintenanceplan " +
        name + " --type merge -p '{\"spec\":{\"paused\":false}}')\n";
  }
  out += "follow it: kubectl maintenance plan-status " + name + "\n";
  return out;
}

}  // namespace nmo::cli
