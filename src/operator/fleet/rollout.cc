#include "operator/fleet/rollout.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/fnv1a.h"
#include "base/strings.h"
#include "kube/api/duration.h"

namespace nmo::op::fleet {
namespace {

using std::chrono::duration_cast;
using std::chrono::seconds;

// metadata.name of a NodeMaintenance: a DNS subdomain.
constexpr std::size_t kMaxNameLength = 253;
// Hex digits of the (plan, node) hash in a NodeMaintenance's name: 32 bits, against an accidental
// clash of two cut names; a clash is still only a wait (the plan never adopts what is not its own).
constexpr std::size_t kNameHashLength = 8;

bool in_progress(PlanNodePhase phase) {
  return phase == PlanNodePhase::kDraining || phase == PlanNodePhase::kInMaintenance ||
         phase == PlanNodePhase::kRestoring || phase == PlanNodePhase::kHealthCheck;
}

Instant to_instant(kube::Time time) { return std::chrono::floor<seconds>(time); }

kube::Time to_time(Instant instant) { return kube::Time{instant}; }

// "HH:MM" of a UTC time, for messages that say until when.
std::string clock_text(kube::Time time) {
  const std::string text = kube::format_time(time);  // 2026-12-05T14:30:00Z
  return text.substr(11, 5) + " UTC";
}

// The plan's nodes in plan order, for its first decision.
std::vector<std::string> plan_order(const MaintenancePlanSpec& spec,
                                    const std::vector<NodeFacts>& nodes) {
  const bool by_selector = spec.node_selector.has_value();
  std::map<std::string_view, const NodeFacts*, std::less<>> facts;
  for (const NodeFacts& node : nodes) {
    facts[node.name] = &node;
  }
  std::vector<std::string> out;
  for (const std::string& name : by_selector ? std::vector<std::string>{} : spec.nodes) {
    if (std::find(out.begin(), out.end(), name) == out.end()) {
      out.push_back(name);
    }
  }
  if (by_selector) {
    for (const NodeFacts& node : nodes) {
      out.push_back(node.name);
    }
  }
  const PlanOrder order =
      spec.order.value_or(by_selector ? PlanOrder::kByName : PlanOrder::kAsListed);
  if (order == PlanOrder::kAsListed && !by_selector) {
    return out;
  }
  // Selected control-plane nodes last: they are the ones whose loss hurts most, so they go once
  // every worker has shown the procedure works. Listed ones go where the admin put them.
  const auto key = [&](const std::string& name) {
    const auto found = facts.find(name);
    const NodeFacts* node = found == facts.end() ? nullptr : found->second;
    const bool last = by_selector && node != nullptr && node->control_plane;
    const std::string_view zone =
        order == PlanOrder::kByZone && node != nullptr ? std::string_view(node->zone) : "";
    return std::tuple(last, zone, std::string_view(name));
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  return out;
}

// The decision under construction, with the world indexed.
class Step {
 public:
  Step(const MaintenancePlan& plan, const World& world, const PlanRules& rules)
      : plan_(plan), world_(world), rules_(rules) {
    for (const NodeFacts& node : world.nodes) {
      nodes_[node.name] = &node;
    }
    for (const MaintenanceFacts& maintenance : world.maintenances) {
      by_name_[maintenance.name] = &maintenance;
      if (!maintenance.owned) {
        foreign_[maintenance.node] = &maintenance;
      }
    }
    for (const BudgetFacts& budget : world.budgets) {
      budgets_[budget.key] = &budget;
    }
    for (const VmFacts& vm : world.vms) {
      vms_[vm.key] = &vm;
    }
    decision_.status = plan.status;
    stopped_ = plan_stopped(plan.status);
  }

  Decision run();

 private:
  const NodeFacts* node(const std::string& name) const {
    const auto found = nodes_.find(name);
    return found == nodes_.end() ? nullptr : found->second;
  }
  const MaintenanceFacts* maintenance(const std::string& name) const {
    const auto found = by_name_.find(name);
    return found == by_name_.end() ? nullptr : found->second;
  }
  // The NodeMaintenance `name` if it is the plan's own for `node`: it carries the plan's uid and
  // names that node. Anything else of that name is somebody else's.
  const MaintenanceFacts* ours(const std::string& name, const std::string& node) const {
    const MaintenanceFacts* facts = name.empty() ? nullptr : maintenance(name);
    return facts != nullptr && facts->owned && facts->node == node ? facts : nullptr;
  }
  // An Event on the plan; `node` names the node it is about ("" for the plan as a whole).
  void event(PlanEventReason reason, std::string message, std::string node = {}) {
    decision_.events.push_back({reason, std::move(message), std::move(node)});
  }
  // One node's next step along the path of the file comment in rollout.h; one function a phase.
  void advance(PlanNodeStatus& entry);
  void adopt(PlanNodeStatus& entry);
  // Each true when the node moved on to the next phase, which advance() then takes too.
  bool drained(PlanNodeStatus& entry, const MaintenanceFacts* facts);
  bool restored(PlanNodeStatus& entry, const MaintenanceFacts* facts);
  void wait_for_work(PlanNodeStatus& entry, const MaintenanceFacts* facts);
  void check_health(PlanNodeStatus& entry);
  void stop(std::string_view reason, std::string message);
  void resume_if_asked();
  std::string resume_hint() const {
    return "kubectl maintenance resume " + plan_.meta.name + " goes on";
  }
  void finish(PlanNodeStatus& entry, PlanNodePhase phase, std::string message);
  std::string position(const PlanNodeStatus& entry) const;
  bool work_done(const PlanNodeStatus& entry, const MaintenanceFacts& maintenance) const;
  std::string waiting_for_work(const PlanNodeStatus& entry) const;
  std::vector<std::string> gate_problems(const PlanNodeStatus& entry) const;
  bool unavailable(const PlanNodeStatus& entry) const;
  void start_nodes(int max_parallel, std::optional<int> max_unavailable);
  void hold_drains(bool window_open);
  void delete_plan();
  void summarise(bool window_open);
  // The plan's nodes in plan order into a new status, with its PlanStarted Event; false when
  // none matches (the plan fails).
  bool list_nodes();
  // status.nextWindow and its text, when the window is closed.
  void note_next_window(Instant now, bool window_open);
  // WaitingForWindow, PlanSucceeded, PlanFailed: the Event of a phase the plan just entered.
  void announce_phase();
  // When to look again: soon while something moves, at the window's edge otherwise.
  seconds next_look(Instant now, bool window_open) const;

  const MaintenancePlan& plan_;
  const World& world_;
  const PlanRules& rules_;
  std::map<std::string, const NodeFacts*, std::less<>> nodes_;
  std::map<std::string, const MaintenanceFacts*, std::less<>> by_name_;
  std::map<std::string, const MaintenanceFacts*, std::less<>> foreign_;
  std::map<std::string, const BudgetFacts*, std::less<>> budgets_;
  std::map<std::string, const VmFacts*, std::less<>> vms_;
  Decision decision_;
  std::string holdup_;     // why the next node cannot start, for status.message
  std::int64_t held_ = 0;  // drains held outside the window
  bool stopped_ = false;   // the condition Stopped is True (before this decision, or by it)
};

std::string Step::position(const PlanNodeStatus& entry) const {
  const auto& nodes = decision_.status.nodes;
  const auto index = std::find_if(nodes.begin(), nodes.end(),
                                  [&](const PlanNodeStatus& n) { return n.name == entry.name; }) -
                     nodes.begin();
  return std::to_string(index + 1) + " of " + std::to_string(nodes.size());
}

void Step::finish(PlanNodeStatus& entry, PlanNodePhase phase, std::string message) {
  entry.phase = phase;
  entry.finished_at = world_.now;
  entry.message = std::move(message);
}

void Step::stop(std::string_view reason, std::string message) {
  if (stopped_) {
    return;  // one stop at a time: its token stays what `kubectl maintenance resume` read
  }
  stopped_ = true;
  MaintenancePlanStatus& status = decision_.status;
  // A token of its own for each stop (the plan, the reason, the moment), so a resume written for
  // an earlier stop does not lift this one.
  status.stop_token = fnv1a64_hex(plan_.meta.uid + "\n" + std::string(reason) + "\n" +
                                  kube::format_time(world_.now) + "\n" + message);
  kube::set_condition(status.conditions,
                      {.type = std::string(kStoppedCondition),
                       .status = kube::ConditionStatus::kTrue,
                       .observed_generation = plan_.meta.generation,
                       .last_transition_time = {},
                       .reason = std::string(reason),
                       .message = std::move(message)},
                      world_.now);
}

void Step::resume_if_asked() {
  MaintenancePlanStatus& status = decision_.status;
  const std::string* asked = plan_.meta.annotations.find(kResumeAnnotation);
  if (!stopped_ || asked == nullptr || status.stop_token.empty() || *asked != status.stop_token) {
    return;
  }
  stopped_ = false;
  status.stop_token.clear();
  kube::set_condition(status.conditions,
                      {.type = std::string(kStoppedCondition),
                       .status = kube::ConditionStatus::kFalse,
                       .observed_generation = plan_.meta.generation,
                       .last_transition_time = {},
                       .reason = std::string(kStopResumed),
                       .message = "resumed by the annotation " + std::string(kResumeAnnotation)},
                      world_.now);
  // A node still in the health gate gets its whole timeout again.
  for (PlanNodeStatus& entry : status.nodes) {
    if (entry.phase == PlanNodePhase::kHealthCheck) {
      entry.gate_started_at = world_.now;
    }
  }
  event(PlanEventReason::kPlanResumed, "resumed (" + std::string(kResumeAnnotation) + ")");
}

bool Step::work_done(const PlanNodeStatus& entry, const MaintenanceFacts& maintenance) const {
  if (maintenance.done_marked) {
    return true;  // the admin's word counts whatever spec.doneWhen says
  }
  switch (rules_.done_when) {
    case DoneWhen::kConfirmed:
      return false;
    case DoneWhen::kNodeRebooted: {
      const NodeFacts* facts = node(entry.name);
      return facts != nullptr && facts->ready && !entry.boot_id.empty() &&
             !facts->boot_id.empty() && facts->boot_id != entry.boot_id;
    }
    case DoneWhen::kSoaked:
      return entry.drained_at.has_value() && world_.now - *entry.drained_at >= rules_.soak_time;
  }
  return false;
}

std::string Step::waiting_for_work(const PlanNodeStatus& entry) const {
  switch (rules_.done_when) {
    case DoneWhen::kConfirmed:
      return "drained; waiting for `kubectl maintenance done " + entry.name + "`";
    case DoneWhen::kNodeRebooted:
      if (entry.boot_id.empty()) {
        return "drained; the node reports no boot ID, so waiting for `kubectl maintenance done " +
               entry.name + "`";
      }
      return "drained; waiting for the node to reboot (boot ID " + entry.boot_id + ") and be Ready";
    case DoneWhen::kSoaked:
      return "drained; soaking until " +
             clock_text(entry.drained_at.value_or(world_.now) + rules_.soak_time);
  }
  return {};
}

std::vector<std::string> Step::gate_problems(const PlanNodeStatus& entry) const {
  std::vector<std::string> problems;
  const NodeFacts* facts = node(entry.name);
  if (facts == nullptr) {
    problems.push_back("node " + entry.name + " does not exist");
    return problems;
  }
  if (!facts->ready) {
    problems.push_back("node " + entry.name + " is not Ready");
  }
  if (facts->unschedulable) {
    problems.push_back("node " + entry.name + " is cordoned");
  }
  // Ready again is not healthy while Node Health Check still remediates the node (a remediation
  // not yet ended, or NHC gone with its Lease still valid): docs/design.md §10.
  if (const auto held = world_.leased_by_others.find(entry.name);
      held != world_.leased_by_others.end()) {
    problems.push_back("node " + entry.name + ": its node lease is held by " + held->second);
  }
  for (const std::string& key : entry.budgets) {
    const auto found = budgets_.find(key);
    if (found == budgets_.end()) {
      continue;  // deleted since: nothing left to wait for
    }
    const BudgetFacts& budget = *found->second;
    if (budget.current_healthy < budget.desired_healthy) {
      problems.push_back("PDB " + key + " " + std::to_string(budget.current_healthy) + " of " +
                         std::to_string(budget.desired_healthy) + " healthy");
    }
  }
  for (const std::string& key : entry.vms) {
    const auto found = vms_.find(key);
    if (found == vms_.end()) {
      continue;  // deleted since (or KubeVirt gone): nothing left to wait for
    }
    const VmFacts& vm = *found->second;
    if (vm.migrating) {
      problems.push_back("VM " + key + " is still migrating");
    } else if (!vm.phase.empty() && vm.phase != "Running") {
      problems.push_back("VM " + key + " is " + vm.phase + ", not Running");
    }
  }
  // The operator's Warnings since the node was handed back, or since the gate last timed out
  // (resuming the plan accepts what was reported before).
  const std::optional<kube::Time> since =
      entry.gate_started_at != entry.restored_at ? entry.gate_started_at : entry.completed_at;
  for (const WarningFacts& warning : world_.warnings) {
    if (warning.node == entry.name && since.has_value() && warning.last_seen >= *since) {
      problems.push_back("Warning " + warning.reason + " from the operator: " + warning.message);
    }
  }
  return problems;
}

void Step::advance(PlanNodeStatus& entry) {
  const MaintenanceFacts* facts = ours(entry.maintenance, entry.name);
  switch (entry.phase) {
    case PlanNodePhase::kWaiting:
      adopt(entry);
      return;
    case PlanNodePhase::kDraining:
      if (!drained(entry, facts)) return;
      [[fallthrough]];
    case PlanNodePhase::kInMaintenance:
      wait_for_work(entry, facts);
      return;
    case PlanNodePhase::kRestoring:
      if (!restored(entry, facts)) return;
      [[fallthrough]];
    case PlanNodePhase::kHealthCheck:
      check_health(entry);
      return;
    case PlanNodePhase::kDone:
    case PlanNodePhase::kFailed:
      return;
  }
}

void Step::adopt(PlanNodeStatus& entry) {
  // Created before a crash that lost the status write: adopt it.
  const MaintenanceFacts* mine = ours(maintenance_name(plan_.meta.name, entry.name), entry.name);
  if (mine != nullptr) {
    entry.phase = PlanNodePhase::kDraining;
    entry.maintenance = mine->name;
    entry.started_at = entry.started_at.value_or(world_.now);
    advance(entry);
  }
}

bool Step::drained(PlanNodeStatus& entry, const MaintenanceFacts* facts) {
  if (facts == nullptr || (facts->deleting && facts->phase != Phase::kSucceeded)) {
    // `kubectl maintenance stop`, or any other delete mid-drain: the node comes back
    // undrained, and the plan stops before another node starts.
    finish(entry, PlanNodePhase::kFailed,
           "NodeMaintenance " + entry.maintenance +
               " was deleted by someone else before the drain finished");
    stop(kStoppedByNodeFailure, "node " + entry.name + ": " + entry.message);
    event(PlanEventReason::kNodeFailed, "node " + entry.name + ": " + entry.message +
                                            "; the plan is stopped (" + resume_hint() +
                                            " with the next node)");
    return false;
  }
  if (facts->phase == Phase::kFailed) {
    finish(entry, PlanNodePhase::kFailed,
           "NodeMaintenance " + entry.maintenance + " failed: " + facts->last_error);
    decision_.remove.push_back(entry.maintenance);
    stop(kStoppedByNodeFailure, "node " + entry.name + ": " + entry.message);
    event(PlanEventReason::kNodeFailed, "node " + entry.name + ": " + entry.message +
                                            "; the node is given back and the plan is stopped (" +
                                            resume_hint() + " with the next node)");
    return false;
  }
  if (!facts->phase) {
    entry.message = "NodeMaintenance " + entry.maintenance + " created";
    return false;
  }
  if (facts->phase == Phase::kPending) {
    // Held by the operator's own gates: its budget (--max-parallel-maintenances, which may be
    // below the plan's maxParallel), the node lease, etcd quorum.
    entry.message = "NodeMaintenance " + entry.maintenance +
                    " is Pending, held by the operator's gates (kubectl maintenance diagnose " +
                    entry.maintenance + ")";
    return false;
  }
  if (facts->phase != Phase::kSucceeded) {
    entry.message = facts->pending_pods > 0
                        ? "draining: " + std::to_string(facts->pending_pods) + " pods left"
                        : "draining";
    return false;
  }
  entry.phase = PlanNodePhase::kInMaintenance;
  entry.drained_at = world_.now;
  event(PlanEventReason::kNodeDrained,
        "node " + entry.name + " is drained (" + position(entry) +
            "): " + waiting_for_work(entry).substr(std::string_view("drained; ").size()));
  return true;
}

void Step::wait_for_work(PlanNodeStatus& entry, const MaintenanceFacts* facts) {
  if (facts == nullptr || facts->deleting) {
    // Deleting a maintenance by hand is how an admin ends one: the work is done.
    entry.completed_at = world_.now;
    entry.phase = PlanNodePhase::kRestoring;
    entry.message = "giving the node back";
    advance(entry);
    return;
  }
  if (!work_done(entry, *facts)) {
    entry.message = waiting_for_work(entry);
    return;
  }
  entry.completed_at = world_.now;
  entry.phase = PlanNodePhase::kRestoring;
  entry.message = "giving the node back";
  decision_.remove.push_back(entry.maintenance);
  event(PlanEventReason::kNodeWorkDone,
        "node " + entry.name + ": work done; deleting NodeMaintenance " + entry.maintenance);
}

bool Step::restored(PlanNodeStatus& entry, const MaintenanceFacts* facts) {
  if (facts != nullptr) {
    if (!facts->deleting) {
      decision_.remove.push_back(entry.maintenance);
    }
    return false;
  }
  entry.restored_at = world_.now;
  entry.gate_started_at = world_.now;
  entry.phase = PlanNodePhase::kHealthCheck;
  return true;
}

void Step::check_health(PlanNodeStatus& entry) {
  const std::vector<std::string> problems = gate_problems(entry);
  if (problems.empty()) {
    const auto took = duration_cast<seconds>(world_.now - entry.started_at.value_or(world_.now));
    event(PlanEventReason::kNodeDone, "node " + entry.name + " is back and healthy (" +
                                          position(entry) + ", took " +
                                          kube::format_duration(took) + ")");
    // Only what a finished node still needs: a 10,000-node plan's status must fit in one
    // object (docs/design.md §10).
    entry = PlanNodeStatus{
        .name = std::move(entry.name), .phase = PlanNodePhase::kDone, .took_seconds = took.count()};
    return;
  }
  entry.message = "health gate: " + join(problems, "; ");
  const kube::Time since = entry.gate_started_at.value_or(world_.now);
  if (world_.now - since >= rules_.health_gate_timeout && !plan_.spec.paused && !stopped_) {
    entry.gate_started_at = world_.now;
    const std::string what = "node " + entry.name + " is not healthy " +
                             kube::format_duration(rules_.health_gate_timeout) +
                             " after it was given back (" + join(problems, "; ") + ")";
    stop(kStoppedByHealthGate, what);
    event(PlanEventReason::kHealthGateTimeout,
          what + "; the plan is stopped (once the node is healthy, " + resume_hint() + ")");
  }
}

bool Step::unavailable(const PlanNodeStatus& entry) const {
  if (in_progress(entry.phase)) {
    return true;
  }
  const NodeFacts* facts = node(entry.name);
  if (facts == nullptr) {
    return false;  // not a node of the cluster: nothing to count
  }
  return !facts->ready || facts->unschedulable || foreign_.contains(entry.name) ||
         world_.leased_by_others.contains(entry.name);
}

void Step::start_nodes(int max_parallel, std::optional<int> max_unavailable) {
  auto& nodes = decision_.status.nodes;
  int running = 0;
  int unavailable_count = 0;
  bool control_plane_running = false;
  for (const PlanNodeStatus& entry : nodes) {
    if (in_progress(entry.phase)) {
      ++running;
      const NodeFacts* facts = node(entry.name);
      control_plane_running = control_plane_running || (facts != nullptr && facts->control_plane);
    }
    if (unavailable(entry)) {
      ++unavailable_count;
    }
  }
  for (PlanNodeStatus& entry : nodes) {
    if (entry.phase != PlanNodePhase::kWaiting) {
      continue;
    }
    const NodeFacts* facts = node(entry.name);
    if (facts == nullptr) {
      finish(entry, PlanNodePhase::kFailed, "node " + entry.name + " does not exist");
      event(PlanEventReason::kNodeFailed, entry.message + "; going on with the next node");
      continue;
    }
    if (running >= max_parallel) {
      return;
    }
    if (control_plane_running || (facts->control_plane && running > 0)) {
      holdup_ = "a control-plane node is taken out alone";
      return;
    }
    const std::string wanted = maintenance_name(plan_.meta.name, entry.name);
    if (const MaintenanceFacts* taken = maintenance(wanted); taken != nullptr) {
      // Not the plan's own (advance() adopted that): somebody else's, never taken over.
      holdup_ = "NodeMaintenance " + wanted + " exists and is not this plan's (" +
                (taken->owned ? "it names node " + taken->node
                              : std::string("it carries no ") + std::string(kPlanUidAnnotation) +
                                    " of this plan") +
                "); the node waits until it is gone";
      if (entry.message != holdup_) {
        event(PlanEventReason::kNameCollision, "node " + entry.name + ": " + holdup_, entry.name);
      }
      entry.message = holdup_;
      return;
    }
    if (const auto foreign = foreign_.find(entry.name); foreign != foreign_.end()) {
      holdup_ = "node " + entry.name + " is under NodeMaintenance " + foreign->second->name +
                " of someone else";
      entry.message = holdup_;
      return;
    }
    const bool counted = unavailable(entry);
    if (max_unavailable.has_value() && !counted && unavailable_count >= *max_unavailable) {
      holdup_ = "maxUnavailable " + std::to_string(*max_unavailable) +
                " reached: " + std::to_string(unavailable_count) +
                " nodes of the plan are unavailable";
      entry.message = holdup_;
      return;
    }
    entry.phase = PlanNodePhase::kDraining;
    entry.maintenance = wanted;
    entry.boot_id = facts->boot_id;
    entry.started_at = world_.now;
    entry.message = "draining";
    decision_.create.push_back({entry.name, entry.maintenance});
    event(PlanEventReason::kNodeStarted,
          "node " + entry.name + " (" + position(entry) + "): NodeMaintenance " +
              entry.maintenance + " created",
          entry.name);
    ++running;
    if (!counted) {
      ++unavailable_count;
    }
    control_plane_running = facts->control_plane;
  }
}

void Step::hold_drains(bool window_open) {
  const bool pause = !window_open && rules_.on_window_close == WindowClose::kPause;
  const std::string& next = decision_.status.next_window_text;
  const std::string text =
      "MaintenancePlan " + plan_.meta.name + " is outside its maintenance windows until " + next;
  for (PlanNodeStatus& entry : decision_.status.nodes) {
    const MaintenanceFacts* facts = ours(entry.maintenance, entry.name);
    if (facts == nullptr || facts->deleting) {
      continue;
    }
    const bool draining = entry.phase == PlanNodePhase::kDraining &&
                          facts->phase != Phase::kSucceeded && facts->phase != Phase::kFailed;
    if (pause && draining) {
      if (facts->hold != text) {
        decision_.hold.push_back({facts->name, text});
      }
      if (facts->hold.empty()) {
        event(PlanEventReason::kNodeHeld,
              "node " + entry.name + ": drain held until the next window (" + next +
                  "); the node stays cordoned and no new eviction starts",
              entry.name);
      }
      entry.message = "drain held until the next window (" + next + ")" +
                      (entry.message.empty() || entry.message == "draining" ? std::string()
                                                                            : "; " + entry.message);
      ++held_;
    } else if (!facts->hold.empty()) {
      decision_.unhold.push_back(facts->name);
      if (draining) {
        event(PlanEventReason::kNodeResumed, "node " + entry.name + ": the drain goes on",
              entry.name);
      }
    }
  }
}

void Step::delete_plan() {
  std::vector<std::string> stopped;
  std::vector<std::string> left;
  for (PlanNodeStatus& entry : decision_.status.nodes) {
    const MaintenanceFacts* facts = ours(entry.maintenance, entry.name);
    if (facts == nullptr) {
      continue;
    }
    if (facts->phase == Phase::kSucceeded && !facts->deleting) {
      // The node is drained and may be open on a bench: handing it back now could put pods on
      // it mid-repair. It stays drained until the admin deletes its maintenance.
      decision_.release.push_back(facts->name);
      left.push_back(facts->name);
    } else if (!facts->deleting) {
      decision_.remove.push_back(facts->name);
      stopped.push_back(entry.name);
    }
  }
  decision_.remove_finalizer = true;
  std::string message = "plan deleted";
  if (!stopped.empty()) {
    message += "; drain stopped and node given back: " + join(stopped, ", ");
  }
  if (!left.empty()) {
    message += "; left drained, delete when the work is done: NodeMaintenance " + join(left, ", ");
  }
  event(PlanEventReason::kPlanDeleted, message);
}

void Step::summarise(bool window_open) {
  MaintenancePlanStatus& status = decision_.status;
  status.total = static_cast<std::int64_t>(status.nodes.size());
  status.done = status.in_progress = status.waiting = status.failed = 0;
  status.current_nodes.clear();
  std::vector<std::string> current_messages;
  std::chrono::microseconds measured{0};
  std::int64_t measured_nodes = 0;
  for (const PlanNodeStatus& entry : status.nodes) {
    switch (entry.phase) {
      case PlanNodePhase::kWaiting:
        ++status.waiting;
        break;
      case PlanNodePhase::kDone:
        ++status.done;
        if (entry.took_seconds > 0) {
          measured += seconds{entry.took_seconds};
          ++measured_nodes;
        } else if (entry.started_at.has_value() && entry.finished_at.has_value()) {
          // Written by a version that kept a Done node's times.
          measured += *entry.finished_at - *entry.started_at;
          ++measured_nodes;
        }
        break;
      case PlanNodePhase::kFailed:
        ++status.failed;
        break;
      default:
        ++status.in_progress;
        status.current_nodes.push_back(entry.name);
        current_messages.push_back(entry.name + ": " + entry.message);
        break;
    }
  }
  status.observed_generation = plan_.meta.generation;
  const bool all_finished = status.done + status.failed == status.total;
  std::string message = join(current_messages, "; ");
  if (all_finished) {
    status.phase = status.failed > 0 ? PlanPhase::kFailed : PlanPhase::kSucceeded;
    message = std::to_string(status.done) + " of " + std::to_string(status.total) + " nodes done";
    if (status.failed > 0) {
      message += ", " + std::to_string(status.failed) + " failed";
    }
  } else if (stopped_ || plan_.spec.paused) {
    status.phase = PlanPhase::kPaused;
    const kube::Condition* stopped = kube::find_condition(status.conditions, kStoppedCondition);
    const std::string why = stopped_ && stopped != nullptr
                                ? "stopped: " + stopped->message + " (kubectl maintenance resume " +
                                      plan_.meta.name + ")"
                                : "paused (spec.paused)";
    message = message.empty() ? why : why + "; " + message;
  } else if (!window_open && status.in_progress == held_) {
    // Nothing in progress, or only drains held until the window opens.
    status.phase = PlanPhase::kWaitingForWindow;
    const std::string why = "waiting for window " + status.next_window_text;
    message = message.empty() ? why : why + "; " + message;
  } else {
    status.phase = PlanPhase::kRunning;
    if (!holdup_.empty() && status.waiting > 0) {
      message = message.empty() ? "next node: " + holdup_ : message + "; next: " + holdup_;
    }
  }
  status.message = message;
  status.eta.reset();
  if (measured_nodes > 0 && !all_finished) {
    const auto per_node = measured / measured_nodes;
    const int parallel = std::max(1, static_cast<int>(status.current_nodes.size()));
    const std::int64_t rounds = (status.waiting + status.in_progress + parallel - 1) / parallel;
    status.eta = std::chrono::floor<seconds>(world_.now + per_node * rounds);
  }
}

bool Step::list_nodes() {
  MaintenancePlanStatus& status = decision_.status;
  for (std::string& name : plan_order(plan_.spec, world_.nodes)) {
    PlanNodeStatus entry;
    entry.name = std::move(name);
    status.nodes.push_back(std::move(entry));
  }
  if (status.nodes.empty()) {
    status.phase = PlanPhase::kFailed;
    status.message = "no node matches spec.nodeSelector";
    if (plan_.status.message != status.message) {
      event(PlanEventReason::kInvalidPlan, status.message);
    }
    return false;
  }
  std::vector<std::string> names;
  for (const PlanNodeStatus& entry : status.nodes) {
    names.push_back(entry.name);
  }
  event(PlanEventReason::kPlanStarted,
        std::to_string(names.size()) + " nodes, in this order: " + join(names, ", "));
  return true;
}

void Step::note_next_window(Instant now, bool window_open) {
  MaintenancePlanStatus& status = decision_.status;
  status.next_window.reset();
  status.next_window_text.clear();
  if (window_open) {
    return;
  }
  if (const std::optional<Instant> next = rules_.schedule.next_open(now)) {
    status.next_window = to_time(*next);
    status.next_window_text = rules_.schedule.describe(*next);
  } else {
    status.next_window_text = "never (every window day is a blackout date)";
  }
}

void Step::announce_phase() {
  const MaintenancePlanStatus& status = decision_.status;
  const std::optional<PlanPhase> was = plan_.status.phase;
  if (status.phase == PlanPhase::kWaitingForWindow && was != PlanPhase::kWaitingForWindow) {
    event(PlanEventReason::kWaitingForWindow, status.message);
  }
  const bool was_finished = was == PlanPhase::kSucceeded || was == PlanPhase::kFailed;
  if ((status.phase == PlanPhase::kSucceeded || status.phase == PlanPhase::kFailed) &&
      !was_finished) {
    event(status.phase == PlanPhase::kFailed ? PlanEventReason::kPlanFailed
                                             : PlanEventReason::kPlanSucceeded,
          status.message);
  }
}

seconds Step::next_look(Instant now, bool window_open) const {
  const MaintenancePlanStatus& status = decision_.status;
  if (status.in_progress > held_ || !decision_.create.empty()) {
    seconds after = world_.progress_poll;
    for (const PlanNodeStatus& entry : status.nodes) {
      if (entry.phase == PlanNodePhase::kHealthCheck) {
        after = std::min(after, seconds{kGatePoll});
      }
    }
    // A soak that ends before the next look is an edge too: the node is given back on time.
    if (rules_.done_when == DoneWhen::kSoaked) {
      for (const PlanNodeStatus& entry : status.nodes) {
        if (entry.phase != PlanNodePhase::kInMaintenance || !entry.drained_at) continue;
        const auto left =
            std::chrono::ceil<seconds>(*entry.drained_at + rules_.soak_time - world_.now);
        after = std::clamp<seconds>(left, seconds{1}, after);
      }
    }
    return after;
  }
  if (!holdup_.empty()) {
    // The next node waits on what no watch of the plan's own reports (someone else's
    // NodeMaintenance, maxUnavailable): look again soon, as while nodes are in progress.
    return world_.progress_poll;
  }
  // Otherwise at the window's edge: where it opens, or where an open one closes so that the
  // status says so.
  std::optional<Instant> edge;
  if (window_open) {
    edge = rules_.schedule.closes_at(now);
  } else if (status.next_window.has_value()) {
    edge = to_instant(*status.next_window);
  }
  if (!edge.has_value()) {
    return kIdlePoll;
  }
  const auto until = duration_cast<seconds>(*edge - now);
  return std::clamp<seconds>(until + seconds{1}, seconds{1}, kIdlePoll);
}

Decision Step::run() {
  MaintenancePlanStatus& status = decision_.status;
  if (status.nodes.empty() && !plan_.meta.deletion_timestamp.has_value() && !list_nodes()) {
    return std::move(decision_);
  }
  if (plan_.meta.deletion_timestamp.has_value()) {
    delete_plan();
    return std::move(decision_);
  }
  resume_if_asked();
  for (PlanNodeStatus& entry : status.nodes) {
    advance(entry);
  }
  const int total = static_cast<int>(status.nodes.size());
  // check_rules() resolved both limits once already; these cannot fail here.
  const int max_parallel = resolve_limit(plan_.spec.max_parallel, total, 1, "").value_or(1);
  std::optional<int> max_unavailable;
  if (plan_.spec.max_unavailable.has_value()) {
    max_unavailable = resolve_limit(plan_.spec.max_unavailable, total, 1, "").value_or(1);
  }
  const Instant now = to_instant(world_.now);
  const bool window_open = rules_.schedule.open_at(now);
  note_next_window(now, window_open);
  if (window_open && !plan_.spec.paused && !stopped_) {
    start_nodes(max_parallel, max_unavailable);
  }
  hold_drains(window_open);
  summarise(window_open);
  announce_phase();
  decision_.requeue_after = next_look(now, window_open);
  return std::move(decision_);
}

}  // namespace

std::string maintenance_name(const std::string& plan, const std::string& node) {
  // '/' is in neither name, so no two (plan, node) pairs hash the same text.
  const std::string hash = fnv1a64_hex(plan + "/" + node).substr(0, kNameHashLength);
  const std::size_t room = kMaxNameLength - plan.size() - hash.size() - 2;
  std::string part = node.substr(0, room);
  // A name must end in a letter or digit: the hash does; the part before its '-' must not end in
  // '-' or '.' after the cut either.
  while (!part.empty() && (part.back() == '-' || part.back() == '.')) {
    part.pop_back();
  }
  return plan + "-" + part + "-" + hash;
}

Result<int> resolve_limit(const std::optional<kube::IntOrString>& value, int total, int fallback,
                          std::string_view field) {
  if (!value.has_value()) {
    return fallback;
  }
  if (value->is_int) {
    if (value->int_value < 1) {
      return Error(ErrorCode::kInvalid,
                   std::string(field) + ": must be at least 1, got " + value->to_string());
    }
    return static_cast<int>(std::min<std::int64_t>(value->int_value, 1'000'000));
  }
  const std::string& text = value->str_value;
  int percent = 0;
  const char* end = text.data() + text.size();
  const auto parsed = std::from_chars(text.data(), end, percent);
  if (text.empty() || text.back() != '%' || parsed.ec != std::errc{} || parsed.ptr + 1 != end ||
      percent < 1 || percent > 100) {
    return Error(ErrorCode::kInvalid, std::string(field) + ": \"" + text +
                                          "\" is not a count or a percentage from 1% to 100%");
  }
  return std::max(1, total * percent / 100);
}

Result<PlanRules> check_rules(const MaintenancePlanSpec& spec) {
  if (spec.nodes.empty() == !spec.node_selector.has_value()) {
    return Error(ErrorCode::kInvalid, "spec: exactly one of nodes and nodeSelector must be set");
  }
  if (!spec.order_error.empty()) {
    return Error(ErrorCode::kInvalid, spec.order_error);
  }
  if (!spec.done_when_error.empty()) {
    return Error(ErrorCode::kInvalid, spec.done_when_error);
  }
  if (!spec.on_window_close_error.empty()) {
    return Error(ErrorCode::kInvalid, spec.on_window_close_error);
  }
  NMO_TRY(resolve_limit(spec.max_parallel, 1, 1, "spec.maxParallel"));
  NMO_TRY(resolve_limit(spec.max_unavailable, 1, 1, "spec.maxUnavailable"));
  ScheduleSpec schedule;
  schedule.time_zone = spec.time_zone;
  for (const PlanWindow& window : spec.windows) {
    schedule.windows.push_back({window.days, window.start, window.end});
  }
  schedule.blackout_dates = spec.blackout_dates;
  NMO_TRY_ASSIGN(Schedule compiled, Schedule::compile(schedule));
  PlanRules rules{std::move(compiled)};
  rules.done_when = spec.done_when.value_or(DoneWhen::kConfirmed);
  rules.on_window_close = spec.on_window_close.value_or(WindowClose::kFinish);
  const auto duration = [](const std::string& text, std::string_view field) -> Result<seconds> {
    Result<kube::Duration> parsed = kube::parse_duration(text);
    if (!parsed.has_value()) {
      return Error(ErrorCode::kInvalid, std::string(field) + ": " + parsed.error().message);
    }
    if (*parsed <= kube::Duration::zero()) {
      return Error(ErrorCode::kInvalid,
                   std::string(field) + ": must be longer than zero, got \"" + text + "\"");
    }
    return duration_cast<seconds>(*parsed);
  };
  if (rules.done_when == DoneWhen::kSoaked) {
    if (spec.soak_time.empty()) {
      return Error(ErrorCode::kInvalid, "spec.soakTime: required with doneWhen Soaked");
    }
    NMO_TRY_ASSIGN(rules.soak_time, duration(spec.soak_time, "spec.soakTime"));
  }
  if (!spec.health_gate_timeout.empty()) {
    NMO_TRY_ASSIGN(rules.health_gate_timeout,
                   duration(spec.health_gate_timeout, "spec.healthGateTimeout"));
  }
  return rules;
}

Decision decide(const MaintenancePlan& plan, const World& world) {
  Result<PlanRules> rules = check_rules(plan.spec);
  if (!rules.has_value()) {
    if (plan.meta.deletion_timestamp.has_value()) {
      // A spec made invalid mid-plan must not keep its nodes: stop as any deleted plan does.
      Result<Schedule> always = Schedule::compile({});
      const PlanRules fallback{*std::move(always)};
      return Step(plan, world, fallback).run();
    }
    Decision decision;
    decision.status = plan.status;
    decision.status.phase = PlanPhase::kFailed;
    decision.status.message = rules.error().message;
    decision.status.observed_generation = plan.meta.generation;
    if (plan.status.message != decision.status.message) {
      decision.events.push_back({PlanEventReason::kInvalidPlan, decision.status.message, {}});
    }
    return decision;
  }
  return Step(plan, world, *rules).run();
}

std::set<std::string> steered_nodes(const std::vector<PlanSteering>& plans, bool enabled) {
  std::set<std::string> steered;
  if (!enabled) return steered;
  for (const PlanSteering& plan : plans) {
    if (plan.deleting || plan.status->phase != PlanPhase::kRunning) continue;
    for (const PlanNodeStatus& entry : plan.status->nodes) {
      if (entry.phase == PlanNodePhase::kWaiting) steered.insert(entry.name);
    }
  }
  return steered;
}

}  // namespace nmo::op::fleet
