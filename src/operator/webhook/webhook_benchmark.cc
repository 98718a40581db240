// The admission webhook under load on loopback: each iteration sends 200 AdmissionReviews at
// once, one per client (the API server opens several connections to a webhook), through TLS to
// the real server, handler and validator. The cluster lookups are in memory, so the figures are
// the webhook's own cost, not the API server's. Reported: reviews/s (items_per_second) and the
// latency of one review as seen by its client, p50 and p99, over all iterations.
//
//   kept_alive:1  every client reuses its connection (the steady state)
//   kept_alive:0  every review opens a new connection (a TLS handshake each)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "base/log.h"
#include "http/client.h"
#include "http/server.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"
#include "operator/webhook/handler.h"

namespace nmo::op::webhook {
namespace {

constexpr int kConcurrentReviews = 200;

// Every node exists and is free.
class AdmitAllLookup final : public ClusterLookup {
 public:
  asio::awaitable<Result<bool>> node_exists(std::string /*node*/) override { co_return true; }
  asio::awaitable<Result<std::vector<ExistingMaintenance>>> maintenances_for_node(
      std::string /*node*/) override {
    co_return std::vector<ExistingMaintenance>{};
  }
};

std::string review(int i) {
  const std::string name = "maintenance-" + std::to_string(i);
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-)" +
         std::to_string(i) +
         R"(","kind":{"group":"nodemaintenance.medik8s.io","version":"v1beta1","kind":"NodeMaintenance"},)"
         R"("operation":"CREATE","name":")" +
         name +
         R"(","userInfo":{"username":"bench"},"object":{"apiVersion":)"
         R"("nodemaintenance.medik8s.io/v1beta1","kind":"NodeMaintenance","metadata":{"name":")" +
         name + R"("},"spec":{"nodeName":"node-)" + std::to_string(i) +
         R"(","reason":"benchmark"}}}})";
}

double percentile(std::vector<double>& values, double fraction) {
  if (values.empty()) return 0;
  const auto index = static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index),
                   values.end());
  return values[index];
}

void admission_reviews(benchmark::State& state) {
  const bool kept_alive = state.range(0) != 0;
  log::set_writer([](std::string_view /*line*/) {});  // the server's log lines are not measured
  Result<http::test::TestPki> pki = http::test::make_test_pki();
  if (!pki) {
    state.SkipWithError(pki.error().describe().c_str());
    return;
  }
  std::string certs = (std::filesystem::temp_directory_path() / "nmo-webhook-bench-XXXXXX");
  if (::mkdtemp(certs.data()) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  std::ofstream(certs + "/tls.crt") << pki->server_cert_pem;
  std::ofstream(certs + "/tls.key") << pki->server_key_pem;

  http::test::IoThread server_thread;
  AdmitAllLookup lookup;
  Validator validator(lookup, {});
  AdmissionHandler handler(validator);
  http::ServerOptions options;
  options.name = "webhook-benchmark";
  options.cert_dir = certs;
  Result<std::unique_ptr<http::Server>> server = http::Server::start(
      server_thread.executor(), options,
      [&handler](http::Request request) { return handler.handle(std::move(request)); });
  if (!server) {
    state.SkipWithError(server.error().describe().c_str());
    return;
  }

  http::test::IoThread client_thread;
  std::vector<std::unique_ptr<http::Client>> clients;
  std::vector<std::string> bodies;
  for (int i = 0; i < kConcurrentReviews; ++i) {
    Result<std::unique_ptr<http::Client>> client = http::Client::create(
        client_thread.executor(), {.host = "127.0.0.1",
                                   .port = std::to_string((*server)->port()),
                                   .tls_options = {.ca_pem = pki->ca_cert_pem},
                                   .max_idle_connections = kept_alive ? 1U : 0U});
    if (!client) {
      state.SkipWithError(client.error().describe().c_str());
      return;
    }
    clients.push_back(std::move(client).value());
    bodies.push_back(review(i));
  }

  // One review; its latency in milliseconds, or a negative value when it failed.
  auto send = [&](int i) -> asio::awaitable<double> {
    const auto started = std::chrono::steady_clock::now();
    http::Request request{.method = http::Method::kPost,
                          .target = std::string(kValidatePath) + "?timeout=15s",
                          .headers = {{"Content-Type", "application/json"}},
                          .body = bodies[static_cast<std::size_t>(i)],
                          .timeout = std::nullopt};
    Result<http::Response> response =
        co_await clients[static_cast<std::size_t>(i)]->send(std::move(request));
    const std::chrono::duration<double, std::milli> took =
        std::chrono::steady_clock::now() - started;
    const bool ok = response && response->status == 200 &&
                    response->body.find(R"("allowed":true)") != std::string::npos;
    co_return ok ? took.count() : -1.0;
  };

  // 200 reviews at once; false when one failed.
  std::vector<double> latencies;
  auto round = [&](bool record) {
    std::vector<std::future<double>> pending;
    pending.reserve(kConcurrentReviews);
    for (int i = 0; i < kConcurrentReviews; ++i) pending.push_back(client_thread.spawn(send(i)));
    bool ok = true;
    for (std::future<double>& result : pending) {
      const double took = result.get();
      ok = ok && took >= 0;
      if (record) latencies.push_back(took);
    }
    return ok;
  };
  // Kept-alive clients connect in an untimed first round, as they would long before a burst.
  if (kept_alive && !round(false)) {
    state.SkipWithError("a review failed");
    return;
  }
  for ([[maybe_unused]] auto iteration : state) {
    if (!round(true)) {
      state.SkipWithError("a review failed");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * kConcurrentReviews);
  state.counters["p50_ms"] = percentile(latencies, 0.50);
  state.counters["p99_ms"] = percentile(latencies, 0.99);

  for (auto& client : clients) client->shutdown();
  server_thread.spawn((*server)->stop(std::chrono::seconds(5))).get();
  std::error_code ignored;
  std::filesystem::remove_all(certs, ignored);
  log::set_writer({});
}
BENCHMARK(admission_reviews)
    ->ArgName("kept_alive")
    ->Arg(1)
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nmo::op::webhook
