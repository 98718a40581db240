// Experiment "hostile clients" of docs/reliability.md: anyone who can reach the operator's ports
// (a pod of the cluster, a compromised scraper) attacks all three at once while ten maintenances
// run, and the operator must keep its leader Lease, finish every drain, keep answering its probes
// and keep admitting the admin's NodeMaintenances.
//
// Two replicas run with --leader-elect --metrics-secure (lease 15 s, renew deadline 10 s, retry
// 2 s); the first to start leads, and its webhook is registered with the API server as
// webhook_test registers one (a configuration of deploy/webhook pointing at 127.0.0.1, scoped by
// an objectSelector to this test's NodeMaintenances, with the API server's default timeout of
// 10 s instead of deploy/'s 15 s). Every attacker targets the leader, on loopback, and stops at
// the attack's deadline:
//   (a) /metrics requests with random bearer tokens, each on a new TLS connection (1,000 at 200
//       at a time; `make chaos` 2,000), every one a TokenReview the operator would have to ask;
//   (b) a connection flood on each port (metrics, probes, webhook): 1,100 TCP connections, more
//       than the servers' 1,024 slots, opened from five loopback addresses (127.0.0.10–14, 220
//       each, under the per-peer limit) and held idle; a connection the server closes is opened
//       again a second later;
//   (c) forged AdmissionReviews posted straight to the webhook port: a CREATE of a NodeMaintenance
//       for each real node the admin is about to maintain, in the name of a made-up user, right
//       before the admin's create, and more of them all through the attack;
//   (d) slow clients (slowloris) on each port, from 127.0.0.20–24: after the handshake (TLS on
//       metrics and webhook), a request line and then one byte of header a second, for ever.
// The probes, the API server's webhook calls and the admin come from 127.0.0.1, as the kubelet,
// the API server and kubectl would come from addresses of their own.
//
// Measured and asserted (each broken invariant is a violation and fails the test):
//   - the leader keeps its Lease: the holder never changes, the leader's process keeps running
//     and logs no "lost leader lease";
//   - every maintenance reaches Succeeded with evictionPods == totalPods == its pods, and no pod
//     has two "pod evicted" lines across the replicas' logs;
//   - /healthz and /readyz of both replicas, polled every second with the readiness probe's 3 s
//     timeout (deploy/manager), never fail (stricter than the kubelet, which restarts a container
//     after failureThreshold 3 consecutive liveness failures);
//   - every admin create (kubectl create through the API server, timed) is admitted at its first
//     attempt, the one for the node a forged review named just before included, and their p99 is
//     under the API server's 10 s webhook timeout;
//   - the peak RSS (VmHWM) of each replica stays under the pod's memory limit of 256 MiB.
// Reported besides: the flood's answers by HTTP status (401, 403, 503) and failure (connection
// closed or reset, timeout), what the servers did to the idle and slow connections, the forged
// reviews' answers, and the gaps between the leader Lease's renewTimes during the attack (polled
// every 0.5 s; the leader renews every 2 s, and gives up after 10 s without a renewal).
//
// The short form (make test) runs one round of a 30 s attack; `make chaos` three rounds of 60 s.
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "http/asio.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "test/chaos/support/chaos.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/serving_certificate.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using WallClock = std::chrono::system_clock;

constexpr const char* kValidatePath =
    "/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance";
constexpr const char* kBecameLeader = "became the leader; starting the controller";
constexpr const char* kLostLease = "lost leader lease";
// Marks the webhook configurations this test registers (stale ones are removed at start).
constexpr const char* kConfigLabel = "test.node-maintenance/hostile-clients";
// Carried by this test's NodeMaintenances; the configuration selects on it.
constexpr const char* kRunLabel = "test.node-maintenance/hostile-run";

constexpr std::size_t kNodes = 10;
constexpr int kPodsPerNode = 3;             // one of them slow to terminate
constexpr int kSlowGraceSeconds = 3;        // kwok's slow-delete hook
constexpr double kPodMemoryLimitMiB = 256;  // deploy/manager: resources.limits.memory
// The API server's default timeoutSeconds for a webhook, which the test's configuration sets.
constexpr std::chrono::seconds kWebhookTimeout{10};
// deploy/manager's readinessProbe timeoutSeconds (the livenessProbe allows 5).
constexpr std::chrono::seconds kProbeTimeout{3};
constexpr std::chrono::seconds kProbePeriod{1};
constexpr std::chrono::milliseconds kLeasePollPeriod{500};
// An attacker whose connection the server closed opens it again after this.
constexpr std::chrono::seconds kReconnectPause{1};
constexpr int kFloodSources = 5;  // 127.0.0.10–14 for idle floods, 127.0.0.20–24 for slow ones

struct AttackPlan {
  int metrics_requests;
  int metrics_concurrency;
  int idle_per_port;
  int slow_per_port;
  int forgers;
  std::chrono::seconds length;
};

AttackPlan attack_plan() {
  if (chaos::full_run()) return {2000, 200, 1100, 100, 4, std::chrono::seconds(60)};
  return {1000, 200, 1100, 50, 2, std::chrono::seconds(30)};
}

// Counts by outcome ("401", "connection failed", ...); any thread.
class Tally {
 public:
  void add(const std::string& outcome, double seconds = 0) {
    const std::lock_guard lock(mutex_);
    ++counts_[outcome];
    if (seconds > 0) seconds_.push_back(seconds);
  }
  [[nodiscard]] std::map<std::string, int> counts() const {
    const std::lock_guard lock(mutex_);
    return counts_;
  }
  [[nodiscard]] std::vector<double> seconds() const {
    const std::lock_guard lock(mutex_);
    return seconds_;
  }
  [[nodiscard]] int total() const {
    int n = 0;
    for (const auto& [outcome, count] : counts()) n += count;
    return n;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int> counts_;
  std::vector<double> seconds_;
};

// What the attackers of one kind saw on one port.
struct FloodStats {
  std::atomic<int> opened{0};       // connections established (and handshaken, for slow TLS)
  std::atomic<int> failed{0};       // connect or handshake failed
  std::atomic<int> closed{0};       // closed by the server before the deadline
  std::atomic<int> held_to_end{0};  // still open at the deadline
  Tally lifetimes;                  // of the connections the server closed
};

double p99(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(values.size())));
  return values[std::min(values.size(), std::max<std::size_t>(rank, 1)) - 1];
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

asio::awaitable<void> pause_until(Clock::time_point until) {
  asio::steady_timer timer(co_await asio::this_coro::executor, until);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

Clock::time_point reconnect_time(Clock::time_point deadline) {
  return std::min(deadline, Clock::now() + kReconnectPause);
}

// A TCP connection from `source` to 127.0.0.1:`port`, or nullopt when it could not be opened
// within 5 s (or before the deadline).
asio::awaitable<std::optional<tcp::socket>> connect_from(std::string source, std::uint16_t port,
                                                         Clock::time_point deadline) {
  auto executor = co_await asio::this_coro::executor;
  tcp::socket socket(executor);
  boost::system::error_code error;
  socket.open(tcp::v4(), error);
  if (!error) socket.bind(tcp::endpoint(asio::ip::make_address_v4(source), 0), error);
  if (error) co_return std::nullopt;
  asio::steady_timer timer(executor, std::min(deadline, Clock::now() + std::chrono::seconds(5)));
  const tcp::endpoint server(asio::ip::address_v4::loopback(), port);
  auto outcome = co_await (socket.async_connect(server, asio::as_tuple(asio::use_awaitable)) ||
                           timer.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (outcome.index() != 0 || std::get<0>(std::get<0>(outcome))) co_return std::nullopt;
  co_return std::move(socket);
}

// How one attacking connection ended.
enum class Ended { kClosedByServer, kDeadline, kFailed };

// (b) Holds the connection idle until the server closes it or the deadline passes.
asio::awaitable<Ended> sit_idle(tcp::socket& socket, Clock::time_point deadline) {
  char byte = 0;
  asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
  auto outcome = co_await (
      socket.async_read_some(asio::buffer(&byte, 1), asio::as_tuple(asio::use_awaitable)) ||
      timer.async_wait(asio::as_tuple(asio::use_awaitable)));
  co_return outcome.index() == 0 ? Ended::kClosedByServer : Ended::kDeadline;
}

// Sends a request line, then one byte of a header that never ends every second, until a write
// fails (the server closed the connection) or the deadline passes.
template <typename Stream>
asio::awaitable<Ended> trickle(Stream& stream, Clock::time_point deadline) {
  const std::string start = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  auto [error, written] =
      co_await asio::async_write(stream, asio::buffer(start), asio::as_tuple(asio::use_awaitable));
  if (error) co_return Ended::kClosedByServer;
  while (Clock::now() < deadline) {
    co_await pause_until(std::min(deadline, Clock::now() + std::chrono::seconds(1)));
    if (Clock::now() >= deadline) break;
    const char byte = 'a';
    auto [write_error, n] = co_await asio::async_write(stream, asio::buffer(&byte, 1),
                                                       asio::as_tuple(asio::use_awaitable));
    if (write_error) co_return Ended::kClosedByServer;
  }
  co_return Ended::kDeadline;
}

// (d) A slowloris session, after a TLS handshake when `tls` is set.
asio::awaitable<Ended> send_slowly(tcp::socket& socket, asio::ssl::context* tls,
                                   Clock::time_point deadline) {
  if (tls == nullptr) co_return co_await trickle(socket, deadline);
  asio::ssl::stream<tcp::socket> stream(std::move(socket), *tls);
  asio::steady_timer timer(co_await asio::this_coro::executor,
                           std::min(deadline, Clock::now() + std::chrono::seconds(10)));
  auto handshake = co_await (
      stream.async_handshake(asio::ssl::stream_base::client, asio::as_tuple(asio::use_awaitable)) ||
      timer.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (handshake.index() != 0 || std::get<0>(std::get<0>(handshake))) co_return Ended::kFailed;
  co_return co_await trickle(stream, deadline);
}

// One attacking connection (idle, or slow when `slow`), opened again a second after the server
// closes it, until the deadline.
asio::awaitable<void> keep_attacking(bool slow, std::string source, std::uint16_t port,
                                     asio::ssl::context* tls, FloodStats& stats,
                                     Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    std::optional<tcp::socket> socket = co_await connect_from(source, port, deadline);
    const Clock::time_point opened = Clock::now();
    Ended ended = Ended::kFailed;
    if (socket) {
      ++stats.opened;
      if (slow) {
        ended = co_await send_slowly(*socket, tls, deadline);
      } else {
        ended = co_await sit_idle(*socket, deadline);
      }
    }
    if (ended == Ended::kDeadline) {
      ++stats.held_to_end;
      break;
    }
    if (ended == Ended::kFailed) {
      ++stats.failed;
    } else {
      ++stats.closed;
      stats.lifetimes.add("closed", seconds_since(opened));
    }
    co_await pause_until(reconnect_time(deadline));
  }
}

// How a request ended: its HTTP status, or what kind of failure.
std::string outcome_of(const Result<http::Response>& answer) {
  if (answer) return std::to_string(answer->status);
  switch (answer.error().code) {
    case ErrorCode::kUnavailable:
      return "connection failed";
    case ErrorCode::kTimeout:
      return "timeout";
    default:
      return std::string(to_string(answer.error().code));
  }
}

// (a) /metrics with random bearer tokens until `left` is used up or the deadline passes.
asio::awaitable<void> scrape_with_random_tokens(http::Client& client, std::atomic<int>& left,
                                                Tally& tally, Clock::time_point deadline,
                                                std::uint64_t seed) {
  std::mt19937_64 random(seed);
  while (Clock::now() < deadline && left.fetch_sub(1) > 0) {
    http::Request request{
        .method = http::Method::kGet,
        .target = "/metrics",
        .headers = {{"Authorization", fmt::format("Bearer {:016x}{:016x}", random(), random())}},
        .timeout = std::chrono::seconds(10)};
    const Clock::time_point sent = Clock::now();
    const Result<http::Response> answer = co_await client.send(std::move(request));
    tally.add(outcome_of(answer), seconds_since(sent));
  }
}

// An AdmissionReview CREATE of NodeMaintenance `name` for `node` by `user`, as the API server
// would send it, with this run's label on the object.
std::string forged_review(const std::string& name, const std::string& node, const std::string& user,
                          const std::string& run) {
  const json::object object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                            {"kind", "NodeMaintenance"},
                            {"metadata", {{"name", name}, {"labels", {{kRunLabel, run}}}}},
                            {"spec", {{"nodeName", node}, {"reason", "forged"}}}};
  return create_review(name, object, user);
}

// "allowed", "denied", or how the post failed.
asio::awaitable<std::string> post_forged(http::Client& client, std::string name, std::string node,
                                         std::string user, std::string run) {
  http::Request request{.method = http::Method::kPost,
                        .target = kValidatePath,
                        .headers = {{"Content-Type", "application/json"}},
                        .body = forged_review(name, node, user, run),
                        .timeout = std::chrono::seconds(10)};
  const Result<http::Response> answer = co_await client.send(std::move(request));
  if (!answer || answer->status != 200) co_return outcome_of(answer);
  boost::system::error_code error;
  const json::value body = json::parse(answer->body, error);
  const json::value* allowed = error ? nullptr : body.find_pointer("/response/allowed", error);
  if (allowed == nullptr || !allowed->is_bool()) co_return "not a review";
  co_return allowed->as_bool() ? "allowed" : "denied";
}

// (c) Forged reviews for the round's nodes, one after the other, until the deadline.
asio::awaitable<void> forge(http::Client& client, std::vector<std::string> nodes, std::string run,
                            int forger, Tally& tally, Clock::time_point deadline) {
  for (std::size_t i = 0; Clock::now() < deadline; ++i) {
    const std::string& node = nodes[i % nodes.size()];
    tally.add(co_await post_forged(client, unique_name("forged"), node,
                                   fmt::format("mallory-{}", forger), run));
    co_await pause_until(std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
  }
}

// The ports of one replica, from its "serving" log lines.
struct Ports {
  std::uint16_t metrics = 0;
  std::uint16_t probes = 0;
  std::uint16_t webhook = 0;
};

// The peak resident set (VmHWM) of a process, in MiB; 0 when it cannot be read.
double peak_rss_mib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// A free TCP port on 127.0.0.1 (free when asked; the operator binds it right after).
std::uint16_t free_port() {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  return acceptor.local_endpoint().port();
}

// Every attacker of one round, on its own I/O thread, all aimed at one replica.
class Attack {
 public:
  Attack(const AttackPlan& plan, const Ports& ports, const std::string& webhook_ca,
         std::vector<std::string> nodes, std::string run)
      : plan_(plan), ports_(ports), nodes_(std::move(nodes)), run_(std::move(run)) {
    tls_.set_verify_mode(asio::ssl::verify_none);
    metrics_client_ = client(ports.metrics, {.insecure_skip_verify = true});
    forger_client_ = client(ports.webhook, {.ca_pem = webhook_ca});
  }
  Attack(const Attack&) = delete;
  Attack& operator=(const Attack&) = delete;
  ~Attack() {
    if (metrics_client_) metrics_client_->shutdown();
    if (forger_client_) forger_client_->shutdown();
  }

  // Starts every attacker; they stop at start + plan.length.
  void start() {
    started_ = Clock::now();
    deadline_ = started_ + plan_.length;
    metrics_left_ = plan_.metrics_requests;
    std::random_device seed;
    for (int i = 0; i < plan_.metrics_concurrency; ++i) {
      running_.push_back(io_.spawn(
          scrape_with_random_tokens(*metrics_client_, metrics_left_, metrics_, deadline_, seed())));
    }
    const std::pair<std::uint16_t, bool> targets[] = {
        {ports_.metrics, true}, {ports_.probes, false}, {ports_.webhook, true}};
    for (std::size_t p = 0; p < 3; ++p) {
      for (int i = 0; i < plan_.idle_per_port; ++i) {
        running_.push_back(
            io_.spawn(keep_attacking(false, fmt::format("127.0.0.{}", 10 + i % kFloodSources),
                                     targets[p].first, nullptr, idle_[p], deadline_)));
      }
      for (int i = 0; i < plan_.slow_per_port; ++i) {
        running_.push_back(io_.spawn(keep_attacking(
            true, fmt::format("127.0.0.{}", 20 + i % kFloodSources), targets[p].first,
            targets[p].second ? &tls_ : nullptr, slow_[p], deadline_)));
      }
    }
    for (int i = 0; i < plan_.forgers; ++i) {
      running_.push_back(io_.spawn(forge(*forger_client_, nodes_, run_, i, forged_, deadline_)));
    }
  }

  // Posts one forged review for `node` now and returns its outcome.
  std::string forge_now(const std::string& node) {
    std::future<std::string> answer =
        io_.spawn(post_forged(*forger_client_, unique_name("forged"), node, "mallory", run_));
    if (answer.wait_for(std::chrono::seconds(15)) != std::future_status::ready) return "no answer";
    return answer.get();
  }

  // Whether every idle flood has opened its connections once.
  [[nodiscard]] bool floods_open() const {
    return std::all_of(idle_.begin(), idle_.end(), [&](const FloodStats& s) {
      return s.opened + s.failed >= plan_.idle_per_port;
    });
  }

  // Waits for every attacker to stop (they stop at the deadline); false when one did not.
  bool wait() {
    bool all = true;
    for (auto& attacker : running_) {
      if (attacker.wait_until(deadline_ + std::chrono::seconds(20)) != std::future_status::ready) {
        all = false;
      }
    }
    return all;
  }

  [[nodiscard]] Clock::time_point started() const { return started_; }
  [[nodiscard]] const Tally& metrics() const { return metrics_; }
  [[nodiscard]] const Tally& forged() const { return forged_; }
  // Per port, in the order metrics, probes, webhook.
  [[nodiscard]] const FloodStats& idle(std::size_t port) const { return idle_[port]; }
  [[nodiscard]] const FloodStats& slow(std::size_t port) const { return slow_[port]; }

 private:
  std::unique_ptr<http::Client> client(std::uint16_t port, http::TlsOptions tls) {
    Result<std::unique_ptr<http::Client>> made =
        http::Client::create(io_.executor(), {.host = "127.0.0.1",
                                              .port = std::to_string(port),
                                              .tls = true,
                                              .tls_options = std::move(tls),
                                              .connect_timeout = std::chrono::seconds(10),
                                              .max_idle_connections = 0});
    EXPECT_TRUE(made.has_value()) << made.error().describe();
    return made ? std::move(made).value() : nullptr;
  }

  AttackPlan plan_;
  Ports ports_;
  std::vector<std::string> nodes_;
  std::string run_;
  Tally metrics_;
  Tally forged_;
  std::array<FloodStats, 3> idle_;
  std::array<FloodStats, 3> slow_;
  std::atomic<int> metrics_left_{0};
  Clock::time_point started_;
  Clock::time_point deadline_;
  asio::ssl::context tls_{asio::ssl::context::tls_client};
  http::test::IoThread io_;
  std::unique_ptr<http::Client> metrics_client_;
  std::unique_ptr<http::Client> forger_client_;
  std::vector<std::future<void>> running_;
};

// Polls a replica's probe endpoint as the kubelet would (a new connection each time, the
// probe's timeout) every second until stopped.
struct ProbeStats {
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> consecutive{0};
  std::atomic<int> max_consecutive{0};
  Tally failures;  // what failed, by outcome
};

asio::awaitable<void> poll_probe(http::Client& client, std::string path, ProbeStats& stats,
                                 const std::atomic<bool>& stop) {
  Clock::time_point next = Clock::now();
  while (!stop) {
    // A named request: GCC 12 destroys a braced temporary in a co_await expression twice.
    http::Request request{.method = http::Method::kGet, .target = path, .timeout = kProbeTimeout};
    const Result<http::Response> answer = co_await client.send(std::move(request));
    if (answer && answer->status == 200) {
      ++stats.ok;
      stats.consecutive = 0;
    } else {
      ++stats.failed;
      stats.failures.add(path + " " + outcome_of(answer));
      const int now = ++stats.consecutive;
      if (now > stats.max_consecutive) stats.max_consecutive = now;
    }
    next += kProbePeriod;
    co_await pause_until(std::max(next, Clock::now()));
  }
}

// The kubelet's view of both replicas and the leader Lease during an attack.
class Watchers {
 public:
  Watchers(const Kubectl& kubectl, const std::vector<std::pair<pid_t, Ports>>& replicas)
      : kubectl_(kubectl) {
    for (const auto& [pid, ports] : replicas) {
      pids_.push_back(pid);
      Result<std::unique_ptr<http::Client>> made =
          http::Client::create(io_.executor(), {.host = "127.0.0.1",
                                                .port = std::to_string(ports.probes),
                                                .tls = false,
                                                .connect_timeout = kProbeTimeout,
                                                .max_idle_connections = 0});
      EXPECT_TRUE(made.has_value()) << made.error().describe();
      if (!made) continue;
      clients_.push_back(std::move(made).value());
    }
    probes_ = std::vector<ProbeStats>(clients_.size() * 2);
    for (std::size_t i = 0; i < clients_.size(); ++i) {
      running_.push_back(io_.spawn(poll_probe(*clients_[i], "/healthz", probes_[2 * i], stop_)));
      running_.push_back(io_.spawn(poll_probe(*clients_[i], "/readyz", probes_[2 * i + 1], stop_)));
    }
    lease_poller_ = std::jthread([this](const std::stop_token& stop) { poll_lease(stop); });
  }
  Watchers(const Watchers&) = delete;
  Watchers& operator=(const Watchers&) = delete;
  ~Watchers() { stop(); }

  void stop() {
    if (stop_.exchange(true)) return;
    lease_poller_.request_stop();
    lease_poller_.join();
    for (auto& poller : running_) {
      if (poller.wait_for(kProbeTimeout + std::chrono::seconds(5)) != std::future_status::ready) {
        ADD_FAILURE() << "a probe poller did not stop";
      }
    }
    for (auto& client : clients_) client->shutdown();
  }

  // Probes of replica i: /healthz then /readyz.
  [[nodiscard]] const ProbeStats& probe(std::size_t replica, bool readyz) const {
    return probes_[2 * replica + (readyz ? 1 : 0)];
  }
  [[nodiscard]] std::size_t replicas() const { return clients_.size(); }

  // After stop(): the holders seen, the gaps between successive renewTimes (s), the peak RSS of
  // each replica (MiB).
  [[nodiscard]] std::set<std::string> holders() const {
    const std::lock_guard lock(mutex_);
    return holders_;
  }
  [[nodiscard]] std::vector<double> renew_gaps() const {
    const std::lock_guard lock(mutex_);
    return renew_gaps_;
  }
  [[nodiscard]] std::vector<double> peak_rss() const {
    const std::lock_guard lock(mutex_);
    return peak_rss_;
  }

 private:
  void poll_lease(const std::stop_token& stop) {
    std::optional<WallClock::time_point> last_renewal;
    std::mutex sleeper;
    std::condition_variable_any wake;
    while (!stop.stop_requested()) {
      std::optional<json::value> lease =
          kubectl_.get_json({"lease", kLeaderLease, "-n", kOperatorNamespace});
      {
        const std::lock_guard lock(mutex_);
        if (lease) {
          holders_.insert(string_at(*lease, "/spec/holderIdentity"));
          const auto renewed = chaos::instant(string_at(*lease, "/spec/renewTime"));
          if (renewed && last_renewal && *renewed > *last_renewal) {
            renew_gaps_.push_back(std::chrono::duration<double>(*renewed - *last_renewal).count());
          }
          if (renewed && (!last_renewal || *renewed > *last_renewal)) last_renewal = renewed;
        }
        peak_rss_.resize(pids_.size());
        for (std::size_t i = 0; i < pids_.size(); ++i) {
          peak_rss_[i] = std::max(peak_rss_[i], peak_rss_mib(pids_[i]));
        }
      }
      std::unique_lock lock(sleeper);
      wake.wait_for(lock, stop, kLeasePollPeriod, [] { return false; });
    }
  }

  const Kubectl& kubectl_;
  std::vector<pid_t> pids_;
  std::atomic<bool> stop_{false};
  std::vector<ProbeStats> probes_;
  http::test::IoThread io_;
  std::vector<std::unique_ptr<http::Client>> clients_;
  std::vector<std::future<void>> running_;
  mutable std::mutex mutex_;
  std::set<std::string> holders_;
  std::vector<double> renew_gaps_;
  std::vector<double> peak_rss_;
  std::jthread lease_poller_;
};

class HostileClientsTest : public OperatorFixture {
 protected:
  void SetUp() override {
    OperatorFixture::SetUp();
    if (HasFatalFailure()) return;
    // The attack holds several thousand sockets; the replicas inherit the limit, as a container
    // runtime's (much higher) one would apply to the pod.
    rlimit files{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
    files.rlim_cur = files.rlim_max;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
    const AttackPlan plan = attack_plan();
    const auto needed = static_cast<rlim_t>(3 * (plan.idle_per_port + plan.slow_per_port) +
                                            plan.metrics_concurrency + plan.forgers + 256);
    ASSERT_GE(files.rlim_cur, needed) << "the attack needs this many file descriptors";
    (void)kubectl_.run(
        {"delete", "validatingwebhookconfigurations", "-l", kConfigLabel, "--ignore-not-found"});
    run_ = unique_name("hostile");
  }

  // The webhook configuration goes first (its failurePolicy Fail would refuse the finalizers'
  // removal if the webhook were down), then this run's NodeMaintenances, while the replicas run.
  void TearDown() override {
    if (!configuration_.empty()) {
      (void)kubectl_.run(
          {"delete", "validatingwebhookconfiguration", configuration_, "--ignore-not-found"});
    }
    const std::string selector = std::string(kRunLabel) + "=" + run_;
    (void)kubectl_.run({"delete", "nm", "-l", selector, "--wait=false", "--ignore-not-found"});
    if (!wait_until("this run's NodeMaintenances gone", 90s,
                    [&] { return names_of_run().empty(); })) {
      for (const auto& name : names_of_run()) {
        (void)kubectl_.run(
            {"patch", "nm", name, "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
      }
    }
    OperatorFixture::TearDown();
  }

  std::vector<std::string> names_of_run() const {
    const ProcessResult r = kubectl_.run({"get", "nm", "-l", std::string(kRunLabel) + "=" + run_,
                                          "-o", "jsonpath={.items[*].metadata.name}"});
    std::vector<std::string> names;
    std::istringstream in(r.out);
    for (std::string name; in >> name;) names.push_back(name);
    return names;
  }

  // A replica with its three servers on loopback ports; returns it and its ports.
  std::pair<OperatorProcess*, Ports> start_replica() {
    Ports ports;
    ports.webhook = free_port();
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(),
                 {"--leader-elect", "--max-parallel-maintenances", "10", "--log-format", "json",
                  "--metrics-secure", "true", "--metrics-bind-address", "127.0.0.1:0",
                  "--health-probe-bind-address", "127.0.0.1:0", "--webhook-port",
                  std::to_string(ports.webhook), "--webhook-bind-address", "127.0.0.1",
                  "--webhook-cert-dir", certificate_.dir().string()});
    OperatorProcess& replica = start_operator(flags);
    wait_until(
        "the replica's servers listening", 30s,
        [&] {
          for (const auto& record : chaos::log_records(replica)) {
            if (chaos::field(record, "msg") != "serving") continue;
            const json::value* port = record.if_contains("port");
            if (port == nullptr || !port->is_int64()) continue;
            const auto number = static_cast<std::uint16_t>(port->as_int64());
            if (chaos::field(record, "server") == "metrics") ports.metrics = number;
            if (chaos::field(record, "server") == "health-probes") ports.probes = number;
          }
          return ports.metrics != 0 && ports.probes != 0 &&
                 replica.log().find("\"server\":\"webhook\"") != std::string::npos;
        },
        [&] { return replica.log_tail(10); });
    return {&replica, ports};
  }

  // deploy/webhook's configuration pointing at `port`, selecting this run's NodeMaintenances,
  // with the API server's default timeout; waits until the API server calls it.
  void register_webhook(std::uint16_t port) {
    configuration_ = unique_name("nmo-hostile-webhook");
    const std::string made = certificate_.scoped_webhook_configuration(
        "https://127.0.0.1:" + std::to_string(port) + kValidatePath, configuration_, kConfigLabel,
        kRunLabel, run_);
    ASSERT_FALSE(made.empty());
    json::object configuration = json::parse(made).as_object();
    configuration["webhooks"].as_array().at(0).as_object()["timeoutSeconds"] =
        kWebhookTimeout.count();
    kubectl_.apply(json::serialize(configuration));
    ASSERT_TRUE(wait_until("the webhook to answer a dry-run create", 30s, [&] {
      const ProcessResult r = kubectl_.run({"create", "--dry-run=server", "-f", "-"},
                                           manifest(unique_name("probe"), "node-nowhere"));
      return r.err.find("denied the request") != std::string::npos;
    }));
  }

  // A NodeMaintenance of this run (the webhook sees it).
  std::string manifest(const std::string& name, const std::string& node) const {
    return json::serialize(
        json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                     {"kind", "NodeMaintenance"},
                     {"metadata", {{"name", name}, {"labels", {{kRunLabel, run_}}}}},
                     {"spec", {{"nodeName", node}, {"reason", "hostile clients"}}}});
  }

  void violation(const std::string& what) {
    ++violations_;
    ADD_FAILURE() << "invariant broken: " << what;
  }

  // "namespace/name" of the pods of `ns` bound to one of `nodes`.
  std::set<std::string> pods_on(const std::string& ns, const std::vector<std::string>& nodes) {
    std::set<std::string> out;
    for (const auto& pod : list_pods(kubectl_, ns, "")) {
      const json::value v = pod;
      const std::string node = string_at(v, "/spec/nodeName");
      if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) {
        out.insert(ns + "/" + name_of(v));
      }
    }
    return out;
  }

  ServingCertificate certificate_;
  std::string run_;
  std::string configuration_;
  int violations_ = 0;
};

std::string join_counts(const std::map<std::string, int>& counts) {
  std::string out;
  for (const auto& [outcome, count] : counts) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", count, outcome);
  }
  return out.empty() ? "none" : out;
}

TEST_F(HostileClientsTest, LeaderKeepsItsLeaseAndEveryMaintenanceFinishesUnderAttack) {
  const int rounds = chaos::iterations(1, 3);
  const AttackPlan plan = attack_plan();
  TestNamespace ns(kubectl_, "hostile");

  // The first replica leads (it starts alone); the second follows.
  auto [leader, leader_ports] = start_replica();
  ASSERT_TRUE(leader->wait_for_log(kBecameLeader, 60s)) << leader->log_tail(20);
  const std::optional<json::value> first_lease = lease(kOperatorNamespace, kLeaderLease);
  ASSERT_TRUE(first_lease.has_value());
  const std::string holder = string_at(*first_lease, "/spec/holderIdentity");
  auto [follower, follower_ports] = start_replica();
  ASSERT_NO_FATAL_FAILURE(register_webhook(leader_ports.webhook));

  std::map<std::string, int> metrics_outcomes;
  std::map<std::string, int> forged_outcomes;
  std::map<std::string, int> probe_failures;
  int probes_ok = 0;
  int max_consecutive_failures = 0;
  std::vector<double> admissions;
  std::vector<double> metrics_latencies;
  std::vector<double> renew_gaps;
  std::set<std::string> holders;
  std::vector<double> peak_rss(2, 0.0);
  int refused_creates = 0;
  int forged_before_create_allowed = 0;
  std::array<int, 3> idle_opened{};
  std::array<int, 3> idle_closed{};
  std::array<int, 3> idle_failed{};
  std::array<int, 3> slow_opened{};
  std::array<int, 3> slow_closed{};
  std::array<int, 3> slow_failed{};
  std::vector<double> idle_lifetimes;
  std::vector<double> slow_lifetimes;
  std::set<std::string> evictions_expected;
  int succeeded = 0;

  for (int round = 0; round < rounds && !HasFatalFailure(); ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    const std::vector<std::string> nodes = fresh_nodes("hc", kNodes);

    // Per node three pods (one slow to terminate); on node 0 a fourth, guarded by a PDB that
    // allows no disruption until the test deletes it.
    const std::string guarded = fmt::format("guarded-{}", round);
    const std::string pdb = fmt::format("pdb-{}", round);
    json::array items;
    for (std::size_t n = 0; n < kNodes; ++n) {
      for (int p = 0; p < kPodsPerNode; ++p) {
        items.push_back(chaos::round_pod(ns.name(), fmt::format("p{}-{}-{}", round, n, p), nodes[n],
                                         round, p == 0 ? kSlowGraceSeconds : 0));
      }
    }
    items.push_back(chaos::round_pod(ns.name(), guarded, nodes[0], round));
    items.push_back(json::parse(pdb_manifest(ns.name(), pdb, 1, guarded)));
    kubectl_.apply(json::serialize(
        json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}}));
    const std::size_t pods = kNodes * kPodsPerNode + 1;
    ASSERT_TRUE(wait_until("the round's pods running", 90s, [&] {
      std::size_t ready = 0;
      for (const auto& pod : list_pods(kubectl_, ns.name(), "round=" + std::to_string(round))) {
        if (pod_running_ready(pod)) ++ready;
      }
      return ready == pods;
    }));
    ASSERT_TRUE(wait_pdb(ns.name(), pdb, 1, 0));
    const std::set<std::string> to_evict = pods_on(ns.name(), nodes);
    ASSERT_EQ(to_evict.size(), pods);
    evictions_expected.insert(to_evict.begin(), to_evict.end());

    Watchers watchers(kubectl_, {{leader->pid(), leader_ports}, {follower->pid(), follower_ports}});
    ASSERT_TRUE(wait_until("both replicas' probes answering before the attack", 30s, [&] {
      for (std::size_t r = 0; r < watchers.replicas(); ++r) {
        if (watchers.probe(r, false).ok == 0 || watchers.probe(r, true).ok == 0) return false;
      }
      return true;
    }));
    // Failures before the attack are not the attack's.
    const int failures_before = watchers.probe(0, false).failed + watchers.probe(0, true).failed +
                                watchers.probe(1, false).failed + watchers.probe(1, true).failed;

    Attack attack(plan, leader_ports, certificate_.ca_pem(), nodes, run_);
    attack.start();
    (void)wait_until("every connection flood open", 15s, [&] { return attack.floods_open(); });

    // The admin maintains the ten nodes, each right after a forged review named it.
    std::vector<std::string> crs;
    bool admin_gave_up = false;
    for (std::size_t n = 0; n < kNodes; ++n) {
      const std::string forged = attack.forge_now(nodes[n]);
      if (forged == "allowed") ++forged_before_create_allowed;
      crs.push_back(fmt::format("hostile-{}-{}-{}", run_, round, n));
      const Clock::time_point asked = Clock::now();
      ProcessResult created = kubectl_.run({"create", "-f", "-"}, manifest(crs.back(), nodes[n]));
      admissions.push_back(seconds_since(asked));
      if (!created.ok()) {
        ++refused_creates;
        violation(
            fmt::format("the admin's create of {} for {} (forged review before it: {}) "
                        "was refused after {:.2f} s: {}",
                        crs.back(), nodes[n], forged, admissions.back(), created.err));
        // Keep trying, so the round still has its maintenances to measure (unless an earlier
        // create could not get through in a minute either).
        if (admin_gave_up) continue;
        admin_gave_up = !wait_until(
            "the admin's create admitted", 60s,
            [&] {
              created = kubectl_.run({"create", "-f", "-"}, manifest(crs.back(), nodes[n]));
              return created.ok() || created.err.find("AlreadyExists") != std::string::npos;
            },
            [&] { return created.err; });
      }
    }

    // The PDB holds the guarded pod until the node's other pods are gone.
    const std::string guarded_pod = ns.name() + "/" + guarded;
    EXPECT_TRUE(wait_until("node 0 drained but for the guarded pod", 60s, [&] {
      return pods_on(ns.name(), {nodes[0]}) == std::set<std::string>{guarded_pod};
    }));
    kubectl_.must({"delete", "pdb", pdb, "-n", ns.name()});

    // One deadline for all of them: a round whose webhook died must not wait 90 s for each.
    std::map<std::string, op::NodeMaintenance> done;
    (void)wait_until("every maintenance Succeeded", kDrain, [&] {
      for (const auto& cr : crs) {
        if (done.contains(cr)) continue;
        const auto nm = get_node_maintenance(cr);
        if (nm && phase_of(*nm) == "Succeeded") done.emplace(cr, maintenance_of(*nm));
      }
      return done.size() == crs.size();
    });
    for (std::size_t n = 0; n < crs.size(); ++n) {
      const auto found = done.find(crs[n]);
      if (found == done.end()) {
        violation(crs[n] + " did not reach Succeeded");
        continue;
      }
      ++succeeded;
      const auto& status = found->second.status;
      const std::int64_t expected = kPodsPerNode + (n == 0 ? 1 : 0);
      if (status.total_pods != expected || status.eviction_pods != expected) {
        violation(fmt::format("{}: totalPods {} evictionPods {}, expected {} each", crs[n],
                              status.total_pods, status.eviction_pods, expected));
      }
    }

    if (!attack.wait()) violation("an attacker did not stop at its deadline");
    watchers.stop();

    // What the attack did and what the replicas went through.
    for (const auto& [outcome, count] : attack.metrics().counts())
      metrics_outcomes[outcome] += count;
    for (const auto& [outcome, count] : attack.forged().counts()) forged_outcomes[outcome] += count;
    const auto latencies = attack.metrics().seconds();
    metrics_latencies.insert(metrics_latencies.end(), latencies.begin(), latencies.end());
    for (std::size_t p = 0; p < 3; ++p) {
      idle_opened[p] += attack.idle(p).opened;
      idle_closed[p] += attack.idle(p).closed;
      idle_failed[p] += attack.idle(p).failed;
      slow_opened[p] += attack.slow(p).opened;
      slow_closed[p] += attack.slow(p).closed;
      slow_failed[p] += attack.slow(p).failed;
      const auto idle = attack.idle(p).lifetimes.seconds();
      idle_lifetimes.insert(idle_lifetimes.end(), idle.begin(), idle.end());
      const auto slow = attack.slow(p).lifetimes.seconds();
      slow_lifetimes.insert(slow_lifetimes.end(), slow.begin(), slow.end());
    }
    int failures = -failures_before;
    for (std::size_t r = 0; r < watchers.replicas(); ++r) {
      for (const bool readyz : {false, true}) {
        const ProbeStats& probe = watchers.probe(r, readyz);
        probes_ok += probe.ok;
        failures += probe.failed;
        max_consecutive_failures = std::max(max_consecutive_failures, probe.max_consecutive.load());
        for (const auto& [outcome, count] : probe.failures.counts()) {
          probe_failures[fmt::format("replica {} {}", r, outcome)] += count;
        }
      }
    }
    if (failures > 0) {
      violation(fmt::format("{} probe failures during the attack ({}), at most {} in a row",
                            failures, join_counts(probe_failures), max_consecutive_failures));
    }
    const auto gaps = watchers.renew_gaps();
    renew_gaps.insert(renew_gaps.end(), gaps.begin(), gaps.end());
    for (const auto& h : watchers.holders()) holders.insert(h);
    const auto rss = watchers.peak_rss();
    for (std::size_t r = 0; r < rss.size() && r < peak_rss.size(); ++r) {
      peak_rss[r] = std::max(peak_rss[r], rss[r]);
    }

    if (!leader->running()) {
      violation("the leader's process exited during the attack");
      break;
    }
    if (leader->log().find(kLostLease) != std::string::npos) {
      violation("the leader logged \"lost leader lease\"");
    }
    if (holders != std::set<std::string>{holder}) {
      std::string seen;
      for (const auto& h : holders) seen += " \"" + h + "\"";
      violation("the leader Lease changed hands; holders seen:" + seen);
    }

    for (const auto& cr : crs) remove(cr);
    for (std::size_t n = 0; n < crs.size(); ++n) {
      EXPECT_TRUE(wait_gone(crs[n], kReact));
      EXPECT_TRUE(wait_node_restored(nodes[n], /*stays_cordoned=*/false, kReact));
    }
  }

  // Every pod evicted at most once, across both replicas' logs.
  std::map<std::string, int> evictions;
  for (OperatorProcess* replica : {leader, follower}) {
    for (const auto& record : chaos::log_records(*replica)) {
      if (chaos::field(record, "msg") == "pod evicted") ++evictions[chaos::field(record, "pod")];
    }
  }
  int evicted = 0;
  for (const auto& [pod, count] : evictions) {
    if (!evictions_expected.contains(pod)) continue;
    ++evicted;
    if (count > 1) violation(fmt::format("pod {} evicted {} times", pod, count));
  }
  for (std::size_t r = 0; r < peak_rss.size(); ++r) {
    if (peak_rss[r] >= kPodMemoryLimitMiB) {
      violation(
          fmt::format("replica {} peaked at {:.1f} MiB, over the pod's limit", r, peak_rss[r]));
    }
  }
  if (p99(admissions) >= std::chrono::duration<double>(kWebhookTimeout).count()) {
    violation(
        fmt::format("admissions' p99 {:.2f} s, not under the webhook timeout", p99(admissions)));
  }

  const char* port_names[] = {"metrics", "probes", "webhook"};
  std::string idle_text;
  std::string slow_text;
  for (std::size_t p = 0; p < 3; ++p) {
    idle_text += fmt::format("{}{}:{}/{}/{}", p == 0 ? "" : " ", port_names[p], idle_opened[p],
                             idle_closed[p], idle_failed[p]);
    slow_text += fmt::format("{}{}:{}/{}/{}", p == 0 ? "" : " ", port_names[p], slow_opened[p],
                             slow_closed[p], slow_failed[p]);
  }
  chaos::report(
      "hostile clients",
      {{"rounds", std::to_string(rounds)},
       {"attack_s", std::to_string(plan.length.count())},
       {"violations", std::to_string(violations_)},
       {"leader_kept_lease", holders == std::set<std::string>{holder} && leader->running() &&
                                     leader->log().find(kLostLease) == std::string::npos
                                 ? "yes"
                                 : "no"},
       {"succeeded", fmt::format("{}/{}", succeeded, rounds * static_cast<int>(kNodes))},
       {"pods_evicted", fmt::format("{}/{}", evicted, evictions_expected.size())},
       {"metrics_flood", join_counts(metrics_outcomes)},
       {"metrics_p99_s", chaos::seconds(p99(metrics_latencies))},
       {"idle_opened/closed/failed", idle_text},
       {"idle_closed_after_median_s", chaos::seconds(chaos::median(idle_lifetimes))},
       {"slow_opened/closed/failed", slow_text},
       {"slow_closed_after_median_s", chaos::seconds(chaos::median(slow_lifetimes))},
       {"forged_reviews", join_counts(forged_outcomes)},
       {"forged_before_create_allowed", std::to_string(forged_before_create_allowed)},
       {"admissions", std::to_string(admissions.size())},
       {"admissions_refused", std::to_string(refused_creates)},
       {"admission_p99_s", chaos::seconds(p99(admissions))},
       {"admission_max_s", chaos::seconds(chaos::largest(admissions))},
       {"lease_renewals", std::to_string(renew_gaps.size())},
       {"lease_renew_gap_p99_s", chaos::seconds(p99(renew_gaps))},
       {"lease_renew_gap_max_s", chaos::seconds(chaos::largest(renew_gaps))},
       {"probes_ok", std::to_string(probes_ok)},
       {"probe_failures", join_counts(probe_failures)},
       {"probe_failures_in_a_row_max", std::to_string(max_consecutive_failures)},
       {"peak_rss_mib", fmt::format("{:.1f}/{:.1f}", peak_rss[0], peak_rss[1])}});
  EXPECT_EQ(violations_, 0);
}

}  // namespace
}  // namespace nmo::e2e
