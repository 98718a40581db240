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

#include "cli/cluster_reader.h"
#include "cli/diagnosis.h"
#include "cli/diagnosis_gather.h"
#include "cli/exit_code.h"
#include "cli/maintenance_text.h"
#include "cli/output_format.h"
#include "cli/plan.h"
#include "cli/plan_diagnosis.h"
#include "cli/plan_gather.h"
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
#include "operator/api/failure.h"
#include "operator/budget/published_budget.h"
#include "operator/drain/eviction_policy.h"
#include "operator/gates/budget.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/gates/node_lease.h"
#include "operator/kubevirt/vm_policy.h"
#include "operator/node/node_patch.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;

constexpr std::size_t kMaxEvents = 20;

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

bool has_drain_taint(const kube::Node& node) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [](const kube::Taint& t) { return t.key == op::kDrainTaintKey; });
}

// Why a create of a `kind` object failed: its API not installed (a 404 on the collection, exit 4),
// or the API server's refusal (exit 1: a write refused, never "not found").
Failure create_failure(Session& session, const Error& error, std::string_view kind,
                       std::string_view crd) {
  if (is_not_found(error) && error.http_status == 404) {
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

// The node; std::nullopt when it does not exist.
asio::awaitable<Outcome<std::optional<kube::Node>>> find_node(Session& session, std::string node) {
  ApiClusterReader reader(session.client(), session.server());
  co_return co_await reader.node(std::move(node));
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
        Failure{.message = op::node_not_found_message(node), .exit_code = kExitNotFound});
  }
  const std::string name = options.name.empty() ? "maintenance-" + node : options.name;
  kube::ObjectMeta meta;
  meta.name = name;
  op::NodeMaintenanceSpec spec;
  spec.node_name = node;
  spec.reason = options.reason;
  spec.drain_timeout_text = options.drain_timeout;
  json::value body = op::node_maintenance_object(meta, spec);
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
    if (!removed && !is_not_found(removed.error())) {
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

namespace {

// `plan --plan NAME`: the pods the MaintenancePlan may evict twice.
asio::awaitable<int> plan_repeat_evictions(Session& session, const CommandOptions& options) {
  auto found = co_await session.maintenance_plan(options.plan);
  if (!found) co_return report(found.failure());
  ApiClusterReader reader(session.client(), session.server());
  auto input = co_await gather_repeat_evictions(reader, std::move(found->plan));
  if (!input) co_return report(input.failure());
  const RepeatEvictions evictions = find_repeat_evictions(*input);
  if (prints_document(options.output)) {
    print_document(repeat_evictions_to_json(evictions), options.output);
  } else {
    print(repeat_evictions_report(evictions));
  }
  co_return kExitOk;
}

}  // namespace

asio::awaitable<int> run_plan(Session& session, std::string node, CommandOptions options) {
  if (!options.plan.empty()) co_return co_await plan_repeat_evictions(session, options);
  ApiClusterReader reader(session.client(), session.server());
  PlanRequest request{
      .node = node,
      .maintenance_name = options.name.empty() ? "maintenance-" + node : options.name,
      .operator_namespace = options.operator_namespace,
      .lease_namespace = options.lease_namespace,
      .etcd_quorum_check = options.etcd_quorum_check,
      .max_parallel = options.max_parallel};
  auto input = co_await gather_plan(reader, std::move(request));
  if (!input) co_return report(input.failure());
  const Plan plan = make_plan(*input);
  if (prints_document(options.output)) {
    print_document(plan_to_json(plan), options.output);
  } else {
    print(plan_report(plan));
  }
  co_return kExitOk;
}

namespace {

DiagnosisRequest diagnosis_request(const CommandOptions& options) {
  return DiagnosisRequest{.operator_namespace = options.operator_namespace,
                          .lease_namespace = options.lease_namespace,
                          .max_parallel = options.max_parallel};
}

// `diagnose mp/NAME` (or a NAME that is only a MaintenancePlan): the plan's status, its Events,
// and for each node still draining the verdict of its NodeMaintenance's diagnosis.
asio::awaitable<int> diagnose_plan(Session& session, op::MaintenancePlan plan,
                                   CommandOptions options) {
  ApiClusterReader reader(session.client(), session.server());
  DiagnosisRequest request = diagnosis_request(options);
  auto input = co_await gather_plan_diagnosis(reader, std::move(plan), std::move(request));
  if (!input) co_return report(input.failure());
  if (prints_document(options.output)) {
    print_document(plan_diagnosis_to_json(*input), options.output);
  } else {
    print(plan_diagnosis_report(*input, kMaxEvents));
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
  ApiClusterReader reader(session.client(), session.server());
  DiagnosisRequest request = diagnosis_request(options);
  auto input = co_await gather_diagnosis(reader, std::move((*found)->nm), std::move(request));
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
