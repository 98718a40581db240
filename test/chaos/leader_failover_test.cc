// Experiment 3 of docs/reliability.md, "leader failover" (docs/design.md §3.2, §2.7): two replicas
// run with
// --leader-elect. In each round three maintenances start on fresh nodes (plain pods, pods slow
// to terminate, a pod its PDB protects, pods of a ReplicaSet), the leader is killed with SIGKILL
// at one of three moments (right after the NodeMaintenances are created, mid-drain with pods
// terminating, or while the PDB blocks a drain), or paused with SIGSTOP mid-drain, the PDB is
// then deleted, and the other replica must take over. A paused leader is resumed (SIGCONT) once
// its successor has made progress: it wakes up believing it still leads, with its watches'
// backlog to act on, and must step down and exit without acting. A fresh replica replaces the
// killed or paused one for the next round.
//
// Measured from the kill (wall clock, against the timestamps the cluster and the operator
// record): the new holder in the leader Lease (its acquireTime), the new leader starting its
// controller (its log), and its first progress: the eviction of the pod the PDB protected,
// which only the new leader can have done because the PDB is deleted after the kill.
//
// Invariants (each broken one counts as a violation and fails the test):
//   - the takeover comes within the lease duration plus two retry periods (a follower can only
//     take over once it has seen the lease unrenewed for the lease duration);
//   - at most one running replica has ever become the leader;
//   - no double action: per NodeMaintenance at most one BeginMaintenance, LeaseAcquired,
//     NodeCordoned, BeginEviction, SucceedMaintenance, RemovedMaintenance and LeaseReleased
//     Event, no MaintenanceReapplied (the new leader must not take its predecessor's cordon for
//     tampering) and no FailedMaintenance; at most one UncordonNode per node;
//   - every pod evicted at most once: across the logs of all replicas (the killed ones too), no
//     pod has two "pod evicted" lines;
//   - a resumed leader exits within the lease duration and evicts no pod that was still
//     running when it resumed;
//   - every maintenance reaches Succeeded with evictionPods == totalPods == the pods it had to
//     evict, and once deleted leaves its node restored (the fixture checks no Lease is left).
// Events the killed leader had queued but not yet written may be missing; they are counted
// ("events lost to the kill"), not treated as violations (docs/design.md §5 promises no double
// action, not delivery across a crash).
//
// The short form (make test) runs 2 rounds (a kill and a pause), `make chaos` 8.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test/chaos/support/chaos.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using WallClock = std::chrono::system_clock;

// src/runtime/leader_election.h: lease duration 15 s, retry period 2 s.
constexpr std::chrono::seconds kLeaseDuration{15};
constexpr std::chrono::seconds kRetryPeriod{2};
constexpr const char* kBecameLeader = "became the leader; starting the controller";
constexpr std::size_t kNodesPerRound = 3;
constexpr int kSlowGraceSeconds = 3;

// Events a maintenance emits once; a second one is a double action.
constexpr const char* kOnceReasons[] = {
    "BeginMaintenance",   "LeaseAcquired",      "NodeCordoned", "BeginEviction",
    "SucceedMaintenance", "RemovedMaintenance", "LeaseReleased"};
// Events every maintenance of a round emits before it is gone (the kill may lose one).
constexpr const char* kExpectedReasons[] = {"BeginMaintenance", "NodeCordoned", "BeginEviction",
                                            "SucceedMaintenance", "RemovedMaintenance"};

// When and how the leader goes: killed (SIGKILL) at one of three moments, or paused (SIGSTOP)
// mid-drain. The short form's two rounds take the first two.
enum class KillMoment { kJustCreated, kPausedDraining, kDraining, kPdbBlocked };
constexpr int kMoments = 4;

const char* to_string(KillMoment moment) {
  switch (moment) {
    case KillMoment::kJustCreated:
      return "just created";
    case KillMoment::kPausedDraining:
      return "draining, paused";
    case KillMoment::kDraining:
      return "draining";
    case KillMoment::kPdbBlocked:
      return "PDB-blocked";
  }
  return "?";
}

double seconds_between(WallClock::time_point from, WallClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// When the replica logged `msg` (with field pod == `pod` when given) first; nullopt when not.
std::optional<WallClock::time_point> logged_at(const OperatorProcess& replica,
                                               const std::string& msg,
                                               const std::string& pod = {}) {
  for (const auto& record : chaos::log_records(replica)) {
    if (chaos::field(record, "msg") == msg && (pod.empty() || chaos::field(record, "pod") == pod)) {
      return chaos::instant(chaos::field(record, "ts"));
    }
  }
  return std::nullopt;
}

// A pod bound to `node`: slow ones stay terminating for their grace period.
json::value bare_pod(const std::string& ns, const std::string& name, const std::string& node,
                     bool slow_delete) {
  std::vector<std::pair<std::string, std::string>> annotations;
  if (slow_delete) annotations.emplace_back(kSlowDeleteAnnotation, "true");
  return json::parse(
      pod_manifest(ns, name, node, annotations, slow_delete ? kSlowGraceSeconds : 1));
}

// A Deployment whose pods can only run on `node` (their replacements stay Pending once it is
// cordoned, so they never come back to it).
json::value deployment_on(const std::string& ns, const std::string& name, int replicas,
                          const std::string& node) {
  json::value d = json::parse(deployment_manifest(ns, name, replicas, name));
  d.at("spec").at("template").at("spec").as_object()["nodeSelector"] =
      json::object{{"kubernetes.io/hostname", node}};
  return d;
}

// Resumes a paused process (SIGCONT) when it goes out of scope, unless resumed before, so a
// failed assertion never leaves a stopped operator behind.
class Paused {
 public:
  explicit Paused(pid_t pid) : pid_(pid) { ::kill(pid_, SIGSTOP); }
  Paused(const Paused&) = delete;
  Paused& operator=(const Paused&) = delete;
  ~Paused() { resume(); }

  void resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

class LeaderFailoverTest : public OperatorFixture {
 protected:
  OperatorProcess& start_replica() {
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(),
                 {"--leader-elect", "--max-parallel-maintenances", "10", "--log-format", "json"});
    OperatorProcess& replica = start_operator(flags);
    replicas_.push_back(&replica);
    return replica;
  }

  // The running replicas that have become the leader (a replica that loses leadership exits).
  std::vector<OperatorProcess*> leaders() {
    std::vector<OperatorProcess*> out;
    for (OperatorProcess* r : replicas_) {
      if (r->running() && logged_at(*r, kBecameLeader)) out.push_back(r);
    }
    return out;
  }

  std::string leader_holder() {
    auto l = lease(kOperatorNamespace, kLeaderLease);
    return l ? string_at(*l, "/spec/holderIdentity") : "";
  }

  void violation(const std::string& what) {
    ++violations_;
    ADD_FAILURE() << "invariant broken: " << what;
  }

  // "namespace/name" of every pod of `ns` bound to one of `nodes` (only those not terminating
  // with `running_only`).
  std::set<std::string> pods_on(const std::string& ns, const std::vector<std::string>& nodes,
                                bool running_only = false) {
    std::set<std::string> out;
    for (const auto& pod : list_pods(kubectl_, ns, "")) {
      const json::value v = pod;
      const std::string node = string_at(v, "/spec/nodeName");
      if (std::find(nodes.begin(), nodes.end(), node) != nodes.end() &&
          !(running_only && is_terminating(v))) {
        out.insert(ns + "/" + name_of(v));
      }
    }
    return out;
  }

  std::vector<OperatorProcess*> replicas_;
  int violations_ = 0;
};

TEST_F(LeaderFailoverTest, KilledLeaderIsReplacedWithoutDoubleActions) {
  const int rounds = chaos::iterations(2, 8);
  TestNamespace ns(kubectl_, "failover");
  start_replica();
  start_replica();

  int faults = 0;
  int pauses = 0;
  int lost_events = 0;
  std::vector<double> takeovers;
  std::vector<double> controller_starts;
  std::vector<double> first_progress;
  std::vector<double> completions;
  std::set<std::string> evictions_expected;  // "ns/name" of every pod to be evicted

  for (int round = 0; round < rounds && !HasFatalFailure(); ++round) {
    const auto moment = static_cast<KillMoment>(round % kMoments);
    const bool pause = moment == KillMoment::kPausedDraining;
    SCOPED_TRACE(fmt::format("round {} (kill when {})", round, to_string(moment)));
    const std::vector<std::string> nodes = fresh_nodes("lf", kNodesPerRound);

    // Workloads: per node a plain pod and two slow to terminate; on node 0 a pod its PDB
    // protects; on node 1 two ReplicaSet pods.
    const std::string guarded = fmt::format("guarded-{}", round);
    const std::string pdb = fmt::format("pdb-{}", round);
    const std::string deployment = fmt::format("rs-{}", round);
    json::array items;
    for (std::size_t n = 0; n < kNodesPerRound; ++n) {
      for (int p = 0; p < 3; ++p) {
        items.push_back(
            bare_pod(ns.name(), fmt::format("p{}-{}-{}", round, n, p), nodes[n], p > 0));
      }
    }
    items.push_back(bare_pod(ns.name(), guarded, nodes[0], false));
    items.push_back(json::parse(pdb_manifest(ns.name(), pdb, 1, guarded)));
    items.push_back(deployment_on(ns.name(), deployment, 2, nodes[1]));
    kubectl_.apply(json::serialize(
        json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}}));
    constexpr std::size_t kPods = kNodesPerRound * 3 + 1 + 2;
    std::set<std::string> to_evict;
    ASSERT_TRUE(wait_until("the round's pods running", 90s, [&] {
      to_evict = pods_on(ns.name(), nodes);
      if (to_evict.size() != kPods) return false;
      for (const auto& pod : list_pods(kubectl_, ns.name(), "")) {
        const json::value v = pod;
        const std::string node = string_at(v, "/spec/nodeName");
        if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) continue;
        if (!pod_running_ready(pod)) return false;
      }
      return true;
    }));
    ASSERT_TRUE(wait_pdb(ns.name(), pdb, 1, 0));
    evictions_expected.insert(to_evict.begin(), to_evict.end());

    ASSERT_TRUE(wait_until("a leader among the replicas", 60s, [&] { return !leaders().empty(); }));

    std::vector<std::string> crs;
    std::vector<std::string> uids;
    for (std::size_t n = 0; n < kNodesPerRound; ++n) {
      crs.push_back(fmt::format("failover-{}-{}", round, n));
      uids.push_back(create(crs.back(), nodes[n], "leader failover"));
      ASSERT_FALSE(uids.back().empty());
    }

    // The kill moment.
    if (moment == KillMoment::kDraining || pause) {
      ASSERT_TRUE(wait_until("every maintenance Running with pods terminating", kReact, [&] {
        for (const auto& cr : crs) {
          auto nm = get_node_maintenance(cr);
          if (!nm || phase_of(*nm) != "Running") return false;
        }
        auto pods = list_pods(kubectl_, ns.name(), "");
        return std::any_of(pods.begin(), pods.end(),
                           [](const auto& p) { return is_terminating(json::value(p)); });
      }));
    } else if (moment == KillMoment::kPdbBlocked) {
      ASSERT_TRUE(wait_event(uids[0], "DrainError", std::nullopt, kReact));
    }
    const std::vector<OperatorProcess*> before = leaders();
    ASSERT_EQ(before.size(), 1u) << "not exactly one leader before the kill";
    OperatorProcess& old_leader = *before.front();
    const std::string old_holder = leader_holder();
    ASSERT_FALSE(old_holder.empty());
    const WallClock::time_point kill_time = WallClock::now();
    std::optional<Paused> paused;
    if (pause) {
      paused.emplace(old_leader.pid());
      ++pauses;
    } else {
      old_leader.kill();
    }
    ++faults;
    kubectl_.must({"delete", "pdb", pdb, "-n", ns.name()});

    // The other replica takes over.
    OperatorProcess* survivor = nullptr;
    for (OperatorProcess* r : replicas_) {
      if (r != &old_leader && r->running()) survivor = r;
    }
    ASSERT_NE(survivor, nullptr);
    std::optional<json::value> leader_lease;
    EXPECT_TRUE(wait_until(
        "a new holder of the leader Lease", kLeaseDuration + 4 * kRetryPeriod + 10s,
        [&] {
          leader_lease = lease(kOperatorNamespace, kLeaderLease);
          if (!leader_lease) return false;
          const std::string holder = string_at(*leader_lease, "/spec/holderIdentity");
          return !holder.empty() && holder != old_holder;
        },
        [&] { return leader_lease ? json::serialize(*leader_lease) : std::string("no Lease"); }));
    if (leader_lease) {
      if (auto acquired = chaos::instant(string_at(*leader_lease, "/spec/acquireTime"))) {
        const double takeover = seconds_between(kill_time, *acquired);
        takeovers.push_back(takeover);
        if (takeover > std::chrono::duration<double>(kLeaseDuration + 2 * kRetryPeriod).count()) {
          violation(
              fmt::format("takeover took {:.2f} s, more than the lease duration plus two "
                          "retry periods",
                          takeover));
        }
      }
    }
    EXPECT_TRUE(survivor->wait_for_log(kBecameLeader, 30s));
    if (auto started = logged_at(*survivor, kBecameLeader)) {
      controller_starts.push_back(seconds_between(kill_time, *started));
    }
    const std::string guarded_pod = ns.name() + "/" + guarded;
    std::optional<WallClock::time_point> progress;
    EXPECT_TRUE(wait_until("the new leader evicting the pod the PDB protected", kDrain, [&] {
      progress = logged_at(*survivor, "pod evicted", guarded_pod);
      return progress.has_value();
    }));
    if (progress) first_progress.push_back(seconds_between(kill_time, *progress));
    if (paused) {
      // The old leader wakes up with its renew deadline long past: it must step down and exit
      // before acting on what its watches delivered meanwhile. An eviction it had sent before
      // the pause may only be answered (and logged) after it: such a pod is terminating or gone
      // by now. A pod still running here and logged evicted by it later was evicted after it
      // resumed.
      const std::set<std::string> running_at_resume =
          pods_on(ns.name(), nodes, /*running_only=*/true);
      const WallClock::time_point resumed = WallClock::now();
      paused->resume();
      if (!wait_until("the resumed leader exiting", kLeaseDuration,
                      [&] { return !old_leader.running(); })) {
        violation("the resumed leader did not exit");
        old_leader.kill();
      }
      for (const auto& record : chaos::log_records(old_leader)) {
        const auto at = chaos::instant(chaos::field(record, "ts"));
        if (chaos::field(record, "msg") == "pod evicted" && at && *at >= resumed &&
            running_at_resume.contains(chaos::field(record, "pod"))) {
          violation("the resumed leader evicted " + chaos::field(record, "pod"));
        }
      }
    }
    start_replica();  // two replicas again for the next round

    for (std::size_t i = 0; i < crs.size(); ++i) {
      auto nm = wait_phase(crs[i], {"Succeeded"}, kDrain);
      if (!nm) {
        violation(crs[i] + " did not reach Succeeded");
        continue;
      }
      const auto total = maintenance_of(*nm).status.total_pods;
      const auto evicted = maintenance_of(*nm).status.eviction_pods;
      // Three pods per node, plus the guarded pod on node 0 and the ReplicaSet's two on node 1.
      const std::int64_t expected = 3 + (i == 0 ? 1 : 0) + (i == 1 ? 2 : 0);
      if (total != expected || evicted != expected) {
        violation(fmt::format("{}: totalPods {} evictionPods {}, expected {} each", crs[i], total,
                              evicted, expected));
      }
    }
    completions.push_back(seconds_between(kill_time, WallClock::now()));
    if (!pods_on(ns.name(), nodes).empty()) violation("pods left on the maintained nodes");

    for (const auto& cr : crs) remove(cr);
    for (std::size_t i = 0; i < crs.size(); ++i) {
      EXPECT_TRUE(wait_gone(crs[i], kReact));
      EXPECT_TRUE(wait_node_restored(nodes[i], /*stays_cordoned=*/false, kReact));
    }
    kubectl_.must({"delete", "deployment", deployment, "-n", ns.name(), "--wait=false"});

    // No double action. The Events of RemovedMaintenance come with the finalizer's removal;
    // wait until each gone maintenance has them (or give up quietly: they may be lost).
    for (std::size_t i = 0; i < crs.size(); ++i) {
      std::map<std::string, std::int64_t> counts;
      for (const auto& e : events_of(uids[i])) counts[e.reason] += e.count;
      for (const char* reason : kOnceReasons) {
        if (counts[reason] > 1) {
          violation(
              fmt::format("{}: {} Events {} (double action)", crs[i], counts[reason], reason));
        }
      }
      for (const char* reason : {"MaintenanceReapplied", "FailedMaintenance"}) {
        if (counts[reason] > 0) violation(fmt::format("{}: Event {}", crs[i], reason));
      }
      for (const char* reason : kExpectedReasons) {
        if (counts[reason] == 0) ++lost_events;
      }
      std::int64_t uncordons = 0;
      for (const auto& e :
           events_matching(kubectl_, "involvedObject.kind=Node,involvedObject.name=" + nodes[i] +
                                         ",reason=UncordonNode")) {
        uncordons += e.count;
      }
      if (uncordons > 1)
        violation(fmt::format("node {}: {} UncordonNode Events", nodes[i], uncordons));
    }
    if (leaders().size() > 1) violation("two running replicas have become the leader");
  }

  // Every pod evicted at most once, across all replicas' logs (the killed ones too).
  std::map<std::string, int> evictions;
  for (OperatorProcess* r : replicas_) {
    for (const auto& record : chaos::log_records(*r)) {
      if (chaos::field(record, "msg") == "pod evicted") ++evictions[chaos::field(record, "pod")];
    }
  }
  int evicted_pods = 0;
  for (const auto& [pod, count] : evictions) {
    if (!evictions_expected.contains(pod)) continue;  // not one of this test's pods
    ++evicted_pods;
    if (count > 1) violation(fmt::format("pod {} evicted {} times", pod, count));
  }

  chaos::report("leader failover",
                {{"rounds", std::to_string(rounds)},
                 {"faults", std::to_string(faults)},
                 {"of_which_pauses", std::to_string(pauses)},
                 {"violations", std::to_string(violations_)},
                 {"pods_evicted", fmt::format("{}/{}", evicted_pods, evictions_expected.size())},
                 {"events_lost_to_kill", std::to_string(lost_events)},
                 {"takeover_median_s", chaos::seconds(chaos::median(takeovers))},
                 {"takeover_max_s", chaos::seconds(chaos::largest(takeovers))},
                 {"controller_started_median_s", chaos::seconds(chaos::median(controller_starts))},
                 {"first_progress_median_s", chaos::seconds(chaos::median(first_progress))},
                 {"first_progress_max_s", chaos::seconds(chaos::largest(first_progress))},
                 {"all_succeeded_median_s", chaos::seconds(chaos::median(completions))}});
  EXPECT_EQ(violations_, 0);
}

}  // namespace
}  // namespace nmo::e2e
