// The manager's HTTP endpoints besides the webhook, as controller-runtime's manager serves them:
//   - /metrics (metrics_handler): the Prometheus text exposition of a ManagerMetrics, behind a
//     MetricsAuthorizer when serving securely;
//   - /healthz and /readyz (probe_handler): 200 "ok" while the check passes, 500 with the failed
//     check's reason otherwise, for the kubelet's liveness and readiness probes.
// And parse_bind_address() for the --metrics-bind-address / --health-probe-bind-address flags,
// and export_connection_stats(), which puts a server's connection counters (http/server.h) into
// the registry:
//   http_server_connections_accepted_total{server}
//   http_server_connections_shed_total{server,reason}   every reason pre-set to 0
//
// Threading: the handlers run on the server's executor; the checks and the ManagerMetrics
// refreshers run there too (the manager's one io_context thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "http/asio.h"
#include "http/server.h"
#include "runtime/metrics.h"
#include "runtime/metrics_authorizer.h"

namespace nmo::runtime {

/// Where to listen: an IP address and a port.
struct BindAddress {
  std::string ip;
  std::uint16_t port = 0;

  friend bool operator==(const BindAddress&, const BindAddress&) = default;
};

/// Parses a Go-style listen address: ":8443" (every address, IPv6 and IPv4: "::"),
/// "127.0.0.1:8080",
/// "[::1]:8080"; "0" disables the endpoint (std::nullopt). kInvalid names what is wrong.
[[nodiscard]] Result<std::optional<BindAddress>> parse_bind_address(const std::string& text);

/// A probe check: std::nullopt when it passes, else why it fails ("caches not synced").
using ProbeCheck = std::function<asio::awaitable<std::optional<std::string>>()>;

/// Serves GET /healthz with `healthz` and GET /readyz with `readyz`; 404 elsewhere.
[[nodiscard]] http::Handler probe_handler(ProbeCheck healthz, ProbeCheck readyz);

/// Serves GET /metrics from `metrics`. With an `authorizer` (secure metrics) the caller needs a
/// bearer token the API server accepts, for a user allowed to get /metrics: 401 without one, 403
/// when not allowed, 503 with Retry-After when the authorizer is too busy to check now
/// (docs/reliability.md, "Hostile clients"), 500 when the API server cannot be asked. `metrics`
/// and `authorizer` must
/// outlive the handler.
[[nodiscard]] http::Handler metrics_handler(ManagerMetrics& metrics, MetricsAuthorizer* authorizer);

/// From now on every scrape of `metrics` reports `stats` (http::Server::connection_stats()) under
/// server=`server` ("webhook", "metrics", "health-probes"). The counters stay readable after the
/// server is gone.
void export_connection_stats(ManagerMetrics& metrics, const std::string& server,
                             std::shared_ptr<const http::ConnectionStats> stats);

}  // namespace nmo::runtime
