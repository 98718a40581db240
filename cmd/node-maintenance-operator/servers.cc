#include "servers.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/value.hpp>

#include "http/self_signed.h"
#include "kube/api/version.h"
#include "operator/api/server_support.h"

namespace nmo {
namespace {

// The largest AdmissionReview accepted: an object may be 1.5 MiB (etcd's default request limit)
// and an UPDATE carries two of them.
constexpr std::size_t kWebhookMaxBody = std::size_t{3} << 20U;

// Connections /metrics and the probes hold at once (the webhook keeps the server's 1,024, for an
// API server's up to 200 concurrent reviews). Their real callers are a few scrapers and the
// kubelet; a TLS connection costs about 120 KiB (OpenSSL's and Asio's record buffers), so 1,024
// on both TLS ports took a flooded leader to 280 MiB, past the pod's 256Mi
// (docs/reliability.md, "Hostile clients").
constexpr std::size_t kScrapeMaxConnections = 256;
constexpr std::size_t kScrapeMaxConnectionsPerPeer = 64;

// The options of a server only scrapers and the kubelet call (/metrics, the probes): small
// requests, and the connection limits above.
http::ServerOptions scrape_server_options(std::string name, const runtime::BindAddress& where) {
  http::ServerOptions options;
  options.name = std::move(name);
  options.max_connections = kScrapeMaxConnections;
  options.max_connections_per_peer = kScrapeMaxConnectionsPerPeer;
  options.bind_address = where.ip;
  options.port = where.port;
  options.max_body_bytes = 1024;
  return options;
}

// Whether something accepts TCP connections on `port` of `bind_ip` (its loopback twin for a
// wildcard address), within a second.
asio::awaitable<std::optional<std::string>> check_listening(std::string bind_ip,
                                                            std::uint16_t port) {
  auto executor = co_await asio::this_coro::executor;
  boost::system::error_code error;
  asio::ip::address address = asio::ip::make_address(bind_ip, error);
  // A wildcard listener (dual stack "::" too, or its IPv4 fallback) takes 127.0.0.1.
  if (error || address.is_unspecified()) address = asio::ip::address_v4::loopback();
  asio::ip::tcp::socket socket(executor);
  // The deadline cancels the connect; its handler touches the socket only when it expired,
  // which happens before the connect completes.
  asio::steady_timer deadline(executor, std::chrono::seconds(1));
  bool expired = false;
  deadline.async_wait([&socket, &expired](const boost::system::error_code& timer_error) {
    if (timer_error) return;
    expired = true;
    socket.cancel();
  });
  const asio::ip::tcp::endpoint endpoint(address, port);
  auto [connect_error] =
      co_await socket.async_connect(endpoint, asio::as_tuple(asio::use_awaitable));
  deadline.cancel();
  if (expired) co_return "webhook server: no answer on port " + std::to_string(port);
  if (connect_error) {
    co_return "webhook server: port " + std::to_string(port) + ": " + connect_error.message();
  }
  co_return std::nullopt;
}

}  // namespace

Result<std::unique_ptr<http::Server>> start_probes(asio::io_context& io,
                                                   const runtime::BindAddress& where,
                                                   const runtime::Manager& manager) {
  http::ServerOptions options = scrape_server_options("health-probes", where);
  return http::Server::start(io.get_executor(), options,
                             runtime::probe_handler(manager.healthz(), manager.readyz()));
}

void add_checks(runtime::Manager& manager, const Flags& flags,
                const op::NodeMaintenanceController& controller,
                std::optional<std::uint16_t> webhook_port) {
  const std::chrono::seconds max_stall(flags.healthz_max_stall_seconds);
  manager.add_health_check(
      "controller", [&controller, max_stall]() -> asio::awaitable<std::optional<std::string>> {
        if (!controller.healthy(max_stall)) {
          co_return "a reconcile has been running for more than " +
              std::to_string(max_stall.count()) + " s";
        }
        co_return std::nullopt;
      });
  if (webhook_port) {
    std::string ip = flags.webhook_bind_address;
    const std::uint16_t port = *webhook_port;
    manager.add_ready_check(
        "webhook",
        [ip, port]() -> asio::awaitable<std::optional<std::string>> {
          co_return co_await check_listening(ip, port);
        },
        runtime::RunsOn::kEveryReplica);
  }
  manager.add_ready_check(
      "node-leases",
      [&controller]() -> asio::awaitable<std::optional<std::string>> {
        co_return controller.lease_problem();
      },
      runtime::RunsOn::kLeader);
  manager.add_ready_check(
      "controller",
      [&controller]() -> asio::awaitable<std::optional<std::string>> {
        if (!controller.ready())
          co_return std::string("the controller's caches are not synced yet");
        co_return std::nullopt;
      },
      runtime::RunsOn::kLeader);
}

Result<std::unique_ptr<http::Server>> start_metrics(asio::io_context& io,
                                                    const runtime::BindAddress& where,
                                                    const Flags& flags,
                                                    runtime::ManagerMetrics& metrics,
                                                    runtime::MetricsAuthorizer* authorizer) {
  http::ServerOptions options = scrape_server_options("metrics", where);
  if (flags.metrics_secure) {
    if (!flags.metrics_cert_dir.empty()) {
      options.cert_dir = flags.metrics_cert_dir;
    } else {
      NMO_TRY_ASSIGN(
          http::CertificatePair pair,
          http::make_self_signed_certificate("node-maintenance-operator-metrics",
                                             {host_identity(), "localhost"}, {"127.0.0.1", "::1"}));
      options.certificate_pem = std::move(pair.certificate_pem);
      options.key_pem = std::move(pair.key_pem);
    }
  }
  return http::Server::start(io.get_executor(), options,
                             runtime::metrics_handler(metrics, authorizer));
}

Result<Webhook> start_webhook(asio::io_context& io, const kube::RestConfig& rest,
                              runtime::Cache& cache, const Flags& flags,
                              std::function<void(std::string_view, std::string_view)> observe) {
  Webhook webhook;
  // Its own client, so reviews never queue behind the controller's requests in the client-side
  // rate limit, and bounded so that both lookups fit the API server's 15 s for a review.
  kube::ClientOptions options;
  options.qps = 50.0;
  options.burst = 100;
  options.user_agent = "node-maintenance-operator/webhook";
  options.on_attempt = std::move(observe);
  options.request_timeout = std::chrono::seconds(3);
  options.max_retries = 1;
  // Two lookups of at most 4 s queueing and 3 s each stay inside the 15 s.
  options.max_rate_limit_wait = std::chrono::seconds(4);
  options.max_rate_limit_waiters = 200;
  NMO_TRY_ASSIGN(webhook.client, kube::Client::create(io.get_executor(), rest, options));
  webhook.lookup = std::make_unique<op::webhook::LiveClusterLookup>(*webhook.client, cache);
  op::webhook::ValidatorOptions validator_options;
  validator_options.reject_unsafe_control_plane = flags.webhook_reject_unsafe_control_plane;
  webhook.validator = std::make_unique<op::webhook::Validator>(*webhook.lookup, validator_options);
  webhook.handler = std::make_unique<op::webhook::AdmissionHandler>(*webhook.validator);
  http::ServerOptions server_options;
  server_options.name = "webhook";
  server_options.bind_address = flags.webhook_bind_address;
  server_options.port = static_cast<std::uint16_t>(flags.webhook_port);
  server_options.cert_dir = flags.webhook_cert_dir;
  server_options.cert_file = flags.webhook_cert_file;
  server_options.key_file = flags.webhook_key_file;
  server_options.max_body_bytes = kWebhookMaxBody;
  server_options.client_ca_file = flags.webhook_client_ca;
  op::webhook::AdmissionHandler* handler = webhook.handler.get();
  NMO_TRY_ASSIGN(webhook.server, http::Server::start(io.get_executor(), server_options,
                                                     [handler](http::Request request) {
                                                       return handler->handle(std::move(request));
                                                     }));
  return webhook;
}

asio::awaitable<void> log_server_support(kube::Client& client, const log::Logger& logger) {
  const std::string path(kube::kVersionPath);
  Result<boost::json::value> body = co_await client.get_json(path);
  Result<kube::ServerVersion> version =
      body ? kube::decode_server_version(*body) : Result<kube::ServerVersion>(body.error());
  if (!version) {
    logger.warn("could not read the API server's version", {{"error", version.error().describe()}});
    co_return;
  }
  logger.info("API server", {{"kubernetes", version->git_version}, {"tested", op::tested_range()}});
  if (std::string warning = op::untested_version_warning(*version); !warning.empty()) {
    logger.warn(warning, {{"kubernetes", version->git_version}});
  }
  for (const op::MissingFeature& missing : op::missing_features(*version)) {
    logger.info("the API server lacks " + missing.feature,
                {{"since", missing.since}, {"instead", missing.instead}});
  }
}

}  // namespace nmo
