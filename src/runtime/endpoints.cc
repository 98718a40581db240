#include "runtime/endpoints.h"

#include <charconv>
#include <cstdint>
#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <prometheus/counter.h>

#include "base/log.h"

namespace nmo::runtime {
namespace {

http::Response text_response(unsigned status, std::string body) {
  return http::Response{.status = status,
                        .headers = {{"Content-Type", "text/plain; charset=utf-8"},
                                    {"X-Content-Type-Options", "nosniff"}},
                        .body = std::move(body)};
}

// The path without its query.
std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

// Raises `counter` to `value` (counters only grow; `value` is a running total).
void raise_to(prometheus::Counter& counter, std::uint64_t value) {
  const auto target = static_cast<double>(value);
  if (const double now = counter.Value(); target > now) counter.Increment(target - now);
}

}  // namespace

void export_connection_stats(ManagerMetrics& metrics, const std::string& server,
                             std::shared_ptr<const http::ConnectionStats> stats) {
  // Registered by name: the second server gets the families the first one made.
  auto& accepted_family =
      prometheus::BuildCounter()
          .Name("http_server_connections_accepted_total")
          .Help("TCP connections accepted by the operator's servers, by server.")
          .Register(metrics.registry());
  auto& shed_family = prometheus::BuildCounter()
                          .Name("http_server_connections_shed_total")
                          .Help(
                              "Connections a server closed early, by server and reason: idle or "
                              "incomplete ones shed to make room, over the per-peer limit, no "
                              "slot free, handshake or request header too slow.")
                          .Register(metrics.registry());
  prometheus::Counter* accepted = &accepted_family.Add({{"server", server}});
  std::vector<prometheus::Counter*> shed;
  for (std::size_t i = 0; i < http::kShedReasonCount; ++i) {
    const auto reason = static_cast<http::ShedReason>(i);
    shed.push_back(
        &shed_family.Add({{"server", server}, {"reason", std::string(http::to_string(reason))}}));
  }
  metrics.add_refresher([stats = std::move(stats), accepted, shed = std::move(shed)] {
    raise_to(*accepted, stats->accepted());
    for (std::size_t i = 0; i < shed.size(); ++i) {
      raise_to(*shed[i], stats->shed(static_cast<http::ShedReason>(i)));
    }
  });
}

Result<std::optional<BindAddress>> parse_bind_address(const std::string& text) {
  if (text == "0") return std::optional<BindAddress>();
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return Error(ErrorCode::kInvalid,
                 "bind address \"" + text + "\": expected host:port, :port or 0 (disabled)");
  }
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "::";  // every address, IPv6 and IPv4 (http::ServerOptions)
  boost::system::error_code error;
  boost::asio::ip::make_address(host, error);
  if (error) {
    return Error(ErrorCode::kInvalid,
                 "bind address \"" + text + "\": \"" + host + "\" is not an IP address");
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return Error(ErrorCode::kInvalid,
                 "bind address \"" + text + "\": \"" + port_text + "\" is not a port number");
  }
  return std::optional<BindAddress>(
      BindAddress{.ip = host, .port = static_cast<std::uint16_t>(port)});
}

http::Handler probe_handler(ProbeCheck healthz, ProbeCheck readyz) {
  return [healthz = std::move(healthz),
          readyz = std::move(readyz)](http::Request request) -> asio::awaitable<http::Response> {
    const std::string path = path_of(request.target);
    const ProbeCheck* check = path == "/healthz" ? &healthz : path == "/readyz" ? &readyz : nullptr;
    if (check == nullptr) co_return text_response(404, "404 page not found\n");
    if (request.method != http::Method::kGet) {
      co_return text_response(405, "only GET is served here\n");
    }
    std::optional<std::string> failure = co_await (*check)();
    if (!failure) co_return text_response(200, "ok");
    co_return text_response(500, path.substr(1) + " check failed: " + *failure + "\n");
  };
}

http::Handler metrics_handler(ManagerMetrics& metrics, MetricsAuthorizer* authorizer) {
  return [&metrics, authorizer](http::Request request) -> asio::awaitable<http::Response> {
    const std::string path = path_of(request.target);
    if (path != "/metrics") co_return text_response(404, "404 page not found\n");
    if (request.method != http::Method::kGet) {
      co_return text_response(405, "only GET is served here\n");
    }
    if (authorizer != nullptr) {
      // Named arguments, not temporaries in the co_await expression (GCC 12 destroys those
      // twice).
      std::string authorization(http::find_header(request.headers, "Authorization").value_or(""));
      std::string verb = "get";
      auto decision = co_await authorizer->authorize(std::move(authorization), path, verb);
      if (!decision) {
        log::root().warn("could not check a /metrics caller with the API server",
                         {{"error", decision.error().describe()}});
        co_return text_response(500, "cannot check the caller's permission now\n");
      }
      if (decision->verdict == AccessDecision::Verdict::kBusy) {
        log::root().debug(1, "turned a /metrics caller away", {{"reason", decision->reason}});
        http::Response busy = text_response(503, "Service Unavailable: " + decision->reason + "\n");
        busy.headers.emplace_back("Retry-After", std::to_string(decision->retry_after.count()));
        co_return busy;
      }
      if (decision->verdict == AccessDecision::Verdict::kUnauthenticated) {
        co_return text_response(401, "Unauthorized: " + decision->reason + "\n");
      }
      if (decision->verdict == AccessDecision::Verdict::kForbidden) {
        log::root().debug(1, "refused a /metrics caller", {{"reason", decision->reason}});
        co_return text_response(403, "Forbidden: " + decision->reason + "\n");
      }
    }
    co_return http::Response{
        .status = 200,
        .headers = {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
        .body = metrics.serialize()};
  };
}

}  // namespace nmo::runtime
