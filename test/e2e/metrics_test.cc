// The operator as an SRE runs it (docs/design.md §6, issue "Operating it"): /metrics during a real
// drain (the phase gauge going Pending → Running → Succeeded, evictions by result, reconciles), the
// exposition checked by Prometheus' own parser and linter (NMO_PROMCHECK, built by make test);
// the secure endpoint deciding through TokenReview and SubjectAccessReview on the real API
// server; /readyz waiting for the caches and /healthz catching a wedged loop; and JSON log
// lines from which `grep <node>` tells every decision about the node.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/subprocess.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// The port `server` ("metrics", "health-probes") listens on, from the operator's "serving" log
// line (text or JSON); 0 when it did not log one in time.
int served_port(OperatorProcess& process, const std::string& server) {
  const std::regex line_of_server("serving.*(server=" + server + " |\"server\":\"" + server +
                                  "\").*");
  const std::regex port_field("port[=\":]+([0-9]+)");
  int port = 0;
  wait_until(
      "the operator logs where " + server + " listens", 30s,
      [&] {
        std::istringstream lines(process.log());
        for (std::string line; std::getline(lines, line);) {
          std::smatch found;
          if (std::regex_search(line, line_of_server) &&
              std::regex_search(line, found, port_field)) {
            port = std::stoi(found[1].str());
            return true;
          }
        }
        return false;
      },
      [&] { return process.log_tail(10); });
  return port;
}

struct Fetched {
  int status = 0;
  std::string body;
};

// GET `url` with curl (certificate not verified: the metrics certificate is self-signed), with
// a bearer token when given.
Fetched fetch(const std::string& url, const std::string& token = {}) {
  std::vector<std::string> argv{"curl", "-sS", "-k", "--max-time",    "10",
                                "-o",   "-",   "-w", "\n%{http_code}"};
  if (!token.empty()) argv.insert(argv.end(), {"-H", "Authorization: Bearer " + token});
  argv.push_back(url);
  const ProcessResult result = run_process(argv);
  Fetched fetched;
  const std::size_t last = result.out.rfind('\n');
  if (result.exit_code != 0 || last == std::string::npos) {
    fetched.body = result.err;
    return fetched;
  }
  fetched.status = std::atoi(result.out.c_str() + last + 1);
  fetched.body = result.out.substr(0, last);
  return fetched;
}

// The value of one series of an exposition (written exactly as the exposition writes it,
// labels in alphabetical order), or std::nullopt when absent.
std::optional<double> sample(const std::string& exposition, const std::string& series) {
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

// Prometheus' text parser and linter (test/tools/promcheck) on `exposition`: "" when both accept
// it, else what they said.
std::string promcheck(const std::string& exposition) {
  const char* tool = std::getenv("NMO_PROMCHECK");
  if (tool == nullptr || *tool == '\0') {
    return "NMO_PROMCHECK is not set: run the e2e tests through make test, or export the path "
           "hack/promcheck-build.sh prints";
  }
  const ProcessResult result = run_process({tool}, exposition);
  return result.exit_code == 0 ? std::string() : result.out + result.err;
}

// A kubeconfig for the ServiceAccount `account` of `ns`: the admin kubeconfig's server and CA,
// with a token of the account.
std::string service_account_kubeconfig(const Kubectl& kubectl, const std::string& ns,
                                       const std::string& account) {
  const std::string server =
      kubectl.must({"config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.server}"});
  const std::string ca =
      kubectl.must({"config", "view", "--raw", "-o",
                    "jsonpath={.clusters[0].cluster.certificate-authority-data}"});
  std::string token = kubectl.must({"create", "token", account, "-n", ns, "--duration=1h"});
  while (!token.empty() && token.back() == '\n') token.pop_back();
  const std::string path = (e2e_log_dir() / (ns + "-" + account + ".kubeconfig")).string();
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: "
      << server << "\n    certificate-authority-data: " << ca
      << "\nusers:\n- name: sa\n  user:\n    token: " << token
      << "\ncontexts:\n- name: sa\n  context:\n    cluster: local\n    user: sa\n"
         "current-context: sa\n";
  return path;
}

class MetricsTest : public OperatorFixture {
 protected:
  // An operator serving /metrics over plain HTTP and the probes, on free loopback ports.
  OperatorProcess& start_observed(std::vector<std::string> extra) {
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(), {"--metrics-bind-address", "127.0.0.1:0", "--metrics-secure=false",
                               "--health-probe-bind-address", "127.0.0.1:0"});
    flags.insert(flags.end(), extra.begin(), extra.end());
    OperatorProcess& process = start_operator(flags);
    metrics_url_ =
        "http://127.0.0.1:" + std::to_string(served_port(process, "metrics")) + "/metrics";
    probes_url_ = "http://127.0.0.1:" + std::to_string(served_port(process, "health-probes"));
    return process;
  }

  // Scrapes until `condition` holds for the exposition (checking each one with promcheck);
  // returns the last one.
  std::string scrape_until(const std::string& what,
                           const std::function<bool(const std::string&)>& condition) {
    std::string last;
    std::string problems;
    wait_until(
        what, kDrain,
        [&] {
          const Fetched fetched = fetch(metrics_url_);
          if (fetched.status != 200) return false;
          last = fetched.body;
          problems = promcheck(last);
          EXPECT_EQ(problems, "") << "the exposition does not pass promcheck";
          return condition(last);
        },
        [&] { return last; });
    return last;
  }

  // A token of the ServiceAccount `prometheus` of `ns`, bound to a ClusterRole that may get
  // /metrics (removed at the end).
  std::string metrics_reader_token(const TestNamespace& ns) {
    kubectl_.must({"create", "serviceaccount", "prometheus", "-n", ns.name()});
    const std::string role = ns.name() + "-metrics-reader";
    defer([this, role] {
      (void)kubectl_.run({"delete", "clusterrolebinding", role, "--ignore-not-found"});
      (void)kubectl_.run({"delete", "clusterrole", role, "--ignore-not-found"});
    });
    kubectl_.must({"create", "clusterrole", role, "--verb=get", "--non-resource-url=/metrics"});
    kubectl_.must({"create", "clusterrolebinding", role, "--clusterrole=" + role,
                   "--serviceaccount=" + ns.name() + ":prometheus"});
    return token_of(ns, "prometheus");
  }

  std::string token_of(const TestNamespace& ns, const std::string& account) {
    std::string token = kubectl_.must({"create", "token", account, "-n", ns.name()});
    while (!token.empty() && token.back() == '\n') token.pop_back();
    return token;
  }

  // Scrapes the secure `url` with `token` until it answers 200 (a new binding takes a moment to
  // reach the API server's authorizer, and a denial is trusted for 30 s); the last answer.
  Fetched scrape_securely(const std::string& url, const std::string& token) {
    Fetched allowed;
    EXPECT_TRUE(wait_until(
        "the bound ServiceAccount may scrape", kDrain,
        [&] {
          allowed = fetch(url, token);
          return allowed.status == 200;
        },
        [&] { return std::to_string(allowed.status) + " " + allowed.body; }));
    return allowed;
  }

  std::string metrics_url_;
  std::string probes_url_;
};

// The whole life of one maintenance, seen through /metrics and the log: held by a foreign
// node lease (Pending), draining but blocked by a PDB (Running), done (Succeeded).
TEST_F(MetricsTest, ADrainMovesThePhaseGaugeAndCountsEvictionsAndReconciles) {
  const std::string node = "node-worker-03";
  const std::string cr = "metrics-worker-03";
  const std::string holder = "NodeHealthCheck-metrics";
  restore_node_at_end(node);
  TestNamespace ns(kubectl_, "metrics");
  json::value db = json::parse(deployment_manifest(ns.name(), "db", 1, "db"));
  db.at("spec").at("template").at("spec").as_object()["nodeSelector"] =
      json::object{{"kubernetes.io/hostname", node}};
  kubectl_.apply(json::serialize(db));
  ASSERT_TRUE(wait_running(ns.name(), "app=db", 1));
  kubectl_.apply(pod_manifest(ns.name(), "bare-1", node));
  kubectl_.apply(pod_manifest(ns.name(), "bare-2", node));
  kubectl_.apply(pdb_manifest(ns.name(), "db-pdb", 1, "db"));
  ASSERT_TRUE(wait_until("PDB db-pdb allows no disruption", 60s, [&] {
    auto pdb = kubectl_.get_json({"pdb", "db-pdb", "-n", ns.name()});
    return pdb && int_at(*pdb, "/status/currentHealthy") == 1 &&
           int_at(*pdb, "/status/disruptionsAllowed") == 0;
  }));
  defer([this, node] {
    (void)kubectl_.run(
        {"delete", "lease", "-n", kLeaseNamespace, "node-" + node, "--ignore-not-found"});
  });
  kubectl_.apply(foreign_node_lease_manifest(node, holder));

  OperatorProcess& process = start_observed({"--log-format", "json"});
  const std::string who = "{name=\"" + cr + "\",node=\"" + node + "\"";
  auto phase = [&](const std::string& text, const std::string& p) {
    return sample(text, "nodemaintenance_phase" + who + ",phase=\"" + p + "\"}");
  };
  auto blocked = [&](const std::string& text, const std::string& reason) {
    return sample(text, "nodemaintenance_blocked" + who + ",reason=\"" + reason + "\"}");
  };
  auto evictions = [&](const std::string& text, const std::string& result) {
    return sample(text, "nodemaintenance_evictions_total{result=\"" + result + "\"}").value_or(-1);
  };
  // Before any maintenance: every eviction result and reconcile result exists, at 0.
  std::string text = scrape_until("the first scrape", [](const std::string&) { return true; });
  for (const char* result : {"evicted", "blocked_by_pdb", "deferred", "error"}) {
    EXPECT_EQ(evictions(text, result), 0) << result;
  }
  EXPECT_EQ(sample(text,
                   "controller_runtime_reconcile_total{controller=\"nodemaintenance\","
                   "result=\"error\"}"),
            0);

  ASSERT_TRUE(create_node_maintenance(cr, node, "metrics e2e"));
  text = scrape_until("Pending, blocked by the node lease", [&](const std::string& t) {
    return phase(t, "Pending") == 1 && blocked(t, "BlockedByNodeHealthCheck") == 1;
  });
  EXPECT_EQ(phase(text, "Running"), 0);

  kubectl_.must({"delete", "lease", "-n", kLeaseNamespace, "node-" + node});
  text = scrape_until("Running, the bare pods evicted, the db pod blocked by its PDB",
                      [&](const std::string& t) {
                        return phase(t, "Running") == 1 && blocked(t, "BlockedByPDB") == 1 &&
                               evictions(t, "blocked_by_pdb") >= 1 && evictions(t, "evicted") >= 2;
                      });
  EXPECT_EQ(phase(text, "Pending"), 0);
  EXPECT_EQ(blocked(text, "BlockedByNodeHealthCheck"), std::nullopt);
  EXPECT_EQ(sample(text, "nodemaintenance_pending_pods" + who + "}"), 1);

  kubectl_.must({"delete", "pdb", "db-pdb", "-n", ns.name()});
  text = scrape_until("Succeeded", [&](const std::string& t) {
    return phase(t, "Succeeded") == 1 &&
           sample(t, "nodemaintenance_drain_duration_seconds_count").value_or(0) >= 1;
  });
  EXPECT_EQ(phase(text, "Running"), 0);
  EXPECT_EQ(sample(text, "nodemaintenance_drain_progress_percent" + who + "}"), 100);
  EXPECT_EQ(sample(text, "nodemaintenance_pending_pods" + who + "}"), 0);
  EXPECT_EQ(blocked(text, "BlockedByPDB"), std::nullopt);
  EXPECT_GE(evictions(text, "evicted"), 3);
  EXPECT_GE(sample(text,
                   "controller_runtime_reconcile_total{controller=\"nodemaintenance\","
                   "result=\"success\"}")
                .value_or(0),
            3);
  EXPECT_GE(sample(text, "rest_client_requests_total{code=\"201\",host=\"" +
                             string_at(json::parse(kubectl_.must({"config", "view", "-o", "json"})),
                                       "/clusters/0/cluster/server")
                                 .substr(8) +
                             "\",method=\"POST\"}")
                .value_or(0),
            3)
      << "evictions are POSTs answered 201";
  EXPECT_EQ(sample(text, "leader_election_master_status{name=\"135b1886.medik8s.io\"}"), 1);
  EXPECT_GT(sample(text, "process_resident_memory_bytes").value_or(0), 0);

  // The maintenance ends; its series go with it.
  remove(cr);
  ASSERT_TRUE(wait_gone(cr, kReact));
  text = scrape_until("no series of the deleted maintenance", [&](const std::string& t) {
    return t.find("name=\"" + cr + "\"") == std::string::npos;
  });

  // Every log line is a JSON object with ts, level and msg; the lines about the node tell each
  // decision, in order.
  std::vector<std::string> decisions;
  std::istringstream lines(process.log());
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;  // the fixture's header line
    boost::system::error_code ec;
    json::value entry = json::parse(line, ec);
    ASSERT_FALSE(ec) << "not JSON: " << line;
    ASSERT_TRUE(entry.is_object()) << line;
    for (const char* key : {"ts", "level", "msg"}) {
      EXPECT_TRUE(entry.as_object().contains(key)) << key << " missing: " << line;
    }
    if (string_at(entry, "/node") == node && string_at(entry, "/nodemaintenance") == cr) {
      decisions.push_back(string_at(entry, "/msg"));
    }
  }
  std::vector<std::string> expected{"maintenance requested",
                                    "waiting for a maintenance slot or the node lease",
                                    "admitted: slot and node lease taken",
                                    "node cordoned and tainted",
                                    "maintenance succeeded",
                                    "node uncordoned",
                                    "maintenance removed"};
  auto at = decisions.begin();
  for (const std::string& want : expected) {
    at = std::find(at, decisions.end(), want);
    EXPECT_NE(at, decisions.end())
        << "no \"" << want << "\" (in order) among the lines about " << node;
  }
}

// No request the API refuses for a stale cache. A new node's first status updates queue a
// second reconcile of its maintenance while the finalizer patch is in flight; that reconcile ran
// on the cache from before the patch and sent it again, to be refused with 422 (the `test` of
// the resourceVersion failed). Five maintenances, one after the other, each created right after
// its node: without the fix this test failed in 5 of 8 runs.
TEST_F(MetricsTest, MaintenancesOfNewNodesSendNoPatchTheApiRefuses) {
  TestNamespace ns(kubectl_, "metrics-fresh");
  OperatorProcess& process = start_observed({"--log-format", "json"});
  for (int i = 0; i < 5; ++i) {
    const std::string node = unique_name("edge-fresh");
    defer([this, node] {
      (void)kubectl_.run({"delete", "node", node, "--ignore-not-found", "--timeout=60s"});
    });
    kubectl_.apply(node_manifest(node));
    kubectl_.apply(pod_manifest(ns.name(), "bare-" + std::to_string(i), node));
    const std::string cr = unique_name("fresh");
    ASSERT_TRUE(create_node_maintenance(cr, node, "metrics e2e"));
    ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
    remove(cr);
    ASSERT_TRUE(wait_gone(cr, kReact));
  }
  // The one 422 that stays: a node that really changed under the node patch (a new node's
  // not-ready taint going away), logged and patched again. The one 409: a node whose status
  // changed under the lifecycle conditions' patch (kwok's status writes), logged and written
  // again on the next look.
  std::int64_t node_changed = 0;
  std::int64_t status_changed = 0;
  std::istringstream log_lines(process.log());
  for (std::string line; std::getline(log_lines, line);) {
    if (line.find("the node changed while we patched it") != std::string::npos) ++node_changed;
    if (line.find("the node changed while we wrote its lifecycle conditions") !=
        std::string::npos) {
      ++status_changed;
    }
  }
  const std::string text = scrape_until("the requests", [](const std::string&) { return true; });
  std::int64_t refused = 0;
  std::int64_t conflicts = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("rest_client_requests_total{")) continue;
    const std::int64_t count = std::stoll(line.substr(line.rfind(' ') + 1));
    if (line.find("code=\"409\"") != std::string::npos) conflicts += count;
    if (line.find("code=\"422\"") != std::string::npos) refused += count;
  }
  EXPECT_EQ(refused, node_changed) << "422 answers other than node patches retried on news";
  EXPECT_EQ(conflicts, status_changed) << "409 answers other than status writes retried on news";
}

TEST_F(MetricsTest, SecureMetricsServeOnlyCallersTheApiServerAllows) {
  std::vector<std::string> flags = kOperatorFlags;
  flags.insert(flags.end(),
               {"--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "0"});
  OperatorProcess& process = start_operator(flags);
  const int port = served_port(process, "metrics");
  ASSERT_NE(port, 0);
  EXPECT_TRUE(process.wait_for_log("tls=true", 10s)) << process.log_tail(10);
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/metrics";

  Fetched anonymous = fetch(url);
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.body, "Unauthorized: no bearer token\n");
  EXPECT_EQ(fetch(url, "not-a-token").status, 401);

  TestNamespace ns(kubectl_, "scrape");
  kubectl_.must({"create", "serviceaccount", "stranger", "-n", ns.name()});
  const std::string scraper = metrics_reader_token(ns);

  const Fetched stranger = fetch(url, token_of(ns, "stranger"));
  EXPECT_EQ(stranger.status, 403);
  EXPECT_EQ(stranger.body.rfind("Forbidden: user \"system:serviceaccount:" + ns.name() +
                                    ":stranger\" may not get /metrics",
                                0),
            0U)
      << stranger.body;

  const Fetched allowed = scrape_securely(url, scraper);
  EXPECT_NE(allowed.body.find("controller_runtime_reconcile_total{controller=\"nodemaintenance\","
                              "result=\"success\"}"),
            std::string::npos);
  EXPECT_EQ(promcheck(allowed.body), "");
}

// Answers per HTTP status ("0": no answer) of `requests` GETs of `url`, each with a bearer token
// made up for it, `concurrency` at a time (one curl with --parallel).
std::map<int, int> flood_with_made_up_tokens(const std::string& url, int requests,
                                             int concurrency) {
  const std::filesystem::path config =
      e2e_log_dir() / ("flood-" + std::to_string(::getpid()) + ".curl");
  {
    std::ofstream out(config);
    std::mt19937_64 generator(std::random_device{}());
    for (int i = 0; i < requests; ++i) {
      if (i > 0) out << "next\n";
      out << "url = \"" << url << "\"\ninsecure\nsilent\nmax-time = 30\noutput = \"/dev/null\"\n"
          << "write-out = \"%{http_code}\\n\"\n"
          << "header = \"Authorization: Bearer made-up-" << generator() << "\"\n";
    }
  }
  const ProcessResult result =
      run_process({"curl", "--parallel", "--parallel-immediate", "--parallel-max",
                   std::to_string(concurrency), "--config", config.string()});
  std::filesystem::remove(config);
  std::map<int, int> statuses;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) ++statuses[std::atoi(line.c_str())];
  }
  return statuses;
}

// The sum of every series of `family` whose labels contain `label` (e.g. review="TokenReview").
double sum_of(const std::string& exposition, const std::string& family, const std::string& label) {
  double total = 0;
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(family + "{", 0) == 0 && line.find(label) != std::string::npos) {
      total += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return total;
}

// docs/reliability.md, "Hostile clients": strangers flooding secure /metrics with made-up tokens
// get 401 or 503 at once, the API server sees a bounded number of TokenReviews (the
// authorization lane's rate limit), and leader election, on a lane of its own, keeps renewing
// the Lease throughout; a real scraper is served afterwards.
TEST_F(MetricsTest, AFloodOfMadeUpTokensCostsBoundedReviewsAndNeverTheLease) {
  std::vector<std::string> flags = kOperatorFlags;
  flags.insert(flags.end(), {"--leader-elect", "--metrics-bind-address", "127.0.0.1:0",
                             "--health-probe-bind-address", "0"});
  OperatorProcess& process = start_operator(flags);
  const int port = served_port(process, "metrics");
  ASSERT_NE(port, 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/metrics";
  ASSERT_TRUE(process.wait_for_log("became the leader", 60s)) << process.log_tail(20);
  auto renewed = [this] {
    const auto held = lease(kOperatorNamespace, kLeaderLease);
    return held ? std::make_pair(string_at(*held, "/spec/holderIdentity"),
                                 string_at(*held, "/spec/renewTime"))
                : std::make_pair(std::string(), std::string());
  };
  // Plain variables, not a structured binding: Clang 14 cannot capture those.
  const std::pair<std::string, std::string> before = renewed();
  const std::string holder = before.first;
  const std::string renewed_before = before.second;
  ASSERT_FALSE(holder.empty());
  TestNamespace ns(kubectl_, "flood");
  const std::string scraper = metrics_reader_token(ns);

  const auto started = std::chrono::steady_clock::now();
  // 50 at a time: one address may hold 64 connections to /metrics (cmd/node-maintenance-operator/
  // servers.cc); beyond, the server sheds them before any answer.
  std::future<std::map<int, int>> flood =
      std::async(std::launch::async, [url] { return flood_with_made_up_tokens(url, 300, 50); });
  std::string last_renewal = renewed_before;
  EXPECT_TRUE(wait_until(
      "the leader renews its Lease while the flood runs", 20s,
      [&] {
        const auto [now_holder, renew_time] = renewed();
        EXPECT_EQ(now_holder, holder);
        last_renewal = renew_time;
        return renew_time > renewed_before;
      },
      [&] { return "renewTime " + last_renewal + ", before the flood " + renewed_before; }));
  const std::map<int, int> statuses = flood.get();
  const double flood_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  int answered = 0;
  for (const auto& [status, count] : statuses) {
    EXPECT_TRUE(status == 401 || status == 503) << count << " answers " << status;
    answered += count;
  }
  EXPECT_EQ(answered, 300);
  EXPECT_GT(statuses.count(503) != 0 ? statuses.at(503) : 0, 0)
      << "the flood never reached a bound";

  const Fetched scraped = scrape_securely(url, scraper);
  ASSERT_EQ(scraped.status, 200);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // The authorization lane: burst 10, 5 per second (cmd/node-maintenance-operator/main.cc).
  const double token_reviews =
      sum_of(scraped.body, "metrics_authorization_reviews_total", "review=\"TokenReview\"");
  EXPECT_GE(token_reviews, 1);
  EXPECT_LE(token_reviews, 10 + 5 * elapsed + 1)
      << "flood took " << flood_seconds << " s, " << elapsed << " s until the scrape";
  EXPECT_LT(token_reviews, 300);
  EXPECT_GT(sum_of(scraped.body, "metrics_authorization_shed_total", "reason="), 0);
  EXPECT_EQ(promcheck(scraped.body), "");

  // Still the same leader, still renewing, never having lost the Lease.
  const std::string after_flood = renewed().second;
  EXPECT_TRUE(wait_until(
      "the leader renews its Lease after the flood", 20s,
      [&] {
        const auto [now_holder, renew_time] = renewed();
        EXPECT_EQ(now_holder, holder);
        return renew_time > after_flood;
      },
      [&] { return renewed().second; }));
  EXPECT_TRUE(process.running()) << process.log_tail(20);
  EXPECT_EQ(process.log().find("lost leader lease"), std::string::npos) << process.log_tail(20);
}

TEST_F(MetricsTest, ReadyzWaitsForTheCachesToSync) {
  TestNamespace ns(kubectl_, "probes");
  kubectl_.must({"create", "serviceaccount", "operator", "-n", ns.name()});
  const std::string kubeconfig = service_account_kubeconfig(kubectl_, ns.name(), "operator");
  // Without any permission its caches cannot sync.
  OperatorProcess& process = start_observed({"--kubeconfig", kubeconfig});
  Fetched readyz;
  EXPECT_TRUE(wait_until(
      "/readyz fails while the caches cannot sync", kReact,
      [&] {
        readyz = fetch(probes_url_ + "/readyz");
        return readyz.status == 500;
      },
      [&] { return std::to_string(readyz.status) + " " + readyz.body; }));
  EXPECT_EQ(readyz.body, "readyz check failed: the controller's caches are not synced yet\n");
  EXPECT_EQ(fetch(probes_url_ + "/healthz").status, 200);

  // Granting the operator's permissions lets the caches sync: ready.
  const std::string binding = ns.name() + "-operator";
  defer([this, binding] {
    (void)kubectl_.run({"delete", "clusterrolebinding", binding, "--ignore-not-found"});
  });
  kubectl_.must({"create", "clusterrolebinding", binding, "--clusterrole=cluster-admin",
                 "--serviceaccount=" + ns.name() + ":operator"});
  EXPECT_TRUE(wait_until(
      "/readyz passes once the caches synced", 55s,
      [&] {
        readyz = fetch(probes_url_ + "/readyz");
        return readyz.status == 200;
      },
      [&] { return std::to_string(readyz.status) + " " + readyz.body + process.log_tail(5); }));
  EXPECT_EQ(readyz.body, "ok");
}

// A missing lease namespace: the operator creates it when its RBAC allows (upstream's and ours
// grant namespaces create). Until then /readyz and the log say why no node lease can be taken,
// and it tries again every 10 s (docs/operations.md, "Flags").
TEST_F(MetricsTest, MissingLeaseNamespaceIsReportedUntilTheOperatorMayCreateIt) {
  TestNamespace ns(kubectl_, "leasens");
  kubectl_.must({"create", "serviceaccount", "operator", "-n", ns.name()});
  const std::string kubeconfig = service_account_kubeconfig(kubectl_, ns.name(), "operator");
  const std::string lease_namespace = ns.name() + "-leases";
  const std::string grant = ns.name() + "-operator";
  const std::string subject = "--serviceaccount=" + ns.name() + ":operator";
  defer([this, grant, lease_namespace] {
    for (const std::string& name : {grant + "-role", grant + "-leases", grant + "-namespaces"}) {
      (void)kubectl_.run({"delete", "clusterrolebinding", name, "--ignore-not-found"});
    }
    for (const std::string& name : {grant + "-role", grant + "-leases", grant + "-namespaces"}) {
      (void)kubectl_.run({"delete", "clusterrole", name, "--ignore-not-found"});
    }
    (void)kubectl_.run(
        {"delete", "namespace", lease_namespace, "--ignore-not-found", "--wait=false"});
  });
  // The operator's own ClusterRole without its namespaces rule, and Leases in every namespace:
  // all but namespaces create.
  const auto role = kubectl_.get_json({"clusterrole", "node-maintenance-operator-manager-role"});
  ASSERT_TRUE(role);
  boost::json::array rules;
  for (const boost::json::value& rule : role->at("rules").as_array()) {
    const boost::json::array& resources = rule.at("resources").as_array();
    if (std::find(resources.begin(), resources.end(), boost::json::value("namespaces")) ==
        resources.end()) {
      rules.push_back(rule);
    }
  }
  ASSERT_LT(rules.size(), role->at("rules").as_array().size()) << "no namespaces rule to leave out";
  const boost::json::object without_namespaces{
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRole"},
      {"metadata", boost::json::object{{"name", grant + "-role"}}},
      {"rules", rules}};
  kubectl_.must({"create", "-f", "-"}, boost::json::serialize(without_namespaces));
  kubectl_.must({"create", "clusterrolebinding", grant + "-role",
                 "--clusterrole=" + grant + "-role", subject});
  kubectl_.must({"create", "clusterrole", grant + "-leases",
                 "--resource=leases.coordination.k8s.io",
                 "--verb=get,list,watch,create,update,delete"});
  kubectl_.must({"create", "clusterrolebinding", grant + "-leases",
                 "--clusterrole=" + grant + "-leases", subject});
  const std::string node = fresh_node("leasens");
  start_observed({"--kubeconfig", kubeconfig, "--lease-namespace", lease_namespace});
  const std::string cr = "metrics-lease-namespace";
  ASSERT_TRUE(create_node_maintenance(cr, node));

  const std::string refused =
      "the lease namespace " + lease_namespace + " does not exist, and creating it was refused: ";
  Fetched readyz;
  EXPECT_TRUE(wait_until(
      "/readyz names the missing lease namespace", kReact,
      [&] {
        readyz = fetch(probes_url_ + "/readyz");
        return readyz.status == 500 && readyz.body.find(refused) != std::string::npos;
      },
      [&] { return std::to_string(readyz.status) + " " + readyz.body; }));
  EXPECT_NE(readyz.body.find("(create it, or allow namespaces create: deploy/rbac)"),
            std::string::npos)
      << readyz.body;
  const auto pending = get_node_maintenance(cr);
  ASSERT_TRUE(pending);
  EXPECT_EQ(phase_of(*pending), "Pending");

  // Allowed to create namespaces: it creates the lease namespace, takes the lease, drains.
  kubectl_.must(
      {"create", "clusterrole", grant + "-namespaces", "--resource=namespaces", "--verb=create"});
  kubectl_.must({"create", "clusterrolebinding", grant + "-namespaces",
                 "--clusterrole=" + grant + "-namespaces", subject});
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  const auto created = kubectl_.get_json({"namespace", lease_namespace});
  ASSERT_TRUE(created);
  EXPECT_EQ(string_at(*created, "/metadata/labels/app.kubernetes.io~1part-of"), "medik8s");
  const auto lease = this->lease(lease_namespace, "node-" + node);
  ASSERT_TRUE(lease);
  EXPECT_EQ(string_at(*lease, "/spec/holderIdentity"), "node-maintenance");
  EXPECT_TRUE(wait_until("/readyz passes again", kReact, [&] {
    readyz = fetch(probes_url_ + "/readyz");
    return readyz.status == 200;
  }));
  EXPECT_EQ(readyz.body, "ok");
}

TEST_F(MetricsTest, HealthzFailsWhileAReconcileIsWedged) {
  const std::string cr = "metrics-wedged";
  start_observed({"--test-hook-wedge-reconcile", cr, "--healthz-max-stall", "2"});
  EXPECT_EQ(fetch(probes_url_ + "/healthz").status, 200);
  EXPECT_TRUE(wait_until("/readyz passes", kReact,
                         [&] { return fetch(probes_url_ + "/readyz").status == 200; }));

  ASSERT_TRUE(create_node_maintenance(cr, "node-worker-04"));
  Fetched healthz;
  EXPECT_TRUE(wait_until(
      "/healthz fails", kReact,
      [&] {
        healthz = fetch(probes_url_ + "/healthz");
        return healthz.status == 500;
      },
      [&] { return std::to_string(healthz.status) + " " + healthz.body; }));
  EXPECT_EQ(healthz.body, "healthz check failed: a reconcile has been running for more than 2 s\n");
  const Fetched metrics = fetch(metrics_url_);
  EXPECT_EQ(
      sample(metrics.body, "controller_runtime_active_workers{controller=\"nodemaintenance\"}"), 1);
}

// A MaintenancePlan through /metrics: its phase and node counts while it runs and when it has
// succeeded, checked by promcheck, and no series of it once it is deleted.
TEST_F(MetricsTest, APlanShowsItsPhaseAndNodeCountsAndItsSeriesGoWithIt) {
  const std::vector<std::string> nodes = fresh_nodes("metrics-plan", 2);
  const std::string plan = unique_name("metrics-plan");
  start_observed({});
  defer([this, plan] {
    (void)kubectl_.run(
        {"delete", "maintenanceplan", plan, "--ignore-not-found", "--wait=true", "--timeout=60s"});
  });
  kubectl_.apply(
      json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1alpha1"},
                                   {"kind", "MaintenancePlan"},
                                   {"metadata", {{"name", plan}}},
                                   {"spec",
                                    {{"nodes", json::array{nodes[0].c_str(), nodes[1].c_str()}},
                                     {"doneWhen", "Soaked"},
                                     {"soakTime", "1s"}}}}));
  const std::string of_plan = "plan=\"" + plan + "\"}";
  const std::string done =
      scrape_until("the plan Succeeded with both nodes done", [&](const auto& text) {
        return sample(text, "maintenanceplan_phase{phase=\"Succeeded\"," + of_plan) == 1 &&
               sample(text, "maintenanceplan_nodes{phase=\"Done\"," + of_plan) == 2;
      });
  EXPECT_EQ(sample(done, "maintenanceplan_phase{phase=\"Running\"," + of_plan), 0);
  EXPECT_EQ(sample(done, "maintenanceplan_nodes{phase=\"Waiting\"," + of_plan), 0);
  EXPECT_EQ(sample(done, "maintenanceplan_nodes{phase=\"Failed\"," + of_plan), 0);

  kubectl_.must({"delete", "maintenanceplan", plan, "--wait=true", "--timeout=60s"});
  scrape_until("the plan's series are gone",
               [&](const std::string& text) { return text.find(of_plan) == std::string::npos; });
}

}  // namespace
}  // namespace nmo::e2e
