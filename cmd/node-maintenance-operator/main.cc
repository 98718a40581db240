// node-maintenance-operator: the manager binary, flags and wiring. Parses the flags of
// docs/design.md §6 (each also settable through the environment as NMO_<FLAG>), finds the API
// server like controller-runtime, starts the servers (so that a port that cannot be bound or a
// missing certificate fails at once), and hands them and the NodeMaintenance controller to a
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
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/value.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "http/asio.h"
#include "http/self_signed.h"
#include "http/server.h"
#include "kube/api/version.h"
#include "kube/client/client.h"
#include "kube/config/load_rest_config.h"
#include "operator/api/server_support.h"
#include "operator/budget/published_budget.h"
#include "operator/controller/operator.h"
#include "operator/metrics/prometheus_metrics.h"
#include "operator/webhook/handler.h"
#include "operator/webhook/live_lookup.h"
#include "operator/webhook/validator.h"
#include "runtime/endpoints.h"
#include "runtime/leader_election.h"
#include "runtime/manager.h"
#include "runtime/metrics.h"
#include "runtime/metrics_authorizer.h"
#include "runtime/upstream_flags.h"

#ifndef NMO_VERSION
#error "NMO_VERSION must be defined by the build (cmd/node-maintenance-operator/CMakeLists.txt)"
#endif

namespace nmo {
namespace {

constexpr int kExitFailure = runtime::kExitFailure;
constexpr int kExitUsage = 2;

// The leader-election id upstream uses, so two operators never lead in one namespace
// (docs/design.md §3.2).
constexpr const char* kLeaderElectionId = "135b1886.medik8s.io";

// How long the webhook may finish its requests in flight at shutdown. The API server gives each
// review 15 s (timeoutSeconds in the manifests); the pod's 30 s grace covers the controller's
// stop and this.
constexpr std::chrono::seconds kWebhookStopGrace{10};

// The largest AdmissionReview accepted: an object may be 1.5 MiB (etcd's default request limit)
// and an UPDATE carries two of them.
constexpr std::size_t kWebhookMaxBody = std::size_t{3} << 20U;

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

struct Flags {
  std::string kubeconfig;
  std::string context;
  bool leader_elect = false;
  int max_parallel = 1;
  std::string etcd_quorum_check = "auto";
  int etcd_quorum_stable_for_seconds = 30;
  double qps = 20.0;
  int burst = 30;
  // Empty: json in a cluster (in-cluster service account), text elsewhere.
  std::string log_format;
  int verbosity = 0;
  int webhook_port = 9443;
  // controller-runtime's default, so manifests written for upstream NMO mount the Secret there.
  std::string webhook_cert_dir = "/tmp/k8s-webhook-server/serving-certs";
  // Where OLM mounts the webhook's certificate (apiserver.crt, apiserver.key); used when it exists
  // and --webhook-cert-dir is not given.
  std::string olm_cert_dir = "/apiserver.local.config/certificates";
  std::string webhook_cert_file = "tls.crt";
  std::string webhook_key_file = "tls.key";
  std::string webhook_bind_address = "0.0.0.0";
  bool webhook_reject_unsafe_control_plane = false;
  std::string metrics_bind_address = ":8443";
  bool metrics_secure = true;
  std::string metrics_cert_dir;
  std::string health_probe_bind_address = ":8081";
  int healthz_max_stall_seconds = 300;
  int node_lease_renew_interval_seconds =
      static_cast<int>(std::chrono::seconds(op::kNodeLeaseRenewInterval).count());
  op::OperatorOptions options;
};

// How long the metrics and probe servers may finish a request in flight at shutdown.
constexpr std::chrono::seconds kEndpointStopGrace{2};

std::string host_identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) == 0) return name.data();
  return "node-maintenance-operator";
}

// Whether something accepts TCP connections on `port` of `bind_ip` (its loopback twin for a
// wildcard address), within a second.
asio::awaitable<std::optional<std::string>> check_listening(std::string bind_ip,
                                                            std::uint16_t port) {
  auto executor = co_await asio::this_coro::executor;
  boost::system::error_code error;
  asio::ip::address address = asio::ip::make_address(bind_ip, error);
  if (error || address.is_unspecified()) {
    address = address.is_v6() ? asio::ip::address(asio::ip::address_v6::loopback())
                              : asio::ip::address(asio::ip::address_v4::loopback());
  }
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

// Starts the probe server with the manager's checks (see Manager::healthz and readyz).
Result<std::unique_ptr<http::Server>> start_probes(asio::io_context& io,
                                                   const runtime::BindAddress& where,
                                                   const runtime::Manager& manager) {
  http::ServerOptions options;
  options.name = "health-probes";
  options.bind_address = where.ip;
  options.port = where.port;
  options.max_body_bytes = 1024;
  return http::Server::start(io.get_executor(), options,
                             runtime::probe_handler(manager.healthz(), manager.readyz()));
}

// The checks: /healthz fails while a reconcile is wedged; /readyz until the webhook accepts
// connections and, where the controller runs, its caches are synced.
void add_checks(runtime::Manager& manager, const Flags& flags, const op::Operator& controller,
                const http::Server* webhook) {
  const std::chrono::seconds max_stall(flags.healthz_max_stall_seconds);
  manager.add_health_check(
      "controller", [&controller, max_stall]() -> asio::awaitable<std::optional<std::string>> {
        if (!controller.healthy(max_stall)) {
          co_return "a reconcile has been running for more than " +
              std::to_string(max_stall.count()) + " s";
        }
        co_return std::nullopt;
      });
  if (webhook != nullptr) {
    std::string ip = flags.webhook_bind_address;
    const std::uint16_t port = webhook->port();
    manager.add_ready_check(
        "webhook",
        [ip, port]() -> asio::awaitable<std::optional<std::string>> {
          co_return co_await check_listening(ip, port);
        },
        runtime::RunsOn::kEveryReplica);
  }
  manager.add_ready_check(
      "controller",
      [&controller]() -> asio::awaitable<std::optional<std::string>> {
        if (!controller.ready())
          co_return std::string("the controller's caches are not synced yet");
        co_return std::nullopt;
      },
      runtime::RunsOn::kLeader);
}

// Starts the metrics server: HTTPS behind `authorizer` unless --metrics-secure=false, with the
// certificate of --metrics-cert-dir or, without one, a self-signed one made now.
Result<std::unique_ptr<http::Server>> start_metrics(asio::io_context& io,
                                                    const runtime::BindAddress& where,
                                                    const Flags& flags,
                                                    runtime::ManagerMetrics& metrics,
                                                    runtime::MetricsAuthorizer* authorizer) {
  http::ServerOptions options;
  options.name = "metrics";
  options.bind_address = where.ip;
  options.port = where.port;
  options.max_body_bytes = 1024;
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

// The webhook's pieces, alive for the whole run (its handlers may still be running when the
// io_context stops).
struct Webhook {
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<op::webhook::LiveClusterLookup> lookup;
  std::unique_ptr<op::webhook::Validator> validator;
  std::unique_ptr<op::webhook::AdmissionHandler> handler;
  std::unique_ptr<http::Server> server;
};

// Starts the admission webhook server on `io`. Fails with kInvalid when the certificate pair in
// --webhook-cert-dir is missing or unusable, kUnavailable when the port cannot be bound.
Result<Webhook> start_webhook(asio::io_context& io, const kube::RestConfig& rest,
                              const Flags& flags,
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
  webhook.lookup =
      std::make_unique<op::webhook::LiveClusterLookup>(*webhook.client, io.get_executor());
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
  op::webhook::AdmissionHandler* handler = webhook.handler.get();
  NMO_TRY_ASSIGN(webhook.server, http::Server::start(io.get_executor(), server_options,
                                                     [handler](http::Request request) {
                                                       return handler->handle(std::move(request));
                                                     }));
  return webhook;
}

// Logs the API server's version once, and what that version lacks of what the operator uses
// with what it does instead (operator/api/server_support.h); a failure only costs the log line.
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

int run(int argc, char** argv) {
  CLI::App app{
      "Kubernetes Node Maintenance Operator: cordons and drains nodes requested by "
      "NodeMaintenance objects. Tested on Kubernetes " +
          op::tested_range() +
          "; at start it logs the API server's version and what an older one lacks.",
      "node-maintenance-operator"};
  app.set_version_flag("--version", std::string("node-maintenance-operator ") + NMO_VERSION);
  Flags flags;
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, in-cluster, then ~/.kube/config)")
      ->envname("NMO_KUBECONFIG");
  app.add_option("--context", flags.context, "kubeconfig context (default: current-context)")
      ->envname("NMO_CONTEXT");
  app.add_option("--namespace", flags.options.namespace_,
                 "the operator's namespace: budget slot Leases and the leader Lease")
      ->envname("NMO_NAMESPACE")
      ->capture_default_str();
  app.add_flag("--leader-elect", flags.leader_elect,
               "elect a leader among replicas; only the leader reconciles")
      ->envname("NMO_LEADER_ELECT");
  app.add_option("--max-parallel-maintenances", flags.max_parallel,
                 "how many nodes may be under maintenance at once")
      ->envname("NMO_MAX_PARALLEL_MAINTENANCES")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--lease-namespace", flags.options.lease_namespace,
                 "namespace of the medik8s node leases shared with NHC/SNR")
      ->envname("LEASE_NAMESPACE")
      ->capture_default_str();
  app.add_option("--etcd-quorum-check", flags.etcd_quorum_check,
                 "keep control-plane nodes Pending while etcd quorum would be lost: auto|off")
      ->envname("NMO_ETCD_QUORUM_CHECK")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  app.add_option("--etcd-quorum-stable-for", flags.etcd_quorum_stable_for_seconds,
                 "seconds etcd quorum must have stayed safe before a control-plane node is taken")
      ->envname("NMO_ETCD_QUORUM_STABLE_FOR")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  app.add_option("--kube-api-qps", flags.qps, "client-side rate limit towards the API server")
      ->envname("NMO_KUBE_API_QPS")
      ->check(CLI::Range(0.1, 100000.0))
      ->capture_default_str();
  app.add_option("--kube-api-burst", flags.burst, "client-side burst towards the API server")
      ->envname("NMO_KUBE_API_BURST")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--webhook-port", flags.webhook_port,
                 "HTTPS port of the validating admission webhook; 0 disables it")
      ->envname("NMO_WEBHOOK_PORT")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--webhook-cert-dir", flags.webhook_cert_dir,
                 "directory with the webhook's tls.crt and tls.key (reloaded when they change)")
      ->envname("NMO_WEBHOOK_CERT_DIR")
      ->capture_default_str();
  app.add_option("--olm-cert-dir", flags.olm_cert_dir,
                 "where OLM mounts the webhook's apiserver.crt and apiserver.key; used when they "
                 "exist and --webhook-cert-dir is not given")
      ->envname("NMO_OLM_CERT_DIR")
      ->capture_default_str();
  app.add_flag("--webhook-reject-unsafe-control-plane", flags.webhook_reject_unsafe_control_plane,
               "refuse to create a NodeMaintenance for a control-plane node whose loss would "
               "break etcd quorum (upstream's behaviour), instead of keeping it Pending")
      ->envname("NMO_WEBHOOK_REJECT_UNSAFE_CONTROL_PLANE");
  app.add_option("--webhook-bind-address", flags.webhook_bind_address,
                 "IP address the webhook listens on")
      ->envname("NMO_WEBHOOK_BIND_ADDRESS")
      ->capture_default_str();
  app.add_option("--metrics-bind-address", flags.metrics_bind_address,
                 "where /metrics listens (host:port, :port; 0 disables it)")
      ->envname("NMO_METRICS_BIND_ADDRESS")
      ->capture_default_str();
  app.add_option("--metrics-secure", flags.metrics_secure,
                 "serve /metrics over HTTPS to callers allowed by TokenReview and "
                 "SubjectAccessReview; false: plain HTTP to anyone")
      ->envname("NMO_METRICS_SECURE")
      ->capture_default_str();
  app.add_option("--metrics-cert-dir", flags.metrics_cert_dir,
                 "directory with tls.crt and tls.key for /metrics (default: a self-signed "
                 "certificate made at start)")
      ->envname("NMO_METRICS_CERT_DIR");
  app.add_option("--health-probe-bind-address", flags.health_probe_bind_address,
                 "where /healthz and /readyz listen (plain HTTP; 0 disables them)")
      ->envname("NMO_HEALTH_PROBE_BIND_ADDRESS")
      ->capture_default_str();
  app.add_option("--healthz-max-stall", flags.healthz_max_stall_seconds,
                 "seconds one reconcile may run before /healthz reports the loop as wedged")
      ->envname("NMO_HEALTHZ_MAX_STALL")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  // For the end-to-end test of /healthz only; not shown in --help.
  app.add_option("--test-hook-wedge-reconcile", flags.options.wedge_reconcile_of)->group("");
  // For the end-to-end test of the node lease renewal only; not shown in --help.
  app.add_option("--test-hook-node-lease-renew-interval", flags.node_lease_renew_interval_seconds)
      ->check(CLI::Range(1, 86400))
      ->group("");
  app.add_option("--log-format", flags.log_format,
                 "json or text (default: json in a cluster, text elsewhere)")
      ->envname("NMO_LOG_FORMAT")
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("-v,--log-level", flags.verbosity, "debug verbosity (0 = decisions only)")
      ->envname("NMO_LOG_LEVEL")
      ->check(CLI::Range(0, 10))
      ->capture_default_str();
  // Upstream NMO's own flags (controller-runtime's), so its Deployment and CSV run this binary
  // unchanged (runtime/upstream_flags.h says what each does here).
  runtime::UpstreamFlags upstream;
  bool zap_devel = false;
  bool enable_http2 = false;
  const std::string upstream_group = "Upstream NMO's flags (accepted; docs/operations.md)";
  auto* zap_devel_flag =
      app.add_flag("--zap-devel", zap_devel, "text logs at -v 1; =false: JSON logs")
          ->group(upstream_group);
  app.add_option("--zap-encoder", upstream.zap_encoder, "json|console: the log format")
      ->group(upstream_group);
  app.add_option("--zap-log-level", upstream.zap_log_level,
                 "debug|info|error|dpanic|panic or N > 0: the verbosity")
      ->group(upstream_group);
  app.add_option("--zap-stacktrace-level", upstream.zap_stacktrace_level,
                 "info|error|panic: ignored (no stack traces)")
      ->group(upstream_group);
  app.add_option("--zap-time-encoding", upstream.zap_time_encoding,
                 "epoch|millis|nano|iso8601|rfc3339|rfc3339nano: ignored (RFC 3339 always)")
      ->group(upstream_group);
  auto* enable_http2_flag =
      app.add_flag("--enable-http2", enable_http2, "ignored: the servers speak HTTP/1.1 only")
          ->group(upstream_group);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    // One line naming the flag, and the exit status of every other usage error.
    std::fprintf(stderr, "node-maintenance-operator: %s (see --help)\n", error.what());
    return kExitUsage;
  }
  // OLM's certificate mount, when there is one and no other directory was asked for.
  if (app.get_option("--webhook-cert-dir")->count() == 0 &&
      std::filesystem::exists(std::filesystem::path(flags.olm_cert_dir) / "apiserver.crt")) {
    flags.webhook_cert_dir = flags.olm_cert_dir;
    flags.webhook_cert_file = "apiserver.crt";
    flags.webhook_key_file = "apiserver.key";
  }
  if (zap_devel_flag->count() > 0) upstream.zap_devel = zap_devel;
  if (enable_http2_flag->count() > 0) upstream.enable_http2 = enable_http2;
  auto upstream_effects = runtime::map_upstream_flags(upstream);
  if (!upstream_effects) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n",
                 upstream_effects.error().message.c_str());
    return kExitUsage;
  }
  // Ours win over the zap flags.
  if (flags.log_format.empty()) flags.log_format = upstream_effects->log_format;
  if (app.get_option("--log-level")->count() == 0 && upstream_effects->verbosity) {
    flags.verbosity = *upstream_effects->verbosity;
  }

  flags.options.max_parallel_maintenances = flags.max_parallel;
  flags.options.etcd_quorum_check = flags.etcd_quorum_check == "auto";
  flags.options.etcd_quorum_stable_for = std::chrono::seconds(flags.etcd_quorum_stable_for_seconds);
  flags.options.identity = host_identity();
  flags.options.node_lease_renew_interval =
      std::chrono::seconds(flags.node_lease_renew_interval_seconds);

  auto rest = kube::load_rest_config({.path = flags.kubeconfig, .context = flags.context});
  if (!rest) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n", rest.error().describe().c_str());
    return kExitUsage;
  }
  const bool in_cluster = rest->origin.rfind("in-cluster", 0) == 0;
  // The namespace: --namespace (or NMO_NAMESPACE), else upstream's OPERATOR_NAMESPACE, else the
  // pod's own namespace in a cluster, else the default.
  std::string namespace_source = "--namespace";
  if (app.get_option("--namespace")->count() == 0) {
    namespace_source = "default";
    if (const char* from_env = std::getenv("OPERATOR_NAMESPACE");
        from_env != nullptr && *from_env != '\0') {
      flags.options.namespace_ = from_env;
      namespace_source = "OPERATOR_NAMESPACE";
    } else if (in_cluster && !rest->default_namespace.empty()) {
      flags.options.namespace_ = rest->default_namespace;
      namespace_source = "the pod's namespace";
    }
  }
  const bool json = flags.log_format.empty() ? in_cluster : flags.log_format == "json";
  log::configure(json ? log::Format::kJson : log::Format::kText, flags.verbosity);
  const log::Logger logger = log::root().with({{"controller", "manager"}});
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
  for (const std::string& note : upstream_effects->notes) {
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
  auto controller = std::make_unique<op::Operator>(io.get_executor(), **client, flags.options);
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
