// The manager binary's servers and checks, started by main() before the Manager runs them, so a
// port that cannot be bound or a missing certificate fails at once: the admission webhook, the
// /metrics endpoint (HTTPS behind TokenReview and SubjectAccessReview unless
// --metrics-secure=false) and the /healthz and /readyz probes (plain HTTP).
//
// Threading: everything runs on the one io_context thread (docs/architecture.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "base/log.h"
#include "base/result.h"
#include "flags.h"
#include "http/asio.h"
#include "http/server.h"
#include "kube/client/client.h"
#include "kube/config/rest_config.h"
#include "operator/controller/node_maintenance_controller.h"
#include "operator/webhook/handler.h"
#include "operator/webhook/live_lookup.h"
#include "operator/webhook/validator.h"
#include "runtime/endpoints.h"
#include "runtime/manager.h"
#include "runtime/metrics.h"
#include "runtime/metrics_authorizer.h"

namespace nmo {

// How long the webhook may finish its requests in flight at shutdown. The API server gives each
// review 15 s (timeoutSeconds in the manifests); the pod's 30 s grace covers the controller's
// stop and this.
inline constexpr std::chrono::seconds kWebhookStopGrace{10};

// How long the metrics and probe servers may finish a request in flight at shutdown.
inline constexpr std::chrono::seconds kEndpointStopGrace{2};

// Starts the probe server with the manager's checks (see Manager::healthz and readyz).
[[nodiscard]] Result<std::unique_ptr<http::Server>> start_probes(asio::io_context& io,
                                                                 const runtime::BindAddress& where,
                                                                 const runtime::Manager& manager);

// The checks: /healthz fails while a reconcile is wedged; /readyz until the webhook accepts
// connections and, where the controller runs, its caches are synced.
// `webhook_port` is the webhook's port while it serves.
void add_checks(runtime::Manager& manager, const Flags& flags,
                const op::NodeMaintenanceController& controller,
                std::optional<std::uint16_t> webhook_port);

// Starts the metrics server: HTTPS behind `authorizer` unless --metrics-secure=false, with the
// certificate of --metrics-cert-dir or, without one, a self-signed one made now.
[[nodiscard]] Result<std::unique_ptr<http::Server>> start_metrics(
    asio::io_context& io, const runtime::BindAddress& where, const Flags& flags,
    runtime::ManagerMetrics& metrics, runtime::MetricsAuthorizer* authorizer);

// The webhook's pieces, alive for the whole run (its handlers may still be running when the
// io_context stops).
struct Webhook {
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<op::webhook::LiveClusterLookup> lookup;
  std::unique_ptr<op::webhook::Validator> validator;
  std::unique_ptr<op::webhook::AdmissionHandler> handler;
  std::unique_ptr<http::Server> server;
};

// Starts the admission webhook server on `io`; its lookups share `cache` (the process's informer
// cache). Fails with kInvalid when the certificate pair in --webhook-cert-dir is missing or
// unusable, kUnavailable when the port cannot be bound.
[[nodiscard]] Result<Webhook> start_webhook(
    asio::io_context& io, const kube::RestConfig& rest, runtime::Cache& cache, const Flags& flags,
    std::function<void(std::string_view, std::string_view)> observe);

// Logs the API server's version once, and what that version lacks of what the operator uses
// with what it does instead (operator/api/server_support.h); a failure only costs the log line.
asio::awaitable<void> log_server_support(kube::Client& client, const log::Logger& logger);

}  // namespace nmo
