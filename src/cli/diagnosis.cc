#include "cli/diagnosis.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "cli/maintenance_text.h"
#include "kube/api/event.h"
#include "operator/api/server_support.h"
#include "operator/drain/eviction_policy.h"
#include "operator/gates/node_lease.h"
#include "operator/node/lifecycle_conditions.h"
#include "operator/node/node_patch.h"

namespace nmo::cli {

namespace {

std::string string_field(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string(value->get_string()) : "";
}

std::uint64_t resource_version_number(const boost::json::object& event) {
  const auto* meta = event.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return 0;
  const std::string text = string_field(meta->get_object(), "resourceVersion");
  std::uint64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  return error == std::errc{} && end == text.data() + text.size() ? number : 0;
}

std::string pdb_name(const kube::PodDisruptionBudget& pdb) {
  return pdb.meta.namespace_ + "/" + pdb.meta.name;
}

std::string pdb_counts(const kube::PodDisruptionBudget& pdb) {
  return fmt::format("{} disruption{} allowed: {} healthy, {} desired", pdb.disruptions_allowed,
                     pdb.disruptions_allowed == 1 ? "" : "s", pdb.current_healthy,
                     pdb.desired_healthy);
}

std::string pod_key(const op::PendingPodRef& ref) { return ref.namespace_ + "/" + ref.name; }

std::string lease_state(const DiagnosisInput& input) {
  if (!input.node_lease) return "none";
  const std::string holder = op::lease_holder(*input.node_lease);
  switch (op::classify_node_lease(input.node_lease, input.now)) {
    case op::NodeLeaseState::kFree:
      return "free";
    case op::NodeLeaseState::kOurs:
      return "held by " + holder + " (the operator)";
    case op::NodeLeaseState::kHeldByOther:
      return "held by " + holder;
    case op::NodeLeaseState::kExpiredForeign:
      return "expired (last holder " + holder + ")";
  }
  return "unknown";
}

bool has_taint(const kube::Node& node, std::string_view key) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [key](const kube::Taint& t) { return t.key == key; });
}

std::string verdict_for_pod(const StuckPod& pod) {
  const std::string name = pod_key(pod.ref);
  op::PendingPodReason reason = pod.ref.reason.value_or(op::PendingPodReason::kEvicting);
  // A status written before KubeVirt's answers had reasons of their own says EvictionDeferred.
  if (reason == op::PendingPodReason::kEvictionDeferred) {
    reason = op::deferred_eviction_reason(pod.ref.message);
  }
  switch (reason) {
    case op::PendingPodReason::kBlockedByPdb: {
      if (pod.pdbs.size() == 1) {
        return fmt::format(
            "pod {} is protected by PDB {} ({}): scale up, migrate the VM, or relax the PDB", name,
            pdb_name(pod.pdbs.front()), pdb_counts(pod.pdbs.front()));
      }
      return fmt::format(
          "pod {} is protected by a PDB ({}): scale up, migrate the VM, or relax "
          "the PDB",
          name, pod.ref.message);
    }
    case op::PendingPodReason::kMultiplePdbs: {
      std::string names;
      for (const auto& pdb : pod.pdbs) names += (names.empty() ? "" : ", ") + pdb_name(pdb);
      return fmt::format(
          "pod {} is selected by more than one PDB ({}), which the Eviction API "
          "refuses: keep one PDB for it",
          name, names.empty() ? pod.ref.message : names);
    }
    case op::PendingPodReason::kEvictionDeferred:
      return fmt::format(
          "pod {}: an admission webhook deferred its eviction ({}): wait for it, or check the "
          "webhook",
          name, pod.ref.message);
    case op::PendingPodReason::kNamespaceTerminating:
      return fmt::format(
          "pod {}: its namespace is being deleted: wait for the namespace "
          "controller to remove it",
          name);
    case op::PendingPodReason::kMigratingVm:
      if (pod.ref.message.find(" failed") != std::string::npos) {
        return fmt::format(
            "pod {}: the live migration of its VM failed and is tried again ({}): wait for it; "
            "if it keeps failing, see the MigrationFailed events and kubectl get vmim -n {}",
            name, pod.ref.message, pod.ref.namespace_);
      }
      return fmt::format("pod {}: its VM is being live-migrated ({}): wait for it", name,
                         pod.ref.message);
    case op::PendingPodReason::kVmWouldShutDown:
      return fmt::format("pod {} is held: {}", name, pod.ref.message);
    case op::PendingPodReason::kVmNotMigratable:
      return fmt::format(
          "pod {}: KubeVirt refuses its eviction for good ({}): waiting does not help; make the VM "
          "live-migratable, or change its eviction strategy",
          name, pod.ref.message);
    case op::PendingPodReason::kHeld:
      return fmt::format(
          "pod {}: its eviction is held ({}): it starts when the hold is lifted (annotation {})",
          name, pod.ref.message, op::kHoldAnnotation);
    case op::PendingPodReason::kError:
      return fmt::format("pod {}: its eviction failed ({}): see the events", name, pod.ref.message);
    case op::PendingPodReason::kWaitingForTermination:
      return fmt::format("pod {} is terminating ({}): wait, or check the kubelet of its node", name,
                         pod.ref.message);
    case op::PendingPodReason::kEvicting:
      break;
  }
  return "";
}

}  // namespace

std::string diagnosis_verdict(const DiagnosisInput& input) {
  const op::NodeMaintenance& nm = input.nm;
  const std::string& node = nm.spec.node_name;
  if (nm.meta.deletion_timestamp) {
    return "being deleted: the operator is restoring node " + node +
           " (if this lasts, check that the operator runs)";
  }
  if (!nm.status.phase) {
    return "the operator has not picked it up yet: check that it runs (kubectl get deploy -n "
           "node-maintenance-operator-system)";
  }
  switch (*nm.status.phase) {
    case op::Phase::kSucceeded:
      return "node " + node + " is drained: do the maintenance, then `kubectl maintenance stop " +
             nm.meta.name + "` to return it to service";
    case op::Phase::kFailed:
      if (!input.node) {
        return "failed: node " + node + " does not exist: delete the NodeMaintenance";
      }
      return "failed: " + nm.status.last_error +
             ": fix the cause, then delete the NodeMaintenance (and create it again if needed)";
    case op::Phase::kPending: {
      if (!input.node) return "node " + node + " does not exist: delete the NodeMaintenance";
      const op::Condition* blocked =
          op::find_condition(nm.status.conditions, op::kConditionBlocked);
      if (blocked != nullptr && blocked->reason == op::kReasonEtcdQuorum) {
        return blocked->message +
               ": bring the other control-plane nodes back to Ready; it proceeds by itself";
      }
      if (input.node_lease && op::classify_node_lease(input.node_lease, input.now) ==
                                  op::NodeLeaseState::kHeldByOther) {
        return "node lease " + input.lease_ref + " is held by " +
               op::lease_holder(*input.node_lease) +
               ": wait until that remediation ends; it proceeds by itself";
      }
      std::string holders;
      for (const auto& h : input.slot_holders) holders += (holders.empty() ? "" : ", ") + h;
      if (!holders.empty()) {
        return fmt::format(
            "waiting for a maintenance slot ({} in use: {}): wait for them to be "
            "deleted, or raise --max-parallel-maintenances",
            input.slot_holders.size(), holders);
      }
      return "waiting for its gates: " + blocking_summary(nm);
    }
    case op::Phase::kRunning:
      break;
  }
  // The most actionable blocker first: a PDB the admin can relax, a VM held for them, then the
  // rest.
  for (const op::PendingPodReason reason :
       {op::PendingPodReason::kBlockedByPdb, op::PendingPodReason::kVmWouldShutDown,
        op::PendingPodReason::kVmNotMigratable, op::PendingPodReason::kMultiplePdbs,
        op::PendingPodReason::kEvictionDeferred, op::PendingPodReason::kHeld,
        op::PendingPodReason::kMigratingVm, op::PendingPodReason::kNamespaceTerminating,
        op::PendingPodReason::kError, op::PendingPodReason::kWaitingForTermination}) {
    for (const auto& pod : input.pods) {
      if (pod.ref.reason == reason) return verdict_for_pod(pod);
    }
  }
  if (nm.status.error_on_lease_count > 0) {
    return fmt::format("the node lease was found held by another holder {} time(s): check {}",
                       nm.status.error_on_lease_count, input.lease_ref);
  }
  return fmt::format(
      "draining, nothing blocks: {} of {} pods gone; watch it with `kubectl "
      "maintenance watch {}`",
      nm.status.eviction_pods, nm.status.total_pods, nm.meta.name);
}

std::vector<EventLine> events_from_list(const boost::json::value& list, std::string_view kind) {
  std::vector<EventLine> events;
  const auto* items = list.is_object() ? list.get_object().if_contains("items") : nullptr;
  if (items == nullptr || !items->is_array()) return events;
  for (const auto& item : items->get_array()) {
    auto event = kube::decode_event(item);
    if (!event || event->involved.kind != kind) continue;  // not one to show
    events.push_back(EventLine{.type = std::move(event->type),
                               .reason = std::move(event->reason),
                               .message = std::move(event->message),
                               .count = event->count > 0 ? event->count : 1,
                               .last_seen = event->last_seen,
                               .resource_version = resource_version_number(item.get_object())});
  }
  std::stable_sort(events.begin(), events.end(), [](const EventLine& a, const EventLine& b) {
    const kube::Time a_seen = a.last_seen.value_or(kube::Time{});
    const kube::Time b_seen = b.last_seen.value_or(kube::Time{});
    if (a_seen != b_seen) return a_seen < b_seen;
    return a.resource_version < b.resource_version;
  });
  return events;
}

std::string events_section(const std::vector<EventLine>& events, std::size_t max_events) {
  std::string out = "Events (oldest first):\n";
  if (events.empty()) out += "  none\n";
  const std::size_t first = events.size() > max_events ? events.size() - max_events : 0;
  for (std::size_t i = first; i < events.size(); ++i) {
    const EventLine& e = events[i];
    std::string when = e.last_seen ? kube::format_time(*e.last_seen) : "<unknown>";
    out += fmt::format("  {}  {:<7} {:<24} {}{}\n", when, e.type, e.reason, e.message,
                       e.count > 1 ? fmt::format(" (x{})", e.count) : "");
  }
  return out;
}

boost::json::array events_to_json(const std::vector<EventLine>& events) {
  boost::json::array out;
  for (const auto& e : events) {
    out.push_back(boost::json::object{
        {"type", e.type},
        {"reason", e.reason},
        {"message", e.message},
        {"count", e.count},
        {"lastSeen", e.last_seen ? kube::format_time(*e.last_seen) : std::string()}});
  }
  return out;
}

std::string diagnosis_report(const DiagnosisInput& input, std::size_t max_events) {
  std::string out = status_report(input.nm, input.now);
  out += "\n" + events_section(input.events, max_events);
  out += "\nNode " + input.nm.spec.node_name + ":\n";
  if (!input.node) {
    out += "  does not exist\n";
  } else {
    out += fmt::format("  schedulable:  {}\n", input.node->unschedulable ? "no (cordoned)" : "yes");
    out += fmt::format("  ready:        {}\n",
                       input.node->ready_status().empty() ? "unknown" : input.node->ready_status());
    std::string taints;
    for (const auto& t : input.node->taints) {
      taints += (taints.empty() ? "" : ", ") + t.key + (t.value.empty() ? "" : "=" + t.value) +
                ":" + t.effect;
    }
    out += "  taints:       " + (taints.empty() ? std::string("none") : taints) + "\n";
    if (input.nm.status.phase == op::Phase::kRunning &&
        !has_taint(*input.node, op::kDrainTaintKey)) {
      out += "  note:         the maintenance taint medik8s.io/drain is missing\n";
    }
    const std::vector<kube::NodeCondition> lifecycle =
        op::well_known_lifecycle_conditions(*input.node);
    if (lifecycle.empty()) out += "  lifecycle:    none\n";
    for (std::size_t i = 0; i < lifecycle.size(); ++i) {
      const kube::NodeCondition& c = lifecycle[i];
      out += fmt::format("{}{}={} {}{}{}\n", i == 0 ? "  lifecycle:    " : "                ",
                         c.type, c.status, c.reason,
                         op::is_our_lifecycle_condition(c) ? "" : " (another writer's)",
                         c.message.empty() ? "" : ": " + c.message);
    }
  }
  out += "\nLeases:\n";
  out += "  node lease:   " + input.lease_ref + ": " + lease_state(input) + "\n";
  std::string holders;
  for (const auto& h : input.slot_holders) holders += (holders.empty() ? "" : ", ") + h;
  out += fmt::format("  slots:        {} in use{}\n", input.slot_holders.size(),
                     holders.empty() ? "" : ": " + holders);
  if (!input.pods.empty()) {
    out += "\nPending pods:\n";
    for (const auto& pod : input.pods) {
      out += fmt::format("  {}: {}{}\n", pod_key(pod.ref),
                         pod.ref.reason ? std::string(op::to_string(*pod.ref.reason)) : "Pending",
                         pod.exists ? "" : " (the pod no longer exists)");
      if (!pod.ref.message.empty()) out += "    message: " + pod.ref.message + "\n";
      if (pod.pdbs.empty()) out += "    PDB: none\n";
      for (const auto& pdb : pod.pdbs) {
        out += fmt::format("    PDB {}: {}\n", pdb_name(pdb), pdb_counts(pdb));
      }
    }
  }
  if (input.server) {
    out += fmt::format("\nAPI server: Kubernetes {} (tested: {})\n", input.server->git_version,
                       op::tested_range());
    if (std::string warning = op::untested_version_warning(*input.server); !warning.empty()) {
      out += "  warning: " + warning + "\n";
    }
    for (const op::MissingFeature& missing : op::missing_features(*input.server)) {
      out += fmt::format("  lacks {} ({}+): {}\n", missing.feature, missing.since, missing.instead);
    }
  }
  out += "\nVerdict: " + diagnosis_verdict(input) + "\n";
  return out;
}

boost::json::value diagnosis_to_json(const DiagnosisInput& input) {
  const op::NodeMaintenance& nm = input.nm;
  boost::json::array events = events_to_json(input.events);
  boost::json::array slots;
  for (const auto& h : input.slot_holders) slots.emplace_back(h);
  boost::json::object node{{"exists", input.node.has_value()}};
  if (input.node) {
    boost::json::array taints;
    for (const auto& t : input.node->taints) {
      taints.push_back(
          boost::json::object{{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
    }
    node["unschedulable"] = input.node->unschedulable;
    node["ready"] = input.node->ready_status();
    node["taints"] = std::move(taints);
    boost::json::array lifecycle;
    for (const kube::NodeCondition& c : op::well_known_lifecycle_conditions(*input.node)) {
      lifecycle.push_back(boost::json::object{{"type", c.type},
                                              {"status", c.status},
                                              {"reason", c.reason},
                                              {"message", c.message},
                                              {"ours", op::is_our_lifecycle_condition(c)}});
    }
    node["lifecycleConditions"] = std::move(lifecycle);
  }
  boost::json::array pods;
  for (const auto& pod : input.pods) {
    boost::json::array pdbs;
    for (const auto& pdb : pod.pdbs) {
      pdbs.push_back(boost::json::object{{"name", pdb_name(pdb)},
                                         {"disruptionsAllowed", pdb.disruptions_allowed},
                                         {"currentHealthy", pdb.current_healthy},
                                         {"desiredHealthy", pdb.desired_healthy}});
    }
    pods.push_back(boost::json::object{
        {"namespace", pod.ref.namespace_},
        {"name", pod.ref.name},
        {"reason", pod.ref.reason ? std::string(op::to_string(*pod.ref.reason)) : std::string()},
        {"message", pod.ref.message},
        {"exists", pod.exists},
        {"pdbs", std::move(pdbs)}});
  }
  boost::json::object server;
  if (input.server) {
    boost::json::array lacks;
    for (const op::MissingFeature& missing : op::missing_features(*input.server)) {
      lacks.push_back(boost::json::object{
          {"feature", missing.feature}, {"since", missing.since}, {"instead", missing.instead}});
    }
    server = {{"version", input.server->git_version},
              {"warning", op::untested_version_warning(*input.server)},
              {"lacks", std::move(lacks)}};
  }
  return boost::json::object{
      {"name", nm.meta.name},
      {"node", nm.spec.node_name},
      {"phase", phase_text(nm)},
      {"drainProgress", nm.status.drain_progress},
      {"totalPods", nm.status.total_pods},
      {"evictionPods", nm.status.eviction_pods},
      {"lastError", nm.status.last_error},
      {"events", std::move(events)},
      {"nodeLease",
       boost::json::object{
           {"name", input.lease_ref},
           {"holder", input.node_lease ? op::lease_holder(*input.node_lease) : std::string()},
           {"state", lease_state(input)}}},
      {"slots", std::move(slots)},
      {"nodeState", std::move(node)},
      {"pendingPods", std::move(pods)},
      {"apiServer", std::move(server)},
      {"verdict", diagnosis_verdict(input)}};
}

}  // namespace nmo::cli
