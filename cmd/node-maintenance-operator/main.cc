// node-maintenance-operator: the manager binary's wiring, flags → configuration → run. Takes the
// flags (flags.h), finds the API server like controller-runtime, and hands everything to a
// runtime::Manager, which owns it: the client lanes, the shared informer cache, the servers
// (servers.h: a port that cannot be bound or a missing certificate fails at once) — the webhook,
// /metrics (HTTPS with TokenReview/SubjectAccessReview by default, like controller-runtime's
// secure metrics; plain HTTP with --metrics-secure=false) and the /healthz and /readyz probes
// (plain HTTP) on every replica — and the NodeMaintenance controller and the MaintenancePlan
// controller (once its API is served) on the leader, behind leader election when asked to.
// SIGTERM and SIGINT stop it cleanly: the reconcile workers finish, queued Events are written,
// the leader Lease is released, and then the webhook finishes its requests in flight.
//
// Exit status (one mapping, exit_status()): 0 after a clean stop, 1 when leadership was lost,
// the controller could not start or a port could not be bound, 2 for a bad flag or
// configuration, such as a webhook certificate directory without tls.crt/tls.key (the message
// names it).
//
// Threading: one io_context thread runs everything (see docs/architecture.md).
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/clock.h"
#include "base/file_limit.h"
#include "base/log.h"
#include "base/log_async.h"
#include "flags.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "kube/config/load_rest_config.h"
#include "operator/budget/published_budget.h"
#include "operator/controller/node_maintenance_controller.h"
#include "operator/fleet/plan_controller.h"
#include "operator/metrics/plan_metrics.h"
#include "operator/metrics/prometheus_metrics.h"
#include "runtime/cache.h"
#include "runtime/endpoints.h"
#include "runtime/leader_election.h"
#include "runtime/manager.h"
#include "runtime/metrics.h"
#include "runtime/metrics_authorizer.h"
#include "servers.h"

#ifndef NMO_VERSION
#error "NMO_VERSION must be defined by the build (cmd/node-maintenance-operator/CMakeLists.txt)"
#endif

namespace nmo {
namespace {

constexpr int kExitFailure = runtime::kExitFailure;

// The leader-election id upstream uses, so two operators never lead in one namespace
// (docs/design.md §3.2).
constexpr const char* kLeaderElectionId = "135b1886.medik8s.io";

// A client lane besides the operator's own (docs/design.md §6): its own client-side rate
// limit of `qps` and `burst`, so it never waits behind another lane's requests, and a request
// that would queue longer than `max_wait` or behind `max_waiters` others fails at once.
kube::ClientOptions client_lane(std::string name, double qps, int burst,
                                std::chrono::milliseconds max_wait, int max_waiters) {
  kube::ClientOptions options;
  options.qps = qps;
  options.burst = burst;
  options.max_rate_limit_wait = max_wait;
  options.max_rate_limit_waiters = max_waiters;
  options.user_agent = "node-maintenance-operator/" + name;
  return options;
}

// Leader election: one Lease renewal every retry period (2 s), which must never queue behind
// the drain's or anybody else's requests; a renewal that cannot start within a retry period
// is better failed and retried than late.
kube::ClientOptions leader_election_client_options() {
  return client_lane("leader-election", 5.0, 10, std::chrono::seconds(2), 10);
}

// Secure /metrics (docs/reliability.md, "Hostile clients"): anyone who reaches the port makes
// it send TokenReviews, so this lane is small and never queues for long: a scraper costs one
// review a minute (runtime/metrics_authorizer.h), and a flood of made-up tokens costs at most
// 10 reviews at once and 5 a second; beyond that callers get 503 at once.
kube::ClientOptions metrics_authorization_client_options() {
  kube::ClientOptions options =
      client_lane("metrics-authorization", 5.0, 10, std::chrono::seconds(1), 5);
  options.request_timeout = std::chrono::seconds(5);
  options.max_retries = 1;
  return options;
}

// Counts each request to the API server (rest_client_requests_total).
using Observer = std::function<void(std::string_view method, std::string_view code)>;

// The one mapping from a failure to set the process up to its exit status: a port that cannot be
// bound (or another passing condition of the host) is kExitFailure, as a failure at run time;
// everything else is a bad flag or configuration, kExitUsage.
int exit_status(const Error& error) {
  return error.code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
}

// Adds `failure` to what went wrong with `what`, and how to get past it.
Error failed(std::string_view what, const Error& failure, std::string_view hint) {
  return Error(failure.code,
               std::string(what) + ": " + failure.message + " (" + std::string(hint) + ")");
}

// The process's pieces that outlive the Manager's run() but are not runnables: what the
// metrics read and what the webhook's handler calls.
struct Parts {
  runtime::ManagerMetrics metrics;
  std::shared_ptr<op::NodeMaintenanceMetrics> operator_metrics =
      std::make_shared<op::NodeMaintenanceMetrics>(metrics);
  op::MaintenancePlanMetrics plan_metrics{metrics};
  std::optional<Webhook> webhook;
  std::optional<std::uint16_t> webhook_port;  // while the webhook serves
  std::unique_ptr<runtime::MetricsAuthorizer> authorizer;
};

// The servers every replica runs (the webhook, /metrics, the probes), started now so that a port
// that cannot be bound or a missing certificate fails before anything runs, and handed to the
// Manager; stopped in reverse: the webhook (its reviews in flight finish), metrics, probes.
Result<void> add_servers(asio::io_context& io, const kube::RestConfig& rest, const Flags& flags,
                         const log::Logger& logger, const Observer& observe,
                         runtime::Manager& manager, Parts& parts) {
  NMO_TRY_ASSIGN(const auto metrics_address,
                 runtime::parse_bind_address(flags.metrics_bind_address));
  NMO_TRY_ASSIGN(const auto probe_address,
                 runtime::parse_bind_address(flags.health_probe_bind_address));
  if (probe_address) {
    auto probes = start_probes(io, *probe_address, manager);
    if (!probes) {
      return failed("the health probe server could not start", probes.error(),
                    "choose another --health-probe-bind-address, or 0 to disable it");
    }
    runtime::export_connection_stats(parts.metrics, "health-probes", (*probes)->connection_stats());
    manager.add_server("probes", std::move(probes).value(), kEndpointStopGrace);
  }
  if (metrics_address) {
    if (flags.metrics_secure) {
      kube::ClientOptions options = metrics_authorization_client_options();
      options.on_attempt = observe;
      NMO_TRY_ASSIGN(auto client, kube::Client::create(io.get_executor(), rest, options));
      runtime::MetricsAuthorizerOptions authorizer_options;
      authorizer_options.on_review = [&metrics = parts.metrics](std::string_view review,
                                                                std::string_view result) {
        metrics.observe_authorization_review(review, result);
      };
      authorizer_options.on_shed = [&metrics = parts.metrics](std::string_view reason) {
        metrics.observe_authorization_shed(reason);
      };
      parts.authorizer = std::make_unique<runtime::MetricsAuthorizer>(
          manager.own_client(std::move(client)), system_clock(), std::move(authorizer_options));
    }
    auto server = start_metrics(io, *metrics_address, flags, parts.metrics, parts.authorizer.get());
    if (!server) {
      return failed("the metrics server could not start", server.error(),
                    "choose another --metrics-bind-address, or 0 to disable it");
    }
    runtime::export_connection_stats(parts.metrics, "metrics", (*server)->connection_stats());
    manager.add_server("metrics", std::move(server).value(), kEndpointStopGrace);
  }
  if (flags.webhook_port == 0) {
    logger.info("the admission webhook is disabled (--webhook-port=0)");
    return Result<void>();
  }
  auto webhook = start_webhook(io, rest, manager.cache(), flags, observe);
  if (!webhook) {
    return failed("the admission webhook could not start", webhook.error(),
                  webhook.error().code == ErrorCode::kInvalid
                      ? "put the serving certificate in " + flags.webhook_cert_dir + " (" +
                            flags.webhook_cert_file + ", " + flags.webhook_key_file +
                            "), or pass --webhook-port=0 to run without the webhook"
                      : "choose another --webhook-port or --webhook-bind-address");
  }
  parts.webhook.emplace(std::move(webhook).value());
  parts.webhook_port = parts.webhook->server->port();
  runtime::export_connection_stats(parts.metrics, "webhook",
                                   parts.webhook->server->connection_stats());
  manager.own_client(std::move(parts.webhook->client));
  // Before the server, so it stops after the reviews in flight have finished.
  manager.add("webhook-lookup", std::make_unique<runtime::RunnableRef>(*parts.webhook->lookup),
              runtime::RunsOn::kEveryReplica);
  manager.add_server("webhook", std::move(parts.webhook->server), kWebhookStopGrace);
  return Result<void>();
}

// The host and port of the API server, as rest_client_requests_total labels them.
std::string api_host(const kube::RestConfig& rest) {
  std::string host = rest.server;
  if (const auto scheme = host.find("://"); scheme != std::string::npos) {
    host = host.substr(scheme + 3);
  }
  return host;
}

// The client lanes (docs/design.md §6): the controllers', the Events' (a burst of Events never
// holds back an eviction or a status write, as controller-runtime's broadcaster does), leader
// election's (a renewal never queues behind anything).
struct ClientLanes {
  std::unique_ptr<kube::Client> controllers;
  std::unique_ptr<kube::Client> events;
  std::unique_ptr<kube::Client> election;
};

Result<ClientLanes> create_client_lanes(asio::io_context& io, const kube::RestConfig& rest,
                                        const Flags& flags, const Observer& observe) {
  kube::ClientOptions controller_options;
  controller_options.qps = flags.qps;
  controller_options.burst = flags.burst;
  controller_options.on_attempt = observe;
  NMO_TRY_ASSIGN(auto controllers,
                 kube::Client::create(io.get_executor(), rest, controller_options));
  NMO_TRY_ASSIGN(auto events, kube::Client::create(io.get_executor(), rest, controller_options));
  kube::ClientOptions election_options = leader_election_client_options();
  election_options.on_attempt = observe;
  NMO_TRY_ASSIGN(auto election, kube::Client::create(io.get_executor(), rest, election_options));
  return ClientLanes{.controllers = std::move(controllers),
                     .events = std::move(events),
                     .election = std::move(election)};
}

// Leader election when asked for, its state exported as a metric either way.
runtime::ManagerOptions manager_options(const Flags& flags, runtime::ManagerMetrics& metrics) {
  runtime::ManagerOptions options;
  if (flags.leader_elect) {
    options.leader_election =
        runtime::LeaderElectionConfig{.lease_namespace = flags.options.namespace_,
                                      .lease_name = kLeaderElectionId,
                                      .identity = runtime::unique_identity(flags.options.identity)};
  }
  options.on_leading_changed = [&metrics](bool leading) {
    metrics.set_leader(kLeaderElectionId, leading);
  };
  return options;
}

// The NodeMaintenance controller, on the leader, with the health checks that watch it.
void add_maintenance_controller(asio::io_context& io, kube::Client& client, runtime::Cache& cache,
                                Flags& flags, runtime::Manager& manager, Parts& parts) {
  // With leader election, every eviction first checks the lease: a leader paused past it must
  // not send the evictions it had queued.
  if (flags.leader_elect) flags.options.may_evict = [&manager] { return manager.check_leading(); };
  auto controller = std::make_unique<op::NodeMaintenanceController>(io.get_executor(), client,
                                                                    cache, flags.options);
  const op::NodeMaintenanceController& running = *controller;
  parts.operator_metrics->track([&running] { return running.maintenances(); },
                                [&running] { return running.active_workers(); });
  add_checks(manager, flags, running, parts.webhook_port);
  manager.add("controller", std::move(controller), runtime::RunsOn::kLeader);
}

// MaintenancePlans drive NodeMaintenances through the controller above (docs/design.md §10), on
// the leader once their API is served.
void add_plan_controller(asio::io_context& io, kube::Client& client, runtime::Cache& cache,
                         const Flags& flags, runtime::Manager& manager, Parts& parts) {
  auto plans = std::make_unique<op::fleet::PlanController>(
      io.get_executor(), client, cache,
      op::fleet::PlanControllerOptions{
          .lease_namespace = flags.options.lease_namespace,
          .poll = std::chrono::seconds(flags.plan_poll_seconds),
          .identity = flags.options.identity,
          .events_client = flags.options.events_client,
          .node_lifecycle_conditions = flags.options.node_lifecycle_conditions,
          .steering_taint = flags.plan_steering_taint});
  const op::fleet::PlanController& running_plans = *plans;
  parts.plan_metrics.track([&running_plans] { return running_plans.plans(); });
  manager.add_when_served(
      "plans", client, kube::collection_path<op::MaintenancePlan>(""),
      runtime::ServedApi{
          .what = "the MaintenancePlan API",
          .resource = "MaintenancePlans",
          .install = "install deploy/crd/nodemaintenance.medik8s.io_maintenanceplans.yaml"},
      std::move(plans), runtime::RunsOn::kLeader);
}

// Courtesies on every replica, whose failure costs only a log line: the API server's version
// and what it lacks, and the budget for admins and `kubectl maintenance plan`
// (operator/budget/published_budget.h).
void start_courtesies(asio::io_context& io, kube::Client& client, const Flags& flags,
                      const log::Logger& logger) {
  asio::co_spawn(io, log_server_support(client, logger), asio::detached);
  asio::co_spawn(
      io,
      [&client, &flags, &logger]() -> asio::awaitable<void> {
        const std::string namespace_ = flags.options.namespace_;
        auto published = co_await op::publish_budget(client, namespace_,
                                                     flags.options.max_parallel_maintenances);
        if (!published) {
          logger.warn("could not publish the budget", {{"error", published.error().describe()}});
        }
      },
      asio::detached);
}

// Everything the process runs, on `manager`: the cache, the servers, the NodeMaintenance
// controller and the plan controller (once its API is served); then runs it.
Result<int> run(Flags& flags, const kube::RestConfig& rest, const log::Logger& logger) {
  asio::io_context io;
  Parts parts;
  flags.options.metrics = parts.operator_metrics;
  const Observer observe = [&metrics = parts.metrics, host = api_host(rest)](
                               std::string_view method, std::string_view code) {
    metrics.observe_request(host, method, code);
  };
  NMO_TRY_ASSIGN(ClientLanes lanes, create_client_lanes(io, rest, flags, observe));
  runtime::Manager manager(io.get_executor(), *lanes.election,
                           manager_options(flags, parts.metrics));
  manager.own_client(std::move(lanes.election));
  kube::Client& client = manager.own_client(std::move(lanes.controllers));
  flags.options.events_client = &manager.own_client(std::move(lanes.events));
  // One cache under every controller (runtime/cache.h), on every replica.
  runtime::Cache& cache = manager.add_cache(client);
  NMO_TRY(add_servers(io, rest, flags, logger, observe, manager, parts));
  add_maintenance_controller(io, client, cache, flags, manager, parts);
  add_plan_controller(io, client, cache, flags, manager, parts);
  start_courtesies(io, client, flags, logger);
  int status = kExitFailure;
  asio::co_spawn(io, manager.run(), [&](std::exception_ptr error, int result) {
    status = error ? kExitFailure : result;
  });
  io.run();
  return status;
}

// flags → configuration → run, and the exit status.
int run_main(int argc, char** argv) {
  Flags flags;
  if (const std::optional<int> stop = parse_flags(argc, argv, flags)) return *stop;
  auto rest = kube::load_rest_config({.path = flags.kubeconfig, .context = flags.context});
  if (!rest) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n", rest.error().describe().c_str());
    return kExitUsage;
  }
  const std::string namespace_source = resolve_namespace(flags, *rest);
  const bool json = flags.log_format.empty() ? in_cluster(*rest) : flags.log_format == "json";
  log::configure(json ? log::Format::kJson : log::Format::kText, flags.verbosity);
  // From here on a stalled stderr cannot hold up the io thread; the last lines are written
  // when run() returns.
  const log::AsyncWriter async_log;
  const log::Logger logger = log::root().with({{"controller", "manager"}});
  // Each watch and each request in flight holds a connection (docs/operations.md, "Availability
  // of the operator"): the soft open-file limit goes up to the hard one before any opens.
  if (const Result<OpenFileLimit> limit = raise_open_file_limit(); !limit) {
    logger.warn("could not raise the open-file limit", {{"error", limit.error().message}});
  } else if (limit->after != limit->before) {
    logger.info("raised the open-file limit from " + std::to_string(limit->before) + " to " +
                std::to_string(limit->after));
  }
  for (const std::string& note : flags.upstream_notes) {
    logger.info("upstream flag", {{"effect", note}});
  }
  logger.info("starting", {{"version", NMO_VERSION},
                           {"api_server", rest->server},
                           {"config", rest->origin},
                           {"namespace", flags.options.namespace_},
                           {"namespace_from", namespace_source},
                           {"max_parallel_maintenances", flags.max_parallel},
                           {"leader_elect", flags.leader_elect}});
  const Result<int> status = run(flags, *rest, logger);
  if (!status) {
    logger.error("could not start", {{"error", status.error().describe()}});
    return exit_status(status.error());
  }
  logger.info("stopped", {{"exit_status", *status}});
  return *status;
}

}  // namespace
}  // namespace nmo

int main(int argc, char** argv) {
  // CLI11 reports flag errors through exceptions that CLI11_PARSE handles; anything else
  // escaping is a bug, reported without unwinding past main.
  try {
    return nmo::run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "node-maintenance-operator: internal error: %s\n", e.what());
  } catch (...) {
    std::fputs("node-maintenance-operator: internal error: unknown exception\n", stderr);
  }
  return 1;
}
