// node-maintenance-operator: the manager binary's wiring. Takes the flags (flags.h), finds the
// API server like controller-runtime, starts the servers (servers.h: a port that cannot be bound
// or a missing certificate fails at once), and hands them and the NodeMaintenance controller to a
// runtime::Manager: the webhook, /metrics (HTTPS with TokenReview/SubjectAccessReview by
// default, like controller-runtime's secure metrics; plain HTTP with --metrics-secure=false)
// and the /healthz and /readyz probes (plain HTTP) on every replica, the controller on the
// leader (behind leader election when asked to). SIGTERM and SIGINT stop it cleanly: the
// reconcile workers finish, queued Events are written, the leader Lease is released, and then
// the webhook finishes its requests in flight.
//
// Exit status: 0 after a clean stop, 1 when leadership was lost, the controller could not start
// or a port could not be bound, 2 for a bad flag or configuration, such as a webhook certificate
// directory without tls.crt/tls.key (the message names it).
//
// Threading: one io_context thread runs everything (see docs/architecture.md).
#include <cstdio>
#include <exception>
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
#include "operator/controller/operator.h"
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

int run(int argc, char** argv) {
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
  auto metrics_address = runtime::parse_bind_address(flags.metrics_bind_address);
  auto probe_address = runtime::parse_bind_address(flags.health_probe_bind_address);
  for (const auto* parsed : {&metrics_address, &probe_address}) {
    if (!*parsed) {
      std::fprintf(stderr, "node-maintenance-operator: %s\n", parsed->error().message.c_str());
      return kExitUsage;
    }
  }

  asio::io_context io;
  runtime::ManagerMetrics metrics;
  auto operator_metrics = std::make_shared<op::NodeMaintenanceMetrics>(metrics);
  op::MaintenancePlanMetrics plan_metrics(metrics);
  flags.options.metrics = operator_metrics;
  std::string api_host = rest->server;
  if (const auto scheme = api_host.find("://"); scheme != std::string::npos) {
    api_host = api_host.substr(scheme + 3);
  }
  auto observe = [&metrics, api_host](std::string_view method, std::string_view code) {
    metrics.observe_request(api_host, method, code);
  };
  kube::ClientOptions client_options;
  client_options.qps = flags.qps;
  client_options.burst = flags.burst;
  client_options.on_attempt = observe;
  auto client = kube::Client::create(io.get_executor(), *rest, client_options);
  if (!client) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n", client.error().describe().c_str());
    return kExitUsage;
  }
  // Events get a client of their own, with its own rate limit (as controller-runtime's event
  // broadcaster does): a burst of Events never holds back an eviction or a status write.
  auto events_client = kube::Client::create(io.get_executor(), *rest, client_options);
  if (!events_client) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n",
                 events_client.error().describe().c_str());
    return kExitUsage;
  }
  flags.options.events_client = events_client->get();
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
  // Before the controller and leader election: every replica answers reviews at once.
  std::optional<Webhook> webhook;
  if (flags.webhook_port != 0) {
    Result<Webhook> started = start_webhook(io, *rest, flags, observe);
    if (!started) {
      const bool unusable_certificate = started.error().code == ErrorCode::kInvalid;
      logger.error("the admission webhook could not start",
                   {{"error", started.error().message},
                    {"cert_dir", flags.webhook_cert_dir},
                    {"port", flags.webhook_port},
                    {"hint", unusable_certificate
                                 ? "put the serving certificate there (" + flags.webhook_cert_file +
                                       ", " + flags.webhook_key_file +
                                       "), or pass --webhook-port=0 to run without the webhook"
                                 : std::string("choose another --webhook-port or "
                                               "--webhook-bind-address")}});
      return started.error().code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
    }
    webhook.emplace(std::move(started).value());
    runtime::export_connection_stats(metrics, "webhook", webhook->server->connection_stats());
  } else {
    logger.info("the admission webhook is disabled (--webhook-port=0)");
  }
  std::unique_ptr<kube::Client> authorization_client;
  std::unique_ptr<runtime::MetricsAuthorizer> authorizer;
  std::unique_ptr<http::Server> metrics_server;
  if (*metrics_address) {
    if (flags.metrics_secure) {
      kube::ClientOptions options = metrics_authorization_client_options();
      options.on_attempt = observe;
      auto created = kube::Client::create(io.get_executor(), *rest, options);
      if (!created) {
        std::fprintf(stderr, "node-maintenance-operator: %s\n", created.error().describe().c_str());
        return kExitUsage;
      }
      authorization_client = std::move(*created);
      runtime::MetricsAuthorizerOptions authorizer_options;
      authorizer_options.on_review = [&metrics](std::string_view review, std::string_view result) {
        metrics.observe_authorization_review(review, result);
      };
      authorizer_options.on_shed = [&metrics](std::string_view reason) {
        metrics.observe_authorization_shed(reason);
      };
      authorizer = std::make_unique<runtime::MetricsAuthorizer>(
          *authorization_client, system_clock(), std::move(authorizer_options));
    }
    auto started = start_metrics(io, **metrics_address, flags, metrics, authorizer.get());
    if (!started) {
      logger.error("the metrics server could not start",
                   {{"error", started.error().message},
                    {"hint", "choose another --metrics-bind-address, or 0 to disable it"}});
      return started.error().code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
    }
    metrics_server = std::move(started).value();
    runtime::export_connection_stats(metrics, "metrics", metrics_server->connection_stats());
  }

  runtime::ManagerOptions manager_options;
  if (flags.leader_elect) {
    manager_options.leader_election =
        runtime::LeaderElectionConfig{.lease_namespace = flags.options.namespace_,
                                      .lease_name = kLeaderElectionId,
                                      .identity = runtime::unique_identity(flags.options.identity)};
  }
  manager_options.on_leading_changed = [&metrics](bool leading) {
    metrics.set_leader(kLeaderElectionId, leading);
  };
  kube::ClientOptions leader_election_options = leader_election_client_options();
  leader_election_options.on_attempt = observe;
  auto leader_election_client =
      kube::Client::create(io.get_executor(), *rest, leader_election_options);
  if (!leader_election_client) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n",
                 leader_election_client.error().describe().c_str());
    return kExitUsage;
  }
  runtime::Manager manager(io.get_executor(), **leader_election_client, std::move(manager_options));
  // With leader election, every eviction first checks the lease: a leader paused past it must
  // not send the evictions it had queued.
  if (flags.leader_elect) flags.options.may_evict = [&manager] { return manager.check_leading(); };
  // One cache under every controller (runtime/cache.h): started on every replica before the
  // leader's runnables, so a new leader starts from synced informers.
  auto cache = std::make_unique<runtime::Cache>(io.get_executor(), **client);
  runtime::Cache& shared_cache = *cache;
  manager.add("cache", std::move(cache), runtime::RunsOn::kEveryReplica);
  auto controller =
      std::make_unique<op::Operator>(io.get_executor(), **client, shared_cache, flags.options);
  const op::Operator& running = *controller;
  operator_metrics->track([&running] { return running.maintenances(); },
                          [&running] { return running.active_workers(); });
  add_checks(manager, flags, running, webhook ? webhook->server.get() : nullptr);
  // Stopped in reverse: the controller first, then the webhook (its reviews in flight finish),
  // then the metrics and the probes.
  if (*probe_address) {
    auto started = start_probes(io, **probe_address, manager);
    if (!started) {
      logger.error("the health probe server could not start",
                   {{"error", started.error().message},
                    {"hint", "choose another --health-probe-bind-address, or 0 to disable it"}});
      return started.error().code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
    }
    runtime::export_connection_stats(metrics, "health-probes", (*started)->connection_stats());
    manager.add(
        "probes",
        std::make_unique<runtime::ServerRunnable>(std::move(started).value(), kEndpointStopGrace),
        runtime::RunsOn::kEveryReplica);
  }
  if (metrics_server) {
    manager.add(
        "metrics",
        std::make_unique<runtime::ServerRunnable>(std::move(metrics_server), kEndpointStopGrace),
        runtime::RunsOn::kEveryReplica);
  }
  if (webhook) {
    // Before the server, so it stops after the reviews in flight have finished.
    manager.add("webhook-lookup", std::make_unique<runtime::RunnableRef>(*webhook->lookup),
                runtime::RunsOn::kEveryReplica);
    manager.add(
        "webhook",
        std::make_unique<runtime::ServerRunnable>(std::move(webhook->server), kWebhookStopGrace),
        runtime::RunsOn::kEveryReplica);
  }
  manager.add("controller", std::move(controller), runtime::RunsOn::kLeader);
  // MaintenancePlans drive NodeMaintenances through the controller above (docs/design.md §10).
  auto plans = std::make_unique<op::fleet::PlanController>(
      io.get_executor(), **client, shared_cache,
      op::fleet::PlanControllerOptions{
          .lease_namespace = flags.options.lease_namespace,
          .poll = std::chrono::seconds(flags.plan_poll_seconds),
          .identity = flags.options.identity,
          .events_client = flags.options.events_client,
          .node_lifecycle_conditions = flags.options.node_lifecycle_conditions});
  const op::fleet::PlanController& running_plans = *plans;
  plan_metrics.track([&running_plans] { return running_plans.plans(); });
  manager.add("plans", std::move(plans), runtime::RunsOn::kLeader);
  // The budget for admins and `kubectl maintenance plan` (operator/budget/published_budget.h);
  // every replica publishes the same value, and a failure only costs the courtesy.
  kube::Client& budget_client = **client;
  asio::co_spawn(io, log_server_support(budget_client, logger), asio::detached);
  asio::co_spawn(
      io,
      [&budget_client, &flags, &logger]() -> asio::awaitable<void> {
        const std::string namespace_ = flags.options.namespace_;
        auto published = co_await op::publish_budget(budget_client, namespace_,
                                                     flags.options.max_parallel_maintenances);
        if (!published) {
          logger.warn("could not publish the budget", {{"error", published.error().describe()}});
        }
      },
      asio::detached);
  int status = 0;
  asio::co_spawn(io, manager.run(), [&](std::exception_ptr error, int result) {
    status = error ? kExitFailure : result;
    (*client)->shutdown();
    (*events_client)->shutdown();
    (*leader_election_client)->shutdown();
    if (authorization_client) authorization_client->shutdown();
    if (webhook) webhook->client->shutdown();
  });
  io.run();
  logger.info("stopped", {{"exit_status", status}});
  return status;
}

}  // namespace
}  // namespace nmo

int main(int argc, char** argv) {
  // CLI11 reports flag errors through exceptions that CLI11_PARSE handles; anything else
  // escaping is a bug, reported without unwinding past main.
  try {
    return nmo::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "node-maintenance-operator: internal error: %s\n", e.what());
  } catch (...) {
    std::fputs("node-maintenance-operator: internal error: unknown exception\n", stderr);
  }
  return 1;
}
