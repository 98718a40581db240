// kubectl-maintenance: the admin's command-line tool for NodeMaintenances (docs/cli.md). On PATH it
// is also `kubectl maintenance ...` (kubectl's plugin mechanism). It finds the cluster as kubectl
// does (--kubeconfig, $KUBECONFIG, ~/.kube/config; --context), answers in human form by default
// and as JSON or YAML with -o, and exits with the statuses of src/cli/exit_code.h, listed in
// --help.
//
// Threading: one io_context on the main thread runs the chosen subcommand's coroutine.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/log.h"
#include "cli/exit_code.h"
#include "cli/request_timeout.h"
#include "commands.h"
#include "completion.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "kube/config/load_rest_config.h"
#include "operator/api/node_maintenance.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"
#include "session.h"

#ifndef NMO_VERSION
#error "NMO_VERSION must be defined by the build (cmd/kubectl-maintenance/CMakeLists.txt)"
#endif

namespace nmo::cli {
namespace {

constexpr const char* kExitCodesHelp =
    "Exit status:\n"
    "  0  success (watch, start --wait: the maintenance Succeeded; plan-status --watch: the\n"
    "     plan Succeeded)\n"
    "  1  the operation failed: the maintenance (plan) Failed, the API server refused a\n"
    "     write, or done was asked for a node whose drain has not Succeeded\n"
    "  2  bad command line\n"
    "  3  the node, NodeMaintenance or MaintenancePlan named does not exist, or was deleted\n"
    "     while followed (done: the node has no NodeMaintenance)\n"
    "  4  the cluster cannot be used: API server unreachable, kubeconfig or credentials\n"
    "     unusable, or the NodeMaintenance (MaintenancePlan) API (CRD) is not installed\n"
    "  5  --timeout passed before the awaited state was reached\n"
    "  130, 143  watch, --wait or --watch interrupted by Ctrl-C (SIGINT) or SIGTERM\n";

struct Flags {
  std::string kubeconfig;
  std::string context;
  kube::ConfigOverrides overrides;  // --server, --token, --insecure-skip-tls-verify, --as...
  std::string request_timeout;
  std::string output;
  std::vector<OutputFormat> accepted_outputs;  // the chosen command's -o formats
  std::string timeout;
  std::string etcd_quorum_check = "auto";
  int verbosity = 0;
  CommandOptions options;
};

// The formats of each command's -o.
const std::vector<OutputFormat> kObjectOutputs = {OutputFormat::kJson, OutputFormat::kYaml,
                                                  OutputFormat::kName, OutputFormat::kWide,
                                                  OutputFormat::kJsonPath};
const std::vector<OutputFormat> kDocumentOutputs = {OutputFormat::kJson, OutputFormat::kYaml,
                                                    OutputFormat::kJsonPath};
const std::vector<OutputFormat> kWatchOutputs = {OutputFormat::kJson, OutputFormat::kYaml};
const std::vector<OutputFormat> kPlanWatchOutputs = {OutputFormat::kJson};

using Command = std::function<asio::awaitable<int>(Session&, CommandOptions)>;

int run_command(const Flags& flags, const Command& command) {
  CommandOptions options = flags.options;
  auto output = parse_output(flags.output, flags.accepted_outputs);
  if (!output) {
    std::fprintf(stderr, "error: %s\n", output.error().message.c_str());
    return kExitUsage;
  }
  options.output = std::move(*output);
  options.tty = isatty(STDOUT_FILENO) == 1;
  options.etcd_quorum_check = flags.etcd_quorum_check == "auto";
  if (!flags.timeout.empty()) {
    auto timeout = op::parse_duration(flags.timeout);
    if (!timeout) {
      std::fprintf(stderr, "error: --timeout: %s\n", timeout.error().message.c_str());
      return kExitUsage;
    }
    options.timeout = *timeout;
  }
  // Fail fast when the API server is down: one retry, short timeouts.
  std::chrono::milliseconds request_timeout = std::chrono::seconds(15);
  if (!flags.request_timeout.empty()) {
    auto parsed = parse_request_timeout(flags.request_timeout);
    if (!parsed) {
      std::fprintf(stderr, "error: --request-timeout: %s\n", parsed.error().message.c_str());
      return kExitUsage;
    }
    request_timeout = *parsed;
  }
  // Client retries and warnings are logged; a command-line tool shows them only with -v.
  log::configure(log::Format::kText, flags.verbosity);
  if (flags.verbosity == 0) log::set_writer([](std::string_view) {});

  auto rest = kube::load_rest_config(
      {.path = flags.kubeconfig, .context = flags.context, .overrides = flags.overrides});
  if (!rest) {
    std::fprintf(stderr, "error: %s\n", rest.error().message.c_str());
    return kExitUnavailable;
  }
  asio::io_context io;
  kube::ClientOptions client_options;
  client_options.user_agent = "kubectl-maintenance/" NMO_VERSION;
  client_options.max_retries = 1;
  client_options.request_timeout = request_timeout;
  client_options.qps = 50.0;
  client_options.burst = 100;
  auto client = kube::Client::create(io.get_executor(), *rest, client_options);
  if (!client) {
    std::fprintf(stderr, "error: %s\n", client.error().describe().c_str());
    return kExitUnavailable;
  }
  Session session(**client, rest->server);
  int status = kExitFailed;
  asio::co_spawn(io, command(session, options), [&](const std::exception_ptr& error, int result) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: internal error: %s\n", e.what());
      }
    } else {
      status = result;
    }
    (*client)->shutdown();
  });
  io.run();
  return status;
}

// -o with the formats `accepted`, checked in run_command() so an unknown one exits 2 with the
// accepted ones named.
void add_output(CLI::App& command, Flags& flags, const char* help,
                const std::vector<OutputFormat>& accepted) {
  command.add_option("-o,--output", flags.output, help);
  command.preparse_callback([&flags, accepted](std::size_t) { flags.accepted_outputs = accepted; });
}

// The subcommand chosen on the command line, and its argument (a node's or an object's name).
struct Chosen {
  std::string arg;
  Command command;
};

// When `sub` is chosen, `run` is the command, with the subcommand's argument.
void on_chosen(CLI::App& sub, Chosen& chosen,
               asio::awaitable<int> (*run)(Session&, std::string, CommandOptions)) {
  sub.callback([&chosen, run] {
    chosen.command = [&arg = chosen.arg, run](Session& s, CommandOptions o) {
      return run(s, arg, std::move(o));
    };
  });
}

// The flags of every subcommand: which cluster, how to reach it, and how much to log.
void add_connection_flags(CLI::App& app, Flags& flags) {
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)");
  app.add_option("--context", flags.context, "kubeconfig context (default: current-context)");
  app.add_option("--operator-namespace", flags.options.operator_namespace,
                 "the operator's namespace (budget slot Leases)")
      ->capture_default_str();
  app.add_option("--lease-namespace", flags.options.lease_namespace,
                 "namespace of the medik8s node leases")
      ->capture_default_str();
  app.add_option("-v,--v", flags.verbosity, "log client requests and retries to stderr")
      ->check(CLI::Range(0, 10));
  app.add_option("--server,-s", flags.overrides.server, "the API server's URL (kubectl --server)");
  app.add_option("--token", flags.overrides.token,
                 "bearer token instead of the kubeconfig user's credentials");
  app.add_flag("--insecure-skip-tls-verify", flags.overrides.insecure_skip_tls_verify,
               "do not check the server's certificate (insecure)");
  app.add_option("--as", flags.overrides.impersonate_user, "user to impersonate");
  app.add_option("--as-group", flags.overrides.impersonate_groups,
                 "group to impersonate (repeatable; needs --as)")
      ->allow_extra_args(false);
  app.add_option("--request-timeout", flags.request_timeout,
                 "give up a single request after this long (1s, 2m; 0: never)")
      ->default_str("15s");
}

void add_start(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* start = app.add_subcommand("start", "create a NodeMaintenance for a node");
  start->add_option("node", chosen.arg, "the node to take out")->required();
  start->add_option("--reason", flags.options.reason, "why (spec.reason)");
  start->add_option("--name", flags.options.name, "the NodeMaintenance's name")
      ->default_str("maintenance-<node>");
  start->add_option("--drain-timeout", flags.options.drain_timeout,
                    "give up the drain after this long (spec.drainTimeout, e.g. 90m, 2h)");
  start->add_flag("--wait", flags.options.wait,
                  "follow it like `watch` until Succeeded (exit 0) or Failed (exit 1)");
  start->add_option("--timeout", flags.timeout, "with --wait: give up after this long (exit 5)");
  on_chosen(*start, chosen, run_start);
}

void add_stop(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* stop = app.add_subcommand("stop", "delete the NodeMaintenance of a node (or by name)");
  stop->add_option("target", chosen.arg, "a NodeMaintenance name or a node name")->required();
  stop->add_flag("--wait", flags.options.wait, "return once the operator has released the node");
  stop->add_option("--timeout", flags.timeout, "with --wait: give up after this long (exit 5)");
  on_chosen(*stop, chosen, run_stop);
}

void add_done(CLI::App& app, Flags& /*flags*/, Chosen& chosen) {
  auto* done = app.add_subcommand(
      "done",
      "the work on a drained node is finished: mark its NodeMaintenance done (its "
      "MaintenancePlan then gives the node back)");
  done->add_option("node", chosen.arg, "the node")->required();
  on_chosen(*done, chosen, run_done);
}

void add_resume(CLI::App& app, Flags& /*flags*/, Chosen& chosen) {
  auto* resume = app.add_subcommand(
      "resume",
      "go on with a MaintenancePlan the operator stopped (a node failed, a health gate timed "
      "out); spec.paused stays yours");
  resume->add_option("plan", chosen.arg, "the MaintenancePlan")->required();
  on_chosen(*resume, chosen, run_resume);
}

void add_list(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* list = app.add_subcommand("list",
                                  "every NodeMaintenance: node, phase, progress, "
                                  "pending pods, age, what blocks it");
  add_output(*list, flags, "json|yaml|name|wide|jsonpath=TEMPLATE: the NodeMaintenanceList",
             kObjectOutputs);
  list->add_flag("--no-headers", flags.options.no_headers, "tables without their header line");
  list->callback([&chosen] {
    chosen.command = [](Session& s, CommandOptions o) { return run_list(s, std::move(o)); };
  });
}

void add_status(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* status = app.add_subcommand("status", "a NodeMaintenance's status in human form");
  status->add_option("name", chosen.arg, "the NodeMaintenance")->required();
  add_output(*status, flags, "json|yaml|name|wide|jsonpath=TEMPLATE: the NodeMaintenance object",
             kObjectOutputs);
  status->add_flag("--no-headers", flags.options.no_headers, "with -o wide: no header line");
  on_chosen(*status, chosen, run_status);
}

void add_watch(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* watch = app.add_subcommand(
      "watch",
      "a live progress bar until Succeeded (exit 0) or Failed (exit 1); plain lines "
      "when stdout is not a terminal");
  watch->add_option("name", chosen.arg, "the NodeMaintenance")->required();
  add_output(*watch, flags, "json|yaml: one JSON line per change", kWatchOutputs);
  watch->add_option("--timeout", flags.timeout, "give up after this long (exit 5)");
  on_chosen(*watch, chosen, run_watch);
}

void add_plan(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* plan = app.add_subcommand(
      "plan",
      "dry run, changes nothing: the pods that would be evicted, skipped or block, and "
      "the gates that would keep the maintenance Pending; with --plan, the pods a "
      "MaintenancePlan may evict twice");
  plan->add_option("node", chosen.arg, "the node (or --plan)");
  plan->add_option("--plan", flags.options.plan,
                   "instead of a node: the MaintenancePlan whose pods that tolerate its "
                   "steering taint may be evicted twice");
  plan->add_option("--name", flags.options.name, "the NodeMaintenance's name")
      ->default_str("maintenance-<node>");
  plan->add_option("--max-parallel", flags.options.max_parallel,
                   "the budget to plan with, instead of the operator's "
                   "--max-parallel-maintenances (published on its Lease nmo-budget)")
      ->check(CLI::Range(1, 100000));
  plan->add_option("--etcd-quorum-check", flags.etcd_quorum_check,
                   "the operator's --etcd-quorum-check: auto|off")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  add_output(*plan, flags, "json|yaml|jsonpath=TEMPLATE: the plan", kDocumentOutputs);
  plan->callback([&flags, &chosen] {
    if (chosen.arg.empty() == flags.options.plan.empty()) {
      throw CLI::ValidationError("plan", chosen.arg.empty()
                                             ? "give a node or --plan NAME"
                                             : "give a node or --plan NAME, not both");
    }
    chosen.command = [&arg = chosen.arg](Session& s, CommandOptions o) {
      return run_plan(s, arg, std::move(o));
    };
  });
}

void add_diagnose(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* diagnose = app.add_subcommand(
      "diagnose",
      "why a maintenance is stuck: status, events, leases, node, pending pods with "
      "their PDBs, and what to do next");
  diagnose->add_option("name", chosen.arg, "the NodeMaintenance")->required();
  add_output(*diagnose, flags, "json|yaml|jsonpath=TEMPLATE: the diagnosis", kDocumentOutputs);
  on_chosen(*diagnose, chosen, run_diagnose);
}

void add_plan_status(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* plan_status = app.add_subcommand(
      "plan-status",
      "a MaintenancePlan's progress: counts, a bar, the next window, the ETA and each node; "
      "--watch follows it until it ends");
  plan_status->add_option("name", chosen.arg, "the MaintenancePlan")->required();
  add_output(*plan_status, flags,
             "json|yaml|jsonpath=TEMPLATE: the MaintenancePlan object; with --watch json only: "
             "one JSON line per change",
             kDocumentOutputs);
  plan_status->add_flag("--watch,-w", flags.options.watch,
                        "follow the plan, redrawn in place on a terminal, until Succeeded (exit "
                        "0) or Failed (exit 1); plain blocks when stdout is not a terminal");
  plan_status->add_option("--timeout", flags.timeout,
                          "with --watch: give up after this long (exit 5)");
  plan_status->callback([&flags, &chosen] {
    // A stream of changes: JSON lines, not YAML documents or JSONPath renderings.
    if (flags.options.watch) flags.accepted_outputs = kPlanWatchOutputs;
    chosen.command = [&arg = chosen.arg](Session& s, CommandOptions o) {
      return run_plan_status(s, arg, std::move(o));
    };
  });
}

void add_rollout(CLI::App& app, Flags& flags, Chosen& chosen) {
  auto* rollout = app.add_subcommand(
      "rollout",
      "create a MaintenancePlan: many nodes one after the other, inside maintenance windows");
  RolloutFlags& r = flags.options.rollout;
  rollout->add_option("name", chosen.arg, "the MaintenancePlan's name")->required();
  rollout->add_option("--nodes", r.nodes, "the nodes, in order (comma-separated, repeatable)");
  rollout->add_option("--selector,-l", r.selector,
                      "the nodes by label, as kubectl -l (role=worker,zone in (a,b))");
  rollout->add_option("--order", r.order,
                      "AsListed (default with --nodes), ByName (default with --selector), ByZone");
  rollout->add_option("--reason", r.reason, "why (each NodeMaintenance's spec.reason)");
  rollout->add_option("--max-parallel", r.max_parallel,
                      "nodes in maintenance at once: a count or a percentage (default 1)");
  rollout->add_option("--max-unavailable", r.max_unavailable,
                      "nodes of the plan unavailable at once for any reason, the plan's own "
                      "included: a count or a percentage");
  rollout->add_option("--window", r.windows,
                      "when nodes may start: \"[DAYS ]HH:MM-HH:MM\", e.g. \"Sat,Sun "
                      "22:00-06:00\" or \"Mon-Fri 01:00-05:00\" (repeatable; default: any time)");
  rollout->add_option("--time-zone", r.time_zone, "the windows' IANA time zone (default UTC)");
  rollout->add_option("--blackout", r.blackout_dates,
                      "a date (YYYY-MM-DD, in --time-zone) when nothing starts (repeatable)");
  rollout->add_option("--on-window-close", r.on_window_close,
                      "a drain under way when the window closes: Finish (default), or Pause "
                      "(held until the next window, the node kept cordoned)");
  rollout->add_option("--done-when", r.done_when,
                      "when the work on a drained node is done: Confirmed (default; kubectl "
                      "maintenance done NODE), NodeRebooted, Soaked");
  rollout->add_option("--soak-time", r.soak_time, "with --done-when Soaked: how long (e.g. 30m)");
  rollout->add_option("--health-gate-timeout", r.health_gate_timeout,
                      "how long a given-back node may take to be healthy before the plan "
                      "pauses (default 30m)");
  rollout->add_flag("--paused", r.paused, "create it paused: nothing starts until unpaused");
  rollout->add_flag("--dry-run", flags.options.dry_run,
                    "have the API server check the plan, and create nothing");
  add_output(*rollout, flags, "json|yaml|jsonpath=TEMPLATE: the MaintenancePlan created",
             kDocumentOutputs);
  on_chosen(*rollout, chosen, run_rollout);
}

// The name kubectl looks for on PATH to complete `kubectl maintenance ...` (a symlink to us).
constexpr std::string_view kCompletionExecutable = "kubectl_complete-maintenance";

// Answers a completion request (completion.h); always exits 0, as cobra does.
int complete(CLI::App& app, Flags& flags, Chosen& chosen, const std::vector<std::string>& words) {
  CompletionQuery query = classify_completion(app, words);
  if (query.kind == CompletionQuery::Kind::kStatic) {
    print_candidates(query.candidates, query.prefix);
  } else if (query.kind != CompletionQuery::Kind::kNothing) {
    // The connection flags, then any subcommand, parsed like a real command line (CLI11 takes
    // the arguments in reverse order).
    std::vector<std::string> args = query.global_args;
    args.emplace_back("list");
    std::reverse(args.begin(), args.end());
    try {
      app.parse(args);
      chosen.command = [query](Session& s, CommandOptions) {
        return print_cluster_candidates(s, query);
      };
      (void)run_command(flags, chosen.command);
    } catch (const CLI::ParseError&) {
      // A broken flag among the words: no names to offer.
    }
  }
  print_directive();
  return kExitOk;
}

// One function per subcommand, in the order --help lists them.
using AddSubcommand = void (*)(CLI::App&, Flags&, Chosen&);
constexpr std::array<AddSubcommand, 11> kSubcommands = {
    add_start, add_stop, add_done,     add_resume,      add_list,   add_status,
    add_watch, add_plan, add_diagnose, add_plan_status, add_rollout};

int run(int argc, char** argv) {
  CLI::App app{
      "kubectl-maintenance: start, follow, explain and stop NodeMaintenances, and follow "
      "MaintenancePlans (nodemaintenance.medik8s.io) — also `kubectl maintenance` when on PATH.",
      "kubectl-maintenance"};
  app.set_version_flag("--version", std::string("kubectl-maintenance ") + NMO_VERSION);
  app.footer(kExitCodesHelp);
  app.require_subcommand(1);
  Flags flags;
  flags.options.operator_namespace = std::string(op::kDefaultOperatorNamespace);
  flags.options.lease_namespace = std::string(op::kDefaultLeaseNamespace);
  add_connection_flags(app, flags);
  Chosen chosen;
  for (const AddSubcommand add : kSubcommands) add(app, flags, chosen);
  for (CLI::App* sub : app.get_subcommands({})) {
    sub->fallthrough();
    sub->footer(kExitCodesHelp);
  }
  std::vector<std::string> words(argv + std::min(argc, 1), argv + argc);
  if (std::filesystem::path(argc > 0 ? argv[0] : "").filename() == kCompletionExecutable) {
    return complete(app, flags, chosen, words);
  }
  if (!words.empty() && words.front() == "__complete") {
    words.erase(words.begin());
    return complete(app, flags, chosen, words);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  return run_command(flags, chosen.command);
}

}  // namespace
}  // namespace nmo::cli

int main(int argc, char** argv) {
  try {
    return nmo::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
  } catch (...) {
    std::fputs("error: internal error: unknown exception\n", stderr);
  }
  return 1;
}
