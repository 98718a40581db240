// Experiment 5 of docs/reliability.md, "etcd restart and node flapping" during control-plane
// maintenances (docs/design.md §2.2's etcd-quorum gate, §2.7). Both tests make their own etcd
// members: three fresh kwok nodes with the control-plane role, each with an etcd mirror pod in
// kube-system (kubeadm's stacked etcd, as the gate reads it), deleted at the end. The operator runs
// with the e2e stability window (--etcd-quorum-stable-for 3).
//
// EtcdRestartDuringMaintenances: maintenances of two workers and one control-plane node drain
// pods slow to terminate when etcd is restarted (SIGTERM, or SIGKILL every other round) with
// hack/cluster-restart.sh etcd, which returns once etcd and the API server are healthy again.
// Every maintenance must still reach Succeeded with evictionPods == totalPods, no Event of a
// maintenance may repeat, no pod may be evicted twice, and deleting them restores the nodes.
// Measured: how long etcd was away (the restart) and how long from its return until every
// maintenance had Succeeded.
//
// FlappingNodesNeverAdmitAnUnsafeMaintenance: with the default budget of one, a control-plane
// node (`down`) goes NotReady (the not-ready label, e2e::make_not_ready) and a maintenance of
// another control-plane node (`target`) is created: taking it would leave one healthy member
// of three, so it must stay Pending (BlockedByEtcdQuorum). `down` then flaps: Ready blips
// shorter than the stability window (its Ready condition set to True then False again while the
// label keeps kwok away), after which it comes back for good (label removed); every other round
// the third member also blips NotReady right after that, which must restart the window. The
// test keeps, per member other than `target`, the intervals in which it was certainly NotReady
// (from the end of the command that made it so to the start of the one that made it Ready) and
// reads the admission instant from the node lease's acquireTime (written when the maintenance
// takes the node). An admission is unsafe when it falls inside such an interval (after half a
// second's allowance for the watch to deliver it) or less than the stability window after one
// ended. Counted: flaps, short blips, admissions, unsafe admissions (must be 0) and how long
// after the last flap the admission came.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test/chaos/support/chaos.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/scenarios.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using WallClock = std::chrono::system_clock;

// kOperatorFlags' --etcd-quorum-stable-for.
constexpr std::chrono::seconds kStableFor{3};
// How late the operator may see a node go NotReady (its watch) and still be excused for
// admitting meanwhile.
constexpr std::chrono::milliseconds kWatchAllowance{500};
// The lease's acquireTime and the test's clock are the same machine's; MicroTime is exact.
constexpr std::chrono::milliseconds kClockAllowance{50};
// Long enough for the drains to still be running when etcd goes away (the control-plane
// maintenance is admitted only after the stability window).
constexpr int kSlowGraceSeconds = 10;
constexpr const char* kControlPlaneRole = "node-role.kubernetes.io/control-plane";

double seconds(WallClock::duration span) { return std::chrono::duration<double>(span).count(); }

void set_ready_condition(const Kubectl& kubectl, const std::string& node, bool ready) {
  kubectl.must({"patch", "node", node, "--subresource=status", "-p",
                fmt::format(R"({{"status":{{"conditions":[{{"type":"Ready","status":"{}",)"
                            R"("reason":"TestFlap","message":"set by a test"}}]}}}})",
                            ready ? "True" : "False")});
}

// A member other than the maintained node was certainly NotReady in [from, to).
struct NotReadyInterval {
  std::string node;
  WallClock::time_point from;
  WallClock::time_point to = WallClock::time_point::max();
};

class EtcdChaosTest : public OperatorFixture {
 protected:
  OperatorProcess& start(const std::vector<std::string>& extra) {
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(), {"--log-format", "json"});
    flags.insert(flags.end(), extra.begin(), extra.end());
    operator_ = &start_operator(flags);
    return *operator_;
  }

  // `count` fresh control-plane nodes, each with an etcd mirror pod; the pods and nodes are
  // deleted at the end. Fails the test when the cluster has other etcd members (the gate would
  // count them).
  std::vector<std::string> etcd_members(std::size_t count) {
    EXPECT_TRUE(list_pods(kubectl_, "kube-system", "component=etcd").empty())
        << "the cluster already has etcd member pods; the quorum arithmetic would include them";
    std::vector<std::string> nodes;
    json::array items;
    for (std::size_t i = 0; i < count; ++i) {
      nodes.push_back(unique_name("edge-etcd"));
      items.push_back(json::parse(node_manifest(nodes.back(), {{kControlPlaneRole, ""}})));
    }
    defer([this, nodes] {
      std::vector<std::string> delete_nodes{"delete", "node", "--ignore-not-found",
                                            "--timeout=60s"};
      delete_nodes.insert(delete_nodes.end(), nodes.begin(), nodes.end());
      (void)kubectl_.run(delete_nodes);
    });
    kubectl_.apply(json::serialize(
        json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}}));
    for (const auto& n : nodes) EXPECT_TRUE(wait_node_ready(n));
    // Deferred after the nodes, so its pods go first (cleanups run in reverse order).
    auto etcd = std::make_shared<KubeadmEtcd>(kubectl_, nodes, KubeadmEtcd::Deletion::kWait);
    defer([etcd]() mutable { etcd.reset(); });
    EXPECT_TRUE(etcd->ready());
    return nodes;
  }

  // Pods to drain on `node`: one plain, two slow to terminate.
  void add_pods(const std::string& ns, const std::string& node, const std::string& prefix) {
    json::array items;
    for (int p = 0; p < 3; ++p) {
      std::vector<std::pair<std::string, std::string>> annotations;
      if (p > 0) annotations.emplace_back(kSlowDeleteAnnotation, "true");
      items.push_back(json::parse(pod_manifest(ns, fmt::format("{}-{}", prefix, p), node,
                                               annotations, p > 0 ? kSlowGraceSeconds : 1)));
    }
    kubectl_.apply(json::serialize(
        json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}}));
  }

  void violation(const std::string& what) {
    ++violations_;
    ADD_FAILURE() << "invariant broken: " << what;
  }

  // Double actions in the Events of a maintenance that has Succeeded and is gone.
  void check_events_once(const std::string& cr, const std::string& uid) {
    std::map<std::string, std::int64_t> counts;
    for (const auto& e : events_of(uid)) counts[e.reason] += e.count;
    for (const char* reason : {"BeginMaintenance", "LeaseAcquired", "NodeCordoned", "BeginEviction",
                               "SucceedMaintenance", "RemovedMaintenance"}) {
      if (counts[reason] > 1)
        violation(fmt::format("{}: {} Events {}", cr, counts[reason], reason));
    }
    for (const char* reason : {"MaintenanceReapplied", "FailedMaintenance"}) {
      if (counts[reason] > 0) violation(fmt::format("{}: Event {}", cr, reason));
    }
  }

  // When the maintenance of `node` took its node lease (acquireTime), or nullopt.
  std::optional<WallClock::time_point> admitted_at(const std::string& node) {
    auto l = lease(kLeaseNamespace, "node-" + node);
    if (!l || string_at(*l, "/spec/holderIdentity") != kNodeLeaseHolder) return std::nullopt;
    return chaos::instant(string_at(*l, "/spec/acquireTime"));
  }

  OperatorProcess* operator_ = nullptr;
  int violations_ = 0;
};

TEST_F(EtcdChaosTest, EtcdRestartDuringMaintenances) {
  const int rounds = chaos::iterations(1, 4);
  TestNamespace ns(kubectl_, "etcd-restart");
  const std::vector<std::string> members = etcd_members(3);
  ASSERT_FALSE(HasFailure());
  start({"--max-parallel-maintenances", "3"});

  int faults = 0;
  std::vector<double> outages;
  std::vector<double> recoveries;
  std::set<std::string> drained_pods;
  for (int round = 0; round < rounds && !HasFatalFailure(); ++round) {
    const bool crash = round % 2 == 1;
    SCOPED_TRACE(fmt::format("round {} ({})", round, crash ? "SIGKILL" : "SIGTERM"));
    std::vector<std::string> nodes = fresh_nodes("er", 2);
    nodes.push_back(members[static_cast<std::size_t>(round) % members.size()]);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::string prefix = fmt::format("p{}-{}", round, i);
      add_pods(ns.name(), nodes[i], prefix);
      for (int p = 0; p < 3; ++p)
        drained_pods.insert(ns.name() + "/" + prefix + "-" + std::to_string(p));
    }
    ASSERT_TRUE(wait_running(ns.name(), "", nodes.size() * 3));

    std::vector<std::string> crs;
    std::vector<std::string> uids;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      crs.push_back(fmt::format("etcd-restart-{}-{}", round, i));
      uids.push_back(create(crs.back(), nodes[i], "etcd restart"));
      ASSERT_FALSE(uids.back().empty());
    }
    ASSERT_TRUE(wait_until("every maintenance Running with pods terminating", kReact, [&] {
      for (const auto& cr : crs) {
        auto nm = get_node_maintenance(cr);
        if (!nm || phase_of(*nm) != "Running") return false;
      }
      auto pods = list_pods(kubectl_, ns.name(), "");
      return std::any_of(pods.begin(), pods.end(),
                         [](const auto& p) { return is_terminating(json::value(p)); });
    }));

    const auto restart_started = std::chrono::steady_clock::now();
    std::vector<std::string> args;
    if (crash) args.emplace_back("--kill");
    args.emplace_back("etcd");
    ASSERT_TRUE(chaos::cluster_restart(args));
    ++faults;
    const auto back = std::chrono::steady_clock::now();
    outages.push_back(std::chrono::duration<double>(back - restart_started).count());

    for (std::size_t i = 0; i < crs.size(); ++i) {
      auto nm = wait_phase(crs[i], {"Succeeded"}, kDrain);
      if (!nm) {
        violation(crs[i] + " did not reach Succeeded after the etcd restart");
        continue;
      }
      const op::NodeMaintenanceStatus status = maintenance_of(*nm).status;
      if (status.total_pods != 3 || status.eviction_pods != 3) {
        violation(fmt::format("{}: totalPods {} evictionPods {}, expected 3 each", crs[i],
                              status.total_pods, status.eviction_pods));
      }
    }
    recoveries.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - back).count());

    for (const auto& cr : crs) remove(cr);
    for (std::size_t i = 0; i < crs.size(); ++i) {
      EXPECT_TRUE(wait_gone(crs[i], kReact));
      EXPECT_TRUE(wait_node_restored(nodes[i], /*stays_cordoned=*/false, kReact));
      check_events_once(crs[i], uids[i]);
    }
  }

  // No pod evicted twice (the operator's log has one "pod evicted" line per accepted eviction).
  std::map<std::string, int> evictions;
  std::istringstream log(operator_->log());
  for (std::string line; std::getline(log, line);) {
    boost::system::error_code ec;
    const json::value record = json::parse(line, ec);
    if (ec || string_at(record, "/msg") != "pod evicted") continue;
    ++evictions[string_at(record, "/pod")];
  }
  for (const auto& [pod, count] : evictions) {
    if (drained_pods.contains(pod) && count > 1) {
      violation(fmt::format("pod {} evicted {} times", pod, count));
    }
  }

  chaos::report("etcd restart",
                {{"rounds", std::to_string(rounds)},
                 {"faults", std::to_string(faults)},
                 {"violations", std::to_string(violations_)},
                 {"etcd_outage_median_s", chaos::seconds(chaos::median(outages))},
                 {"etcd_outage_max_s", chaos::seconds(chaos::largest(outages))},
                 {"all_succeeded_after_etcd_median_s", chaos::seconds(chaos::median(recoveries))},
                 {"all_succeeded_after_etcd_max_s", chaos::seconds(chaos::largest(recoveries))}});
  EXPECT_EQ(violations_, 0);
}

TEST_F(EtcdChaosTest, FlappingNodesNeverAdmitAnUnsafeMaintenance) {
  const int rounds = chaos::iterations(2, 10);
  constexpr int kBlipsPerRound = 3;
  const std::vector<std::string> members = etcd_members(3);
  ASSERT_FALSE(HasFailure());
  start({});  // the default budget: one node at a time

  int flaps = 0;
  int short_blips = 0;
  int admissions = 0;
  int unsafe = 0;
  std::vector<double> admission_delays;
  for (int round = 0; round < rounds && !HasFatalFailure(); ++round) {
    const auto r = static_cast<std::size_t>(round);
    const std::string down = members[r % 3];
    const std::string target = members[(r + 1) % 3];
    const std::string other = members[(r + 2) % 3];
    const bool other_blips = round % 2 == 1;
    SCOPED_TRACE(fmt::format("round {}: {} flaps, maintenance of {}", round, down, target));
    std::vector<NotReadyInterval> not_ready;

    make_not_ready(kubectl_, down);
    not_ready.push_back({.node = down, .from = WallClock::now()});
    const std::string cr = fmt::format("flapping-{}", round);
    const std::string uid = create(cr, target, "etcd flapping");
    ASSERT_FALSE(uid.empty());
    ASSERT_TRUE(wait_event(uid, "BlockedByEtcdQuorum",
                           "etcd quorum is not maintained when node " + target + " is remediated",
                           kReact));

    // Ready blips shorter than the stability window: the label stays, so kwok leaves the
    // condition to the test.
    for (int blip = 0; blip < kBlipsPerRound; ++blip) {
      not_ready.back().to = WallClock::now();
      set_ready_condition(kubectl_, down, true);
      set_ready_condition(kubectl_, down, false);
      const auto again = WallClock::now();
      not_ready.push_back({.node = down, .from = again});
      ++flaps;
      if (again - not_ready[not_ready.size() - 2].to < kStableFor) ++short_blips;
    }
    // Nothing may be admitted meanwhile; look for longer than the window after the last blip.
    const auto watch_until = std::chrono::steady_clock::now() + kStableFor + 2s;
    while (std::chrono::steady_clock::now() < watch_until) {
      auto nm = get_node_maintenance(cr);
      if (nm && phase_of(*nm) != "Pending") break;  // judged below by the admission instant
      // Polling interval of an observation window, not a synchronisation sleep.
      std::this_thread::sleep_for(200ms);
    }

    // `down` comes back for good; every other round the third member blips NotReady at once.
    not_ready.back().to = WallClock::now();
    kubectl_.must({"label", "node", down, std::string(kNotReadyLabel) + "-"});
    WallClock::time_point last_recovery = not_ready.back().to;
    if (other_blips) {
      make_not_ready(kubectl_, other);
      not_ready.push_back({.node = other, .from = WallClock::now()});
      not_ready.back().to = WallClock::now();
      set_ready_condition(kubectl_, other, true);
      kubectl_.must({"label", "node", other, std::string(kNotReadyLabel) + "-"});
      last_recovery = not_ready.back().to;
      ++flaps;
      ++short_blips;
    }

    auto nm = wait_phase(cr, {"Running", "Succeeded"}, 60s);
    ASSERT_TRUE(nm);
    const auto admitted = admitted_at(target);
    ASSERT_TRUE(admitted) << "no node lease of " << target << " after the admission";
    ++admissions;
    admission_delays.push_back(seconds(*admitted - last_recovery));
    for (const auto& interval : not_ready) {
      const bool while_down =
          *admitted >= interval.from + kWatchAllowance && *admitted < interval.to;
      const bool too_soon =
          *admitted >= interval.to && *admitted < interval.to + kStableFor - kClockAllowance;
      if (while_down || too_soon) {
        ++unsafe;
        violation(fmt::format("{} admitted {:.2f} s after {} {}", cr,
                              seconds(*admitted - (while_down ? interval.from : interval.to)),
                              interval.node, while_down ? "went NotReady" : "came back"));
      }
    }

    ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
    remove(cr);
    EXPECT_TRUE(wait_gone(cr, kReact));
    EXPECT_TRUE(wait_node_restored(target, /*stays_cordoned=*/false, kReact));
    check_events_once(cr, uid);
    for (const auto& n : {down, other}) EXPECT_TRUE(wait_node_ready(n));
  }

  chaos::report(
      "node flapping",
      {{"rounds", std::to_string(rounds)},
       {"faults", std::to_string(flaps)},
       {"short_blips", std::to_string(short_blips)},
       {"admissions", std::to_string(admissions)},
       {"unsafe_admissions", std::to_string(unsafe)},
       {"violations", std::to_string(violations_)},
       {"admission_after_last_flap_median_s", chaos::seconds(chaos::median(admission_delays))},
       {"admission_after_last_flap_max_s", chaos::seconds(chaos::largest(admission_delays))}});
  EXPECT_EQ(unsafe, 0);
  EXPECT_EQ(violations_, 0);
}

// With a budget of three, maintenances of all three control-plane nodes at once: taking one
// leaves two healthy members (a quorum of three), taking a second would leave one. A node
// under maintenance is on its way down (drained, then rebooted), so at most one of them may be
// admitted while the others wait; deleting the admitted one lets the next in.
TEST_F(EtcdChaosTest, ParallelControlPlaneMaintenancesKeepQuorum) {
  const std::vector<std::string> members = etcd_members(3);
  ASSERT_FALSE(HasFailure());
  start({"--max-parallel-maintenances", "3"});
  std::vector<std::string> crs;
  for (std::size_t i = 0; i < members.size(); ++i) {
    crs.push_back(fmt::format("parallel-cp-{}", i));
    ASSERT_FALSE(create(crs.back(), members[i], "parallel control-plane maintenances").empty());
  }
  const auto admitted = [&] {
    std::vector<std::string> out;
    for (const auto& cr : crs) {
      auto nm = get_node_maintenance(cr);
      if (nm && phase_of(*nm) != "Pending" && !phase_of(*nm).empty()) out.push_back(cr);
    }
    return out;
  };
  std::vector<std::string> running;
  ASSERT_TRUE(wait_until("one control-plane maintenance admitted", 60s, [&] {
    running = admitted();
    return !running.empty();
  }));
  // Watch past the stability window for a second admission.
  const auto watch_until = std::chrono::steady_clock::now() + kStableFor + 3s;
  std::size_t most = running.size();
  while (std::chrono::steady_clock::now() < watch_until) {
    most = std::max(most, admitted().size());
    // Polling interval of an observation window, not a synchronisation sleep.
    std::this_thread::sleep_for(200ms);
  }
  const int unsafe = most > 1 ? static_cast<int>(most) - 1 : 0;
  EXPECT_EQ(most, 1u) << "control-plane maintenances admitted together: " << most;

  // The first one done and deleted, the next is admitted.
  remove(running.front());
  EXPECT_TRUE(wait_gone(running.front(), kReact));
  EXPECT_TRUE(wait_until("the next control-plane maintenance admitted", 60s, [&] {
    const auto now_admitted = admitted();
    return std::any_of(now_admitted.begin(), now_admitted.end(),
                       [&](const std::string& cr) { return cr != running.front(); });
  }));
  chaos::report("parallel control-plane maintenances",
                {{"rounds", "1"},
                 {"maintenances", std::to_string(crs.size())},
                 {"admitted_together", std::to_string(most)},
                 {"unsafe_admissions", std::to_string(unsafe)}});
}

}  // namespace
}  // namespace nmo::e2e
