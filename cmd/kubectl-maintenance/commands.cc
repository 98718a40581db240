#include "commands.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>

#include "cli/diagnosis.h"
#include "cli/exit_code.h"
#include "cli/maintenance_text.h"
#include "cli/output_format.h"
#include "cli/plan.h"
#include "cli/plan_diagnosis.h"
#include "cli/plan_resume.h"
#include "cli/plan_status_text.h"
#include "cli/text.h"
#include "cli/work_done.h"
#include "console.h"
#include "follow.h"
#include "kube/api/daemon_set.h"
#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/time.h"
#include "kube/api/version.h"
#include "operator/budget/published_budget.h"
#include "operator/drain/eviction_policy.h"
#include "operator/gates/budget.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/gates/node_lease.h"
#include "operator/kubevirt/vm_policy.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;

constexpr std::size_t kMaxEvents = 20;
constexpr std::string_view kDrainTaint = "medik8s.io/drain";

// `value` as -o asks: YAML, a JSONPath template's output, or indented JSON.
void print_document(const json::value& value, const Output& output) {
  switch (output.format) {
    case OutputFormat::kYaml:
      print(to_yaml(value));
      break;
    case OutputFormat::kJsonPath:
      print(output.jsonpath->render(value));
      break;
    default:
      print(to_pretty_json(value));
      break;
  }
}

// -o json, yaml and jsonpath print the object itself.
bool prints_document(const Output& output) {
  return output.format == OutputFormat::kJson || output.format == OutputFormat::kYaml ||
         output.format == OutputFormat::kJsonPath;
}

using kube::wall_now;

std::string node_path(const std::string& node) { return "/api/v1/nodes/" + node; }

bool has_drain_taint(const kube::Node& node) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [](const kube::Taint& t) { return t.key == kDrainTaint; });
}

// Why a create of a `kind` object failed: its API not installed (a 404 on the collection, exit 4),
// or the API server's refusal (exit 1: a write refused, never "not found").
Failure create_failure(Session& session, const Error& error, std::string_view kind,
                       std::string_view crd) {
  if (error.code == ErrorCode::kNotFound && error.http_status == 404) {
    return api_not_installed(kind, crd);
  }
  Failure failure = session.failure(error);
  if (failure.exit_code == kExitNotFound) failure.exit_code = kExitFailed;
  return failure;
}

bool timed_out(const std::optional<std::chrono::nanoseconds>& timeout,
               std::chrono::steady_clock::time_point started) {
  return timeout && std::chrono::steady_clock::now() - started >= *timeout;
}

// Lists every page of T in `ns` with `options`, as a Failure-carrying outcome.
template <typename T>
asio::awaitable<Outcome<std::vector<T>>> list_all(Session& session, std::string ns,
                                                  kube::ListOptions options) {
  auto listed = co_await session.client().list_all<T>(ns, options);
  if (!listed) co_return session.failure(listed.error());
  co_return std::move(listed->items);
}

// The node as a projection; std::nullopt when it does not exist.
asio::awaitable<Outcome<std::optional<kube::Node>>> find_node(Session& session, std::string node) {
  std::string path = node_path(node);
  auto got = co_await session.get_optional(path);
  if (!got) co_return got.failure();
  if (!got->has_value()) co_return std::optional<kube::Node>();
  auto decoded = kube::decode_node(**got);
  if (!decoded) co_return session.failure(decoded.error());
  co_return std::optional<kube::Node>(std::move(*decoded));
}

asio::awaitable<Outcome<std::vector<kube::Lease>>> leases_in(Session& session, std::string ns) {
  kube::ListOptions all;
  co_return co_await list_all<kube::Lease>(session, ns, all);
}

// The budget to plan with: --max-parallel, else what the operator published on its Lease
// nmo-budget among `leases` (the operator namespace's), else the operator's default; and where
// it came from.
std::pair<int, std::string> budget_of(const CommandOptions& options,
                                      const std::vector<kube::Lease>& leases) {
  if (options.max_parallel > 0) return {options.max_parallel, "--max-parallel"};
  for (const auto& lease : leases) {
    if (lease.meta.name != op::kBudgetLeaseName) continue;
    if (auto published = op::published_max_parallel(lease)) {
      return {*published, "published by the operator on Lease " + options.operator_namespace + "/" +
                              std::string(op::kBudgetLeaseName)};
    }
  }
  return {op::kDefaultMaxParallelMaintenances,
          "the default: the operator has not published its budget"};
}

bool is_slot_lease(const kube::Lease& lease) {
  return lease.meta.name.rfind("nmo-slot-", 0) == 0 ||
         lease.meta.name.rfind("nmo-foreign-", 0) == 0;
}

}  // namespace

asio::awaitable<int> run_list(Session& session, CommandOptions options) {
  auto all = co_await session.maintenances();
  if (!all) co_return report(all.failure());
  if (prints_document(options.output)) {
    print_document(all->raw, options.output);
    co_return kExitOk;
  }
  if (options.output.format == OutputFormat::kName) {
    std::string names;
    for (const auto& nm : all->items) names += resource_name(nm.meta.name) + "\n";
    print(names);
    co_return kExitOk;
  }
  if (all->items.empty()) {
    // kubectl's habit: the note on stderr, so `--no-headers | wc -l` counts 0.
    std::fputs("No NodeMaintenances found.\n", stderr);
    co_return kExitOk;
  }
  const kube::Time now = wall_now();
  const bool wide = options.output.format == OutputFormat::kWide;
  // -o wide shows each node's lifecycle conditions: one GET per node named, not a list of every
  // node of the cluster.
  std::map<std::string, std::optional<kube::Node>, std::less<>> nodes;
  if (wide) {
    for (const auto& nm : all->items) {
      if (nodes.contains(nm.spec.node_name)) continue;
      auto node = co_await find_node(session, nm.spec.node_name);
      if (!node) co_return report(node.failure());
      nodes.emplace(nm.spec.node_name, std::move(*node));
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& nm : all->items) {
    const auto node = nodes.find(nm.spec.node_name);
    rows.push_back(list_row(nm, now, wide, node == nodes.end() ? std::nullopt : node->second));
  }
  print(format_table(list_header(wide), rows, !options.no_headers));
  co_return kExitOk;
}

asio::awaitable<int> run_status(Session& session, std::string name, CommandOptions options) {
  auto found = co_await session.maintenance(name);
  if (!found) co_return report(found.failure());
  if (prints_document(options.output)) {
    print_document(found->raw, options.output);
  } else if (options.output.format == OutputFormat::kName) {
    print(resource_name(found->nm.meta.name) + "\n");
  } else if (options.output.format == OutputFormat::kWide) {
    auto node = co_await find_node(session, found->nm.spec.node_name);
    if (!node) co_return report(node.failure());
    print(format_table(list_header(true), {list_row(found->nm, wall_now(), true, *node)},
                       !options.no_headers));
  } else {
    print(status_report(found->nm, wall_now()));
  }
  co_return kExitOk;
}

asio::awaitable<int> run_start(Session& session, std::string node, CommandOptions options) {
  if (!options.drain_timeout.empty()) {
    if (auto parsed = op::parse_duration(options.drain_timeout); !parsed) {
      co_return report(Failure{.message = "--drain-timeout: " + parsed.error().message,
                               .exit_code = kExitUsage});
    }
  }
  auto found = co_await find_node(session, node);
  if (!found) co_return report(found.failure());
  if (!found->has_value()) {
    co_return report(
        Failure{.message = "node \"" + node + "\" not found", .exit_code = kExitNotFound});
  }
  const std::string name = options.name.empty() ? "maintenance-" + node : options.name;
  json::object spec{{"nodeName", node}};
  if (!options.reason.empty()) spec["reason"] = options.reason;
  if (!options.drain_timeout.empty()) spec["drainTimeout"] = options.drain_timeout;
  json::value body = json::object{{"apiVersion", op::kApiVersion},
                                  {"kind", op::kKind},
                                  {"metadata", json::object{{"name", name}}},
                                  {"spec", std::move(spec)}};
  // Named arguments: GCC 12 may destroy temporaries passed to a coroutine twice.
  std::string collection = maintenance_path();
  kube::WriteOptions write;
  auto created = co_await session.client().create(collection, body, write);
  if (!created) co_return report(create_failure(session, created.error(), op::kKind, op::kCrdName));
  print("nodemaintenance/" + name + " created (node " + node + ")\n");
  if (!options.wait) co_return kExitOk;
  co_return co_await follow(session, name, options);
}

asio::awaitable<int> run_stop(Session& session, std::string target, CommandOptions options) {
  std::vector<std::pair<std::string, std::string>> targets;  // name, node
  auto named = co_await session.find_maintenance(target);
  if (!named) co_return report(named.failure());
  if (named->has_value()) {
    targets.emplace_back(target, (*named)->nm.spec.node_name);
  } else {
    auto all = co_await session.maintenances();
    if (!all) co_return report(all.failure());
    for (const auto& nm : all->items) {
      if (nm.spec.node_name == target) targets.emplace_back(nm.meta.name, nm.spec.node_name);
    }
  }
  if (targets.empty()) {
    co_return report(Failure{
        .message = "no NodeMaintenance named \"" + target + "\" or for node \"" + target + "\"",
        .exit_code = kExitNotFound});
  }
  for (const auto& [name, node] : targets) {
    std::string path = maintenance_path(name);
    kube::DeleteOptions background;
    auto removed = co_await session.client().remove(path, background);
    if (!removed && removed.error().code != ErrorCode::kNotFound) {
      co_return report(session.failure(removed.error()));
    }
    print(fmt::format("nodemaintenance/{} deleted (node {})\n", name, node));
  }
  if (!options.wait) co_return kExitOk;
  const auto started = std::chrono::steady_clock::now();
  for (const auto& [name, node] : targets) {
    for (;;) {
      auto still = co_await session.find_maintenance(name);
      if (!still) co_return report(still.failure());
      std::optional<kube::Node> node_now;
      if (!still->has_value()) {
        auto got = co_await find_node(session, node);
        if (!got) co_return report(got.failure());
        node_now = std::move(*got);
        if (!node_now || !has_drain_taint(*node_now)) break;
      }
      if (timed_out(options.timeout, started)) {
        co_return report(
            Failure{.message = fmt::format("timed out after {} waiting for node {} to be released",
                                           op::format_duration(*options.timeout), node),
                    .exit_code = kExitTimeout});
      }
      co_await pause(options.poll_interval);
    }
    auto got = co_await find_node(session, node);
    if (!got) co_return report(got.failure());
    if (!got->has_value()) {
      print("node " + node + " no longer exists\n");
    } else if ((*got)->unschedulable) {
      print("node " + node +
            " is released but stays cordoned (it was cordoned before the maintenance)\n");
    } else {
      print("node " + node + " is schedulable again\n");
    }
  }
  co_return kExitOk;
}

asio::awaitable<int> run_watch(Session& session, std::string name, CommandOptions options) {
  co_return co_await follow(session, name, options);
}

asio::awaitable<int> run_plan(Session& session, std::string node, CommandOptions options) {
  auto found = co_await find_node(session, node);
  if (!found) co_return report(found.failure());
  if (!found->has_value()) {
    co_return report(
        Failure{.message = "node \"" + node + "\" not found", .exit_code = kExitNotFound});
  }
  PlanInput input;
  input.node = std::move(**found);
  input.now = wall_now();
  input.maintenance_name = options.name.empty() ? "maintenance-" + node : options.name;
  input.operator_namespace = options.operator_namespace;
  input.lease_namespace = options.lease_namespace;
  input.etcd_quorum_check = options.etcd_quorum_check;

  kube::ListOptions on_node;
  on_node.field_selector = "spec.nodeName=" + node;
  std::string all_namespaces;
  auto pods = co_await list_all<kube::Pod>(session, all_namespaces, on_node);
  if (!pods) co_return report(pods.failure());
  input.pods = std::move(*pods);

  std::set<std::string> namespaces;
  std::set<std::pair<std::string, std::string>> daemon_sets;
  bool any_launcher = false;
  for (const auto& pod : input.pods) {
    namespaces.insert(pod.meta.namespace_);
    if (auto owner = op::daemon_set_owner(pod)) daemon_sets.emplace(owner->namespace_, owner->name);
    any_launcher = any_launcher || op::is_virt_launcher(pod);
  }
  for (const auto& [ns, name] : daemon_sets) {
    std::string path = kube::object_path<kube::DaemonSet>(ns, name);
    auto got = co_await session.get_optional(path);
    if (!got) co_return report(got.failure());
    if (!got->has_value()) continue;
    auto decoded = kube::decode_daemon_set(**got);
    if (!decoded) co_return report(session.failure(decoded.error()));
    input.daemon_sets.push_back(
        op::DaemonSetRef{.namespace_ = ns, .name = name, .uid = decoded->meta.uid});
  }
  for (const auto& ns : namespaces) {
    kube::ListOptions all;
    auto pdbs = co_await list_all<kube::PodDisruptionBudget>(session, ns, all);
    if (!pdbs) co_return report(pdbs.failure());
    for (auto& pdb : *pdbs) input.pdbs.push_back(std::move(pdb));
  }
  if (any_launcher) {
    std::string kubevirt = "/apis/kubevirt.io/v1";
    auto served = co_await session.served(kubevirt);
    if (!served) co_return report(served.failure());
    input.kubevirt_served = *served;
    for (const auto& pod : input.pods) {
      if (!input.kubevirt_served || !op::is_virt_launcher(pod) || op::vmi_name(pod).empty()) {
        continue;
      }
      const std::string path = "/apis/kubevirt.io/v1/namespaces/" + pod.meta.namespace_ +
                               "/virtualmachineinstances/" + op::vmi_name(pod);
      auto vmi = co_await session.get_optional(path);
      if (!vmi) co_return report(vmi.failure());
      if (!vmi->has_value()) continue;
      auto decoded = op::decode_vmi(**vmi);
      if (!decoded) co_return report(session.failure(decoded.error()));
      input.vmis[pod.meta.namespace_ + "/" + op::vmi_name(pod)] = std::move(*decoded);
    }
    if (input.kubevirt_served) {
      // The VMIs' default eviction strategy: the KubeVirt CR's (there is one per cluster).
      auto kubevirts = co_await session.get_optional("/apis/kubevirt.io/v1/kubevirts");
      if (!kubevirts) co_return report(kubevirts.failure());
      if (kubevirts->has_value()) {
        input.kubevirt_eviction_strategy = op::cluster_eviction_strategy(**kubevirts);
      }
    }
  }

  auto all = co_await session.maintenances();
  if (!all) co_return report(all.failure());
  input.maintenances = std::move(all->items);
  auto slots = co_await leases_in(session, options.operator_namespace);
  if (!slots) co_return report(slots.failure());
  for (const auto& lease : *slots) input.slot_leases.insert(lease.meta.name);
  std::tie(input.max_parallel, input.max_parallel_source) = budget_of(options, *slots);
  auto node_leases = co_await leases_in(session, options.lease_namespace);
  if (!node_leases) co_return report(node_leases.failure());
  input.node_leases = std::move(*node_leases);

  // The etcd-quorum gate, read as the operator reads it.
  std::map<std::string, bool> node_ready;
  for (std::string_view label : {op::kControlPlaneLabel, op::kMasterLabel}) {
    kube::ListOptions selected;
    selected.label_selector = std::string(label);
    auto nodes = co_await list_all<kube::Node>(session, all_namespaces, selected);
    if (!nodes) co_return report(nodes.failure());
    for (const auto& n : *nodes) {
      input.control_plane_nodes.insert(n.meta.name);
      node_ready[n.meta.name] = n.is_ready();
    }
  }
  if (!input.control_plane_nodes.empty()) {
    std::string openshift_config = "/apis/config.openshift.io/v1";
    auto openshift = co_await session.served(openshift_config);
    if (!openshift) co_return report(openshift.failure());
    if (*openshift) {
      kube::ListOptions all_of_ns;
      std::string etcd_namespace(op::kOpenShiftEtcdNamespace);
      auto pdbs = co_await list_all<kube::PodDisruptionBudget>(session, etcd_namespace, all_of_ns);
      if (!pdbs) co_return report(pdbs.failure());
      auto guard_pods = co_await list_all<kube::Pod>(session, etcd_namespace, all_of_ns);
      if (!guard_pods) co_return report(guard_pods.failure());
      std::vector<op::GuardPod> guards;
      if (pdbs->size() == 1) {
        for (const auto& pod : *guard_pods) {
          if (op::guard_pdb_selects(pdbs->front(), pod.meta.labels)) {
            guards.push_back(op::guard_pod(pod));
          }
        }
      }
      for (const auto& cp : input.control_plane_nodes) {
        input.quorum_safe[cp] = op::openshift_etcd_disruption_allowed(*pdbs, guards, cp);
        input.quorum_detail[cp] = "OpenShift etcd guard PDB in openshift-etcd";
      }
    } else {
      kube::ListOptions etcd;
      etcd.label_selector = "component=etcd";
      std::string etcd_namespace(op::kEtcdNamespace);
      auto etcd_pods = co_await list_all<kube::Pod>(session, etcd_namespace, etcd);
      if (!etcd_pods) co_return report(etcd_pods.failure());
      std::vector<op::EtcdMember> members;
      for (const auto& pod : *etcd_pods) {
        if (!op::is_etcd_member_pod(pod)) continue;
        const auto ready = node_ready.find(pod.node_name);
        members.push_back(op::etcd_member(pod, ready != node_ready.end() && ready->second));
      }
      for (const auto& cp : input.control_plane_nodes) {
        const op::QuorumCheck check = op::check_etcd_quorum(members, cp);
        input.quorum_safe[cp] = check.safe;
        input.quorum_detail[cp] =
            check.members == 0
                ? "no stacked etcd members found (external or managed etcd)"
                : fmt::format("{} etcd members, {} healthy, {} left while it is down, {} needed",
                              check.members, check.healthy, check.healthy_after, check.needed);
      }
    }
  }

  const Plan plan = make_plan(input);
  if (prints_document(options.output)) {
    print_document(plan_to_json(plan), options.output);
  } else {
    print(plan_report(plan));
  }
  co_return kExitOk;
}

namespace {

// What `diagnose` reads about the NodeMaintenance `nm`: its Events, node, leases, budget slots,
// pending pods with their PDBs, and the server's version.
asio::awaitable<Outcome<DiagnosisInput>> gather_diagnosis(Session& session, op::NodeMaintenance nm,
                                                          CommandOptions options) {
  const std::string name = nm.meta.name;
  DiagnosisInput input;
  input.nm = std::move(nm);
  input.now = wall_now();
  const std::string& node = input.nm.spec.node_name;

  const std::string events_path = "/api/v1/namespaces/default/events?fieldSelector=" +
                                  kube::query_escape("involvedObject.name=" + name);
  auto events = co_await session.get(events_path);
  if (!events) co_return events.failure();
  input.events = events_from_list(*events);

  auto node_now = co_await find_node(session, node);
  if (!node_now) co_return node_now.failure();
  input.node = std::move(*node_now);

  const std::string lease_name = op::node_lease_name(node);
  input.lease_ref = options.lease_namespace + "/" + lease_name;
  std::string lease_path = kube::object_path<kube::Lease>(options.lease_namespace, lease_name);
  auto lease = co_await session.get_optional(lease_path);
  if (!lease) co_return lease.failure();
  if (lease->has_value()) {
    auto decoded = kube::decode_lease(**lease);
    if (!decoded) co_return session.failure(decoded.error());
    input.node_lease = std::move(*decoded);
  }
  auto slots = co_await leases_in(session, options.operator_namespace);
  if (!slots) co_return slots.failure();
  for (const auto& slot : *slots) {
    if (is_slot_lease(slot)) input.slot_holders.push_back(op::lease_holder(slot));
  }
  input.max_parallel = budget_of(options, *slots).first;

  std::map<std::string, std::vector<kube::PodDisruptionBudget>> pdbs_by_namespace;
  for (const auto& ref : input.nm.status.pending_pods_refs) {
    StuckPod stuck{.ref = ref};
    std::string pod_path = kube::object_path<kube::Pod>(ref.namespace_, ref.name);
    auto pod = co_await session.get_optional(pod_path);
    if (!pod) co_return pod.failure();
    stuck.exists = pod->has_value();
    if (stuck.exists) {
      auto decoded = kube::decode_pod(**pod);
      if (!decoded) co_return session.failure(decoded.error());
      if (!pdbs_by_namespace.contains(ref.namespace_)) {
        kube::ListOptions all;
        auto pdbs = co_await list_all<kube::PodDisruptionBudget>(session, ref.namespace_, all);
        if (!pdbs) co_return pdbs.failure();
        pdbs_by_namespace[ref.namespace_] = std::move(*pdbs);
      }
      stuck.pdbs = op::covering_pdbs(*decoded, pdbs_by_namespace[ref.namespace_]);
    }
    input.pods.push_back(std::move(stuck));
  }

  // The server's version only adds context: a failure to read it leaves the section out.
  if (auto version = co_await session.get(std::string(kube::kVersionPath)); version) {
    if (auto decoded = kube::decode_server_version(*version); decoded) {
      input.server = std::move(*decoded);
    }
  }

  co_return input;
}

// `diagnose mp/NAME` (or a NAME that is only a MaintenancePlan): the plan's status, its Events,
// and for each node still draining the verdict of its NodeMaintenance's diagnosis.
asio::awaitable<int> diagnose_plan(Session& session, op::MaintenancePlan plan,
                                   CommandOptions options) {
  PlanDiagnosisInput input;
  input.now = wall_now();
  const std::string events_path =
      "/api/v1/namespaces/default/events?fieldSelector=" +
      kube::query_escape("involvedObject.kind=" + std::string(op::kPlanKind) +
                         ",involvedObject.name=" + plan.meta.name);
  auto events = co_await session.get(events_path);
  if (!events) co_return report(events.failure());
  input.events = events_from_list(*events, op::kPlanKind);
  for (const op::PlanNodeStatus& node : plan.status.nodes) {
    if (node.phase != op::PlanNodePhase::kDraining || node.maintenance.empty()) continue;
    auto found = co_await session.find_maintenance(node.maintenance);
    if (!found) co_return report(found.failure());
    if (!found->has_value()) continue;
    auto drain = co_await gather_diagnosis(session, (*found)->nm, options);
    if (!drain) co_return report(drain.failure());
    input.drain_verdicts[node.name] = diagnosis_verdict(*drain);
  }
  input.plan = std::move(plan);
  if (prints_document(options.output)) {
    print_document(plan_diagnosis_to_json(input), options.output);
  } else {
    print(plan_diagnosis_report(input, kMaxEvents));
  }
  co_return kExitOk;
}

// "mp/NAME", "maintenanceplan/NAME" (kubectl's spellings of a MaintenancePlan) -> "NAME".
std::optional<std::string> plan_target(std::string_view target) {
  for (const std::string_view prefix : {"mp/", "maintenanceplan/", "maintenanceplans/",
                                        "maintenanceplan.nodemaintenance.medik8s.io/"}) {
    if (target.starts_with(prefix)) return std::string(target.substr(prefix.size()));
  }
  return std::nullopt;
}

}  // namespace

asio::awaitable<int> run_diagnose(Session& session, std::string name, CommandOptions options) {
  if (const std::optional<std::string> plan_name = plan_target(name)) {
    auto plan = co_await session.maintenance_plan(*plan_name);
    if (!plan) co_return report(plan.failure());
    co_return co_await diagnose_plan(session, std::move(plan->plan), std::move(options));
  }
  std::string nm_name = name;
  if (nm_name.starts_with("nm/")) nm_name.erase(0, 3);
  auto found = co_await session.find_maintenance(nm_name);
  if (!found) co_return report(found.failure());
  if (!found->has_value()) {
    // Not a NodeMaintenance: a MaintenancePlan of that name is diagnosed instead.
    auto plan = co_await session.maintenance_plan(nm_name);
    if (plan) co_return co_await diagnose_plan(session, std::move(plan->plan), std::move(options));
    if (plan.failure().exit_code != kExitNotFound && plan.failure().exit_code != kExitUnavailable) {
      co_return report(plan.failure());
    }
    co_return report(Failure{.message = "NodeMaintenance \"" + nm_name + "\" not found",
                             .exit_code = kExitNotFound});
  }
  auto input = co_await gather_diagnosis(session, (*found)->nm, options);
  if (!input) co_return report(input.failure());
  if (prints_document(options.output)) {
    print_document(diagnosis_to_json(*input), options.output);
  } else {
    print(diagnosis_report(*input, kMaxEvents));
  }
  co_return kExitOk;
}

asio::awaitable<int> run_done(Session& session, std::string node, CommandOptions /*options*/) {
  auto all = co_await session.maintenances();
  if (!all) co_return report(all.failure());
  const std::vector<op::NodeMaintenance> of_node = maintenances_of_node(all->items, node);
  if (auto refusal = done_refusal(of_node, node)) co_return report(*refusal);
  const std::string body = done_patch(wall_now());
  for (const auto& nm : of_node) {
    if (!can_mark_done(nm)) continue;
    // Named arguments: GCC 12 may destroy temporaries passed to a coroutine twice.
    std::string path = maintenance_path(nm.meta.name);
    std::string patch = body;
    kube::WriteOptions write;
    auto patched =
        co_await session.client().patch(path, kube::PatchType::kMergePatch, patch, write);
    if (!patched) co_return report(session.failure(patched.error()));
    print(done_confirmation(nm));
  }
  co_return kExitOk;
}

asio::awaitable<int> run_plan_status(Session& session, std::string name, CommandOptions options) {
  // main.cc accepts -o json only with --watch.
  if (options.watch) co_return co_await follow_plan(session, name, options);
  auto found = co_await session.maintenance_plan(name);
  if (!found) co_return report(found.failure());
  if (prints_document(options.output)) {
    print_document(found->raw, options.output);
  } else {
    print(plan_status_report(found->plan, wall_now()));
  }
  co_return kExitOk;
}

asio::awaitable<int> run_resume(Session& session, std::string name, CommandOptions /*options*/) {
  auto found = co_await session.maintenance_plan(name);
  if (!found) co_return report(found.failure());
  auto patch = resume_patch(found->plan);
  if (!patch) {
    co_return report(Failure{.message = patch.error().message, .exit_code = kExitFailed});
  }
  // Named arguments: GCC 12 may destroy temporaries passed to a coroutine twice.
  std::string path = kube::object_path<op::MaintenancePlan>("", name);
  kube::WriteOptions write;
  auto patched = co_await session.client().patch(path, kube::PatchType::kMergePatch, *patch, write);
  if (!patched) co_return report(session.failure(patched.error()));
  print(resume_confirmation(found->plan));
  co_return kExitOk;
}

asio::awaitable<int> run_rollout(Session& session, std::string name, CommandOptions options) {
  auto spec = rollout_spec(options.rollout);
  if (!spec) {
    co_return report(Failure{.message = spec.error().message, .exit_code = kExitUsage});
  }
  // Named arguments: GCC 12 may destroy temporaries passed to a coroutine twice.
  json::value body = rollout_object(name, *spec);
  std::string collection = kube::collection_path<op::MaintenancePlan>();
  kube::WriteOptions write;
  write.dry_run = options.dry_run;
  auto created = co_await session.client().create(collection, body, write);
  if (!created) {
    co_return report(create_failure(session, created.error(), op::kPlanKind, op::kPlanCrdName));
  }
  if (prints_document(options.output)) {
    print_document(*created, options.output);
  } else {
    print(rollout_confirmation(name, *spec, options.dry_run));
  }
  co_return kExitOk;
}

}  // namespace nmo::cli
