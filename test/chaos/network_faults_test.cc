// docs/reliability.md, experiment 4, "Network faults": the operator talks to the API server through
// test/tools/fault_proxy, which breaks the path while maintenances drain, and the operator must
// recover with every invariant of docs/design.md §2.4–§2.7 holding.
//
// Three fresh kwok nodes are maintained at once (--max-parallel-maintenances=3), each with plain
// pods, a pod that lingers in termination, a pod its PodDisruptionBudget protects and a
// DaemonSet pod; a fourth node is a bystander. Each round injects one fault, cycling through
//   drop     every connection closed at once, watches included
//   stall    the open connections move no byte for 10 s
//   503      the next 12 requests (at most 10 s) answered 503, and every connection dropped,
//            so re-lists and re-watches run into them
//   429      the same with API Priority & Fairness throttling (Retry-After: 1)
//   refuse   every connection dropped and the port refusing new ones for 3 s
// and, while the fault lasts, binds a newcomer pod to one of the maintained nodes, which the
// operator must evict (docs/design.md §2.4). Recovery is the time from the end of the fault (or the
// newcomer's creation, when later) to the newcomer's accepted eviction, as the proxy saw it.
// Halfway through, the PDBs are deleted so that the drains finish under faults too; at the end
// the NodeMaintenances are deleted under a last 503 burst (connections kept: it hits the
// finalizer's writes).
//
// Invariants checked (each breach counted, and the count must be 0): while a NodeMaintenance
// exists its node stays cordoned with the drain taint and its phase never goes back or fails;
// every maintenance reaches Succeeded with all its pods evicted and SucceedMaintenance said
// once; no pod's eviction is accepted and answered twice; DaemonSet and bystander pods are never
// asked to leave; after the deletes no node is left cordoned, tainted, labelled or annotated,
// no node lease or budget slot is left, and no NodeMaintenance keeps its finalizer.
//
// The operator runs as its ServiceAccount (the token of $NMO_OPERATOR_KUBECONFIG, which the
// plain-HTTP kubeconfig of the proxy carries) and without leader election, like every e2e test.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/config/kubeconfig_loader.h"
#include "test/chaos/support/chaos.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/tools/fault_proxy/fault_proxy.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using SteadyClock = std::chrono::steady_clock;
using fault_proxy::FaultProxy;

constexpr int kMaintainedNodes = 3;
constexpr std::chrono::seconds kStallSpan{10};
constexpr std::chrono::seconds kRefuseSpan{3};
constexpr int kBurst = 12;  // injected answers per 503/429 burst
constexpr std::chrono::seconds kThrottleRetryAfter{1};
constexpr std::chrono::seconds kBurstWindow{10};  // the longest a burst lasts

enum class Fault { kDrop, kStall, kUnavailable, kThrottled, kRefuse };
constexpr Fault kFaults[] = {Fault::kDrop, Fault::kStall, Fault::kUnavailable, Fault::kThrottled,
                             Fault::kRefuse};

std::string fault_name(Fault fault) {
  switch (fault) {
    case Fault::kDrop:
      return "drop";
    case Fault::kStall:
      return "stall";
    case Fault::kUnavailable:
      return "503";
    case Fault::kThrottled:
      return "429";
    case Fault::kRefuse:
      return "refuse";
  }
  return "?";
}

double seconds_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

int phase_rank(const std::string& phase) {
  if (phase == "Pending" || phase.empty()) return 0;
  if (phase == "Running") return 1;
  if (phase == "Succeeded") return 2;
  return -1;  // Failed, or anything else: never expected here
}

class NetworkFaultsTest : public OperatorFixture {
 protected:
  void TearDown() override {
    OperatorFixture::TearDown();  // needs the proxy: the operator talks through it
    proxy_.reset();
    std::error_code ignored;
    if (!kubeconfig_dir_.empty()) std::filesystem::remove_all(kubeconfig_dir_, ignored);
  }

  // Starts the proxy in front of the API server of the operator's kubeconfig and writes a
  // kubeconfig that reaches it over plain HTTP with the same bearer token. Returns its path.
  std::string start_proxy() {
    const char* operator_kubeconfig = std::getenv("NMO_OPERATOR_KUBECONFIG");
    const char* admin_kubeconfig = std::getenv("KUBECONFIG");
    const std::string path = operator_kubeconfig != nullptr && *operator_kubeconfig != '\0'
                                 ? operator_kubeconfig
                                 : (admin_kubeconfig != nullptr ? admin_kubeconfig : "");
    Result<kube::RestConfig> rest = kube::load_kubeconfig({.path = path, .context = ""});
    if (!rest.has_value()) {
      ADD_FAILURE() << "cannot load " << path << ": " << rest.error().describe();
      return "";
    }
    if (rest->token == nullptr) {
      ADD_FAILURE() << path << " has no bearer token, which the plain-HTTP proxy needs; "
                    << "set NMO_OPERATOR_KUBECONFIG (hack/operator-kubeconfig.sh)";
      return "";
    }
    Result<std::string> token = rest->token->token();
    if (!token.has_value()) {
      ADD_FAILURE() << "cannot read the token of " << path << ": " << token.error().describe();
      return "";
    }
    Result<std::unique_ptr<FaultProxy>> proxy =
        FaultProxy::start({.host = rest->host, .port = rest->port, .ca_pem = rest->ca_pem});
    if (!proxy.has_value()) {
      ADD_FAILURE() << proxy.error().describe();
      return "";
    }
    proxy_ = std::move(*proxy);

    std::string dir_template =
        (std::filesystem::temp_directory_path() / "nmo-network-faults-XXXXXX").string();
    if (::mkdtemp(dir_template.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed";
      return "";
    }
    kubeconfig_dir_ = dir_template;
    const std::string kubeconfig = kubeconfig_dir_ + "/kubeconfig";
    std::ofstream out(kubeconfig);
    out << "apiVersion: v1\nkind: Config\n"
        << "clusters:\n- name: fault-proxy\n  cluster:\n    server: " << proxy_->url() << "\n"
        << "users:\n- name: operator\n  user:\n    token: \"" << *token << "\"\n"
        << "contexts:\n- name: fault-proxy\n  context:\n    cluster: fault-proxy\n"
        << "    user: operator\n    namespace: " << kOperatorNamespace << "\n"
        << "current-context: fault-proxy\n";
    out.close();
    EXPECT_TRUE(out) << "cannot write " << kubeconfig;
    return kubeconfig;
  }

  // Ends the burst injected after `injected_before` answers: once all kBurst answers are out,
  // or after kBurstWindow (a real overload lasts a while; a burst that only the retries of one
  // backed-off watch consume would last for minutes). Returns when the last one went out.
  SteadyClock::time_point end_burst(std::int64_t injected_before) {
    const auto deadline = SteadyClock::now() + kBurstWindow;
    while (proxy_->counters().responses_injected < injected_before + kBurst &&
           SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(100ms);  // polling interval of a condition wait
    }
    proxy_->fail_next(0, 503, std::nullopt);
    return proxy_->last_injected_at().value_or(SteadyClock::now());
  }

  // Records a broken invariant: a test failure, and one more in the report's count.
  void violated(const std::string& what) {
    ++violations_;
    ADD_FAILURE() << "invariant violated: " << what;
  }

  // While a NodeMaintenance exists its node stays cordoned with the drain taint, and its phase
  // only moves forward (docs/design.md §2.3, §2.5, §2.7).
  void check_while_maintained(const std::map<std::string, std::string>& cr_to_node) {
    for (const auto& [cr, node] : cr_to_node) {
      auto nm = get_node_maintenance(cr);
      if (!nm) {
        violated("NodeMaintenance " + cr + " disappeared");
        continue;
      }
      const std::string phase = phase_of(*nm);
      const int rank = phase_rank(phase);
      if (rank < 0 || rank < highest_phase_[cr]) {
        violated(cr + " went from rank " + std::to_string(highest_phase_[cr]) + " to phase \"" +
                 phase + "\"; lastError: " + maintenance_of(*nm).status.last_error);
      }
      highest_phase_[cr] = std::max(highest_phase_[cr], rank);
      if (rank < 1) continue;  // Pending: the node is not touched yet
      auto n = kubectl_.get_json({"node", node});
      if (!n || !unschedulable(*n) || !drain_tainted(*n)) {
        violated("node " + node + " of " + phase + " " + cr + " is not cordoned and tainted: " +
                 (n ? describe_node(*n) : std::string("no node")));
      }
    }
  }

  std::unique_ptr<FaultProxy> proxy_;
  std::string kubeconfig_dir_;
  int violations_ = 0;
  std::map<std::string, int> highest_phase_;
};

TEST_F(NetworkFaultsTest, OperatorRecoversAndInvariantsHold) {
  const int rounds = chaos::iterations(5, 20);
  const auto started = SteadyClock::now();
  const std::string run_label = unique_name("run");
  std::vector<std::string> nodes = fresh_nodes("net", kMaintainedNodes + 1);
  ASSERT_FALSE(HasFailure());
  std::vector<std::string> label_args{"label", "node"};
  label_args.insert(label_args.end(), nodes.begin(), nodes.end());
  label_args.push_back("chaos-network=" + run_label);  // the DaemonSet's node selector
  kubectl_.must(label_args);
  const std::string bystander = nodes.back();
  nodes.pop_back();
  TestNamespace ns(kubectl_, "chaos-net");

  // Workloads. must_leave: pods the drains must evict; must_stay: pods never to be evicted.
  std::set<std::string> must_leave;
  std::set<std::string> must_stay;
  std::map<std::string, std::int64_t> expected_total;  // per node
  json::value daemonset = json::parse(daemonset_manifest(ns.name(), "agent", "agent"));
  daemonset.at_pointer("/spec/template/spec").as_object()["nodeSelector"] =
      json::object{{"chaos-network", run_label}};
  kubectl_.apply(json::serialize(daemonset));
  for (int i = 0; i < kMaintainedNodes; ++i) {
    const std::string& node = nodes[static_cast<std::size_t>(i)];
    const std::string n = std::to_string(i);
    for (const std::string& pod : {"plain-" + n + "-a", "plain-" + n + "-b"}) {
      kubectl_.apply(pod_manifest(ns.name(), pod, node));
      must_leave.insert(pod);
    }
    kubectl_.apply(
        pod_manifest(ns.name(), "slow-" + n, node, {{kSlowDeleteAnnotation, "true"}}, 5));
    kubectl_.apply(pod_manifest(ns.name(), "guarded-" + n, node));
    for (const std::string& pod : {"slow-" + n, "guarded-" + n}) {
      must_leave.insert(pod);
    }
    expected_total[node] = 4;
  }
  for (const std::string& pod : {std::string("bystander-a"), std::string("bystander-b")}) {
    kubectl_.apply(pod_manifest(ns.name(), pod, bystander));
    must_stay.insert(pod);
  }
  for (const std::string& pod : must_leave) ASSERT_TRUE(wait_running(ns.name(), "app=" + pod, 1));
  for (const std::string& pod : must_stay) ASSERT_TRUE(wait_running(ns.name(), "app=" + pod, 1));
  ASSERT_TRUE(wait_running(ns.name(), "app=agent", kMaintainedNodes + 1));
  for (const auto& p : list_pods(kubectl_, ns.name(), "app=agent")) {
    must_stay.insert(string_at(json::value(p), "/metadata/name"));
  }
  std::map<std::string, std::string> stay_uid;
  for (const std::string& pod : must_stay) {
    auto p = kubectl_.get_json({"pod", pod, "-n", ns.name()});
    ASSERT_TRUE(p);
    stay_uid[pod] = uid_of(*p);
  }
  for (int i = 0; i < kMaintainedNodes; ++i) {
    const std::string n = std::to_string(i);
    kubectl_.apply(pdb_manifest(ns.name(), "guarded-" + n, 1, "guarded-" + n));
  }
  for (int i = 0; i < kMaintainedNodes; ++i) {
    ASSERT_TRUE(wait_pdb(ns.name(), "guarded-" + std::to_string(i), 1, 0));
  }

  // The operator, through the proxy.
  const std::string kubeconfig = start_proxy();
  ASSERT_FALSE(kubeconfig.empty());
  std::vector<std::string> flags = kOperatorFlags;
  flags.insert(flags.end(), {"--kubeconfig", kubeconfig, "--max-parallel-maintenances",
                             std::to_string(kMaintainedNodes)});
  OperatorProcess& op = start_operator(flags);
  ASSERT_TRUE(op.running());

  std::map<std::string, std::string> cr_to_node;
  std::map<std::string, std::string> cr_uid;
  for (int i = 0; i < kMaintainedNodes; ++i) {
    const std::string cr = unique_name("maintenance-chaos-net");
    const std::string& node = nodes[static_cast<std::size_t>(i)];
    cr_uid[cr] = create(cr, node, "network faults");
    ASSERT_FALSE(cr_uid[cr].empty());
    cr_to_node[cr] = node;
  }
  // The drains start: every node cordoned, its guarded pod refused by its PDB.
  for (const auto& entry : cr_to_node) {
    // Named: Clang 14 cannot capture a structured binding in the lambdas below.
    const std::string& cr = entry.first;
    std::optional<json::value> nm;
    ASSERT_TRUE(wait_until(
        cr + " Running with its guarded pod blocked by the PDB", kReact,
        [&] {
          nm = get_node_maintenance(cr);
          if (!nm || phase_of(*nm) != "Running") return false;
          const std::vector<op::PendingPodRef> refs = maintenance_of(*nm).status.pending_pods_refs;
          return std::any_of(refs.begin(), refs.end(), [](const op::PendingPodRef& r) {
            return r.name.starts_with("guarded-") &&
                   r.reason == op::PendingPodReason::kBlockedByPdb;
          });
        },
        [&] { return nm ? json::serialize(nm->as_object()["status"]) : std::string("no CR"); }));
  }
  check_while_maintained(cr_to_node);

  // ---- fault rounds ----
  std::map<std::string, int> faults;  // by kind
  std::vector<double> recoveries;
  std::map<std::string, double> worst_recovery;  // by kind
  const int relax_at = rounds / 2;
  for (int round = 0; round < rounds; ++round) {
    if (round == relax_at) {
      // The admin relaxes the PDBs: the guarded pods may go, and the drains finish under faults.
      for (int i = 0; i < kMaintainedNodes; ++i) {
        kubectl_.must({"delete", "pdb", "guarded-" + std::to_string(i), "-n", ns.name()});
      }
    }
    const Fault fault = kFaults[static_cast<std::size_t>(round) % std::size(kFaults)];
    const std::string kind = fault_name(fault);
    const std::string& node = nodes[static_cast<std::size_t>(round % kMaintainedNodes)];
    const std::int64_t injected_before = proxy_->counters().responses_injected;
    SteadyClock::time_point fault_end = SteadyClock::now();
    switch (fault) {
      case Fault::kDrop:
        (void)proxy_->drop_all();
        fault_end = SteadyClock::now();
        break;
      case Fault::kStall:
        proxy_->stall(kStallSpan);
        fault_end = SteadyClock::now() + kStallSpan;
        break;
      case Fault::kUnavailable:
        proxy_->fail_next(kBurst, 503, std::nullopt);
        (void)proxy_->drop_all();
        break;
      case Fault::kThrottled:
        proxy_->fail_next(kBurst, 429, kThrottleRetryAfter);
        (void)proxy_->drop_all();
        break;
      case Fault::kRefuse:
        proxy_->refuse(kRefuseSpan);
        (void)proxy_->drop_all();
        fault_end = SteadyClock::now() + kRefuseSpan;
        break;
    }
    ++faults[kind];

    // A newcomer bound to the node while the fault lasts: the operator must evict it.
    const std::string newcomer = "newcomer-" + std::to_string(round);
    kubectl_.apply(pod_manifest(ns.name(), newcomer, node));
    const SteadyClock::time_point created = SteadyClock::now();
    must_leave.insert(newcomer);
    ++expected_total[node];

    if (fault == Fault::kUnavailable || fault == Fault::kThrottled) {
      fault_end = end_burst(injected_before);
    }

    std::optional<SteadyClock::time_point> evicted_at;
    const bool evicted =
        wait_until("round " + std::to_string(round) + " (" + kind + "): " + newcomer + " evicted",
                   kDrain, [&] {
                     for (const auto& e : proxy_->evictions()) {
                       if (e.pod == newcomer && e.status >= 200 && e.status < 300) {
                         evicted_at = e.answered_at;
                         return true;
                       }
                     }
                     return false;
                   });
    if (evicted && evicted_at) {
      const double recovery =
          std::max(0.0, seconds_between(std::max(fault_end, created), *evicted_at));
      recoveries.push_back(recovery);
      worst_recovery[kind] = std::max(worst_recovery[kind], recovery);
    } else {
      violated(newcomer + " on " + node + " was not evicted after the " + kind + " fault");
    }
    EXPECT_TRUE(wait_until(newcomer + " gone", kDrain, [&] {
      return !kubectl_.get_json({"pod", newcomer, "-n", ns.name()});
    }));
    check_while_maintained(cr_to_node);
    ASSERT_TRUE(op.running()) << "the operator exited during round " << round << " (" << kind
                              << "); log: " << op.log_path();
  }

  // ---- every maintenance finishes ----
  for (const auto& entry : cr_to_node) {
    // Named: Clang 14 cannot capture a structured binding in the lambdas below.
    const std::string& cr = entry.first;
    const std::string& node = entry.second;
    auto nm = wait_phase(cr, {"Succeeded"}, kDrain);
    if (!nm) {
      violated(cr + " did not reach Succeeded");
      continue;
    }
    // Status writes are coalesced to about one a second (docs/design.md §2.4): the last newcomer's
    // eviction may still be on its way.
    const std::int64_t total = expected_total[node];
    EXPECT_TRUE(wait_until(
        cr + " counting all " + std::to_string(total) + " pods of its node as evicted", kReact,
        [&] {
          nm = get_node_maintenance(cr);
          if (!nm) return false;
          const op::NodeMaintenanceStatus status = maintenance_of(*nm).status;
          return status.total_pods == total && status.eviction_pods == total &&
                 status.drain_progress == 100;
        },
        [&] { return nm ? json::serialize(nm->at("status")) : std::string("no CR"); }));
    if (nm) {
      EXPECT_EQ(maintenance_of(*nm).status.last_error, "") << cr << " is Succeeded";
    }
    if (event_count(cr_uid[cr], "SucceedMaintenance") != 1) {
      violated(cr + " said SucceedMaintenance " +
               std::to_string(event_count(cr_uid[cr], "SucceedMaintenance")) + " times");
    }
  }
  check_while_maintained(cr_to_node);

  // ---- the evictions, as the proxy saw them ----
  std::map<std::string, int> accepted;   // 2xx from the API server, delivered or not
  std::map<std::string, int> delivered;  // 2xx that reached the operator
  std::int64_t eviction_requests = 0;
  for (const auto& e : proxy_->evictions()) {
    if (e.namespace_ != ns.name()) continue;
    ++eviction_requests;
    if (must_stay.contains(e.pod)) {
      violated("eviction of " + e.pod + ", which must stay, was requested (answer " +
               std::to_string(e.status) + ")");
    }
    if (!e.injected && e.status >= 200 && e.status < 300) {
      ++accepted[e.pod];
      if (e.delivered) ++delivered[e.pod];
    }
  }
  for (const auto& [pod, count] : delivered) {
    if (count > 1) violated(pod + " was evicted " + std::to_string(count) + " times");
  }
  for (const std::string& pod : must_leave) {
    if (accepted[pod] == 0) violated(pod + " left without an accepted eviction");
    if (kubectl_.get_json({"pod", pod, "-n", ns.name()})) violated(pod + " is still there");
  }
  for (const auto& [pod, uid] : stay_uid) {
    auto p = kubectl_.get_json({"pod", pod, "-n", ns.name()});
    if (!p || uid_of(*p) != uid || is_terminating(*p)) violated(pod + " did not stay");
  }

  // ---- deletion under a last burst ----
  const auto delete_started = SteadyClock::now();
  for (const auto& [cr, node] : cr_to_node) remove(cr);
  // Connections stay up, so the burst hits the finalizer's writes rather than re-lists.
  const std::int64_t injected_before_delete = proxy_->counters().responses_injected;
  proxy_->fail_next(kBurst, 503, std::nullopt);
  ++faults["503"];
  (void)end_burst(injected_before_delete);
  for (const auto& [cr, node] : cr_to_node) {
    // A watch that failed again and again waits up to 30 s between attempts (the reflector's
    // backoff) before it sees the delete.
    if (!wait_gone(cr, kDrain)) violated(cr + " stuck with its finalizer");
  }
  for (const auto& [cr, node] : cr_to_node) {
    if (!wait_node_restored(node, /*stays_cordoned=*/false, kReact)) {
      violated("node " + node + " not restored after " + cr + " was deleted");
    }
    if (node_lease_held(node)) violated("node lease of " + node + " still held");
    if (slot_holders().contains(cr + " (node " + node + ")")) {
      violated("budget slot of " + cr + " left");
    }
  }
  const double cleanup_seconds = seconds_between(delete_started, SteadyClock::now());
  ASSERT_TRUE(op.running()) << "the operator exited; log: " << op.log_path();

  const fault_proxy::Counters counters = proxy_->counters();
  std::vector<chaos::Figure> figures{
      {"rounds", std::to_string(rounds)},
      {"maintenances", std::to_string(kMaintainedNodes)},
      {"faults_drop", std::to_string(faults["drop"])},
      {"faults_stall_10s", std::to_string(faults["stall"])},
      {"faults_503_burst", std::to_string(faults["503"])},
      {"faults_429_burst", std::to_string(faults["429"])},
      {"faults_refuse_3s", std::to_string(faults["refuse"])},
      {"injected_answers", std::to_string(counters.responses_injected)},
      {"connections_dropped", std::to_string(counters.connections_dropped)},
      {"requests_forwarded", std::to_string(counters.requests_forwarded)},
      {"eviction_requests", std::to_string(eviction_requests)},
      {"newcomers_evicted", std::to_string(recoveries.size())},
      {"violations", std::to_string(violations_)},
      {"recovery_median_s",
       chaos::seconds(std::chrono::duration<double>(chaos::median(recoveries)))},
      {"recovery_max_s", chaos::seconds(std::chrono::duration<double>(chaos::largest(recoveries)))},
  };
  for (const auto& [kind, worst] : worst_recovery) {
    figures.push_back(
        {"recovery_max_" + kind + "_s", chaos::seconds(std::chrono::duration<double>(worst))});
  }
  figures.push_back({"cleanup_s", chaos::seconds(std::chrono::duration<double>(cleanup_seconds))});
  figures.push_back({"elapsed_s", chaos::seconds(SteadyClock::now() - started)});
  chaos::report("network faults", figures);
  EXPECT_EQ(violations_, 0);
}

}  // namespace
}  // namespace nmo::e2e
