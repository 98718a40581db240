// Experiment 1 of docs/reliability.md, "kill anywhere" (docs/design.md §2.7: the same end state
// whatever fails): in each round, four maintenances start together (plain pods, pods slow to
// terminate, a pod its PDB protects, a node an admin had cordoned), the operator is killed with
// SIGKILL at a random instant and restarted after a random pause, and some maintenances are deleted
// at random moments, before or after the kill. Each round then checks the invariants:
//   - every maintenance left reaches the phase it would have reached without the kill
//     (Succeeded, or Running and blocked by the PDB);
//   - once the maintenances are deleted, they are gone (no finalizer left behind), every node is
//     schedulable with no maintenance taint, label or annotation, except the admin's, which
//     stays cordoned, and no node lease or budget slot is held;
//   - no pod was evicted that did not need to be: the PDB-protected pod and the pods of a node
//     nobody maintained keep their uids.
// The short form (make test) runs 3 rounds, `make chaos` 100. The random seed is printed
// (NMO_CHAOS_SEED replays one).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
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
using Clock = std::chrono::steady_clock;

// What each maintained node carries, and the phase its maintenance must reach.
enum class Role { kPlain, kSlowDelete, kGuarded, kAdminCordoned };
constexpr Role kRoles[] = {Role::kPlain, Role::kSlowDelete, Role::kGuarded, Role::kAdminCordoned};
constexpr int kSlowGraceSeconds = 3;

std::uint32_t chaos_seed() {
  if (const char* seed = std::getenv("NMO_CHAOS_SEED"); seed != nullptr) {
    return static_cast<std::uint32_t>(std::strtoul(seed, nullptr, 10));
  }
  return std::random_device{}();
}

class KillAnywhereTest : public OperatorFixture {
 protected:
  // Counts a broken invariant (and fails the test with `what`).
  void violation(const std::string& what) {
    ++violations_;
    ADD_FAILURE() << "invariant broken: " << what;
  }

  // The uid of pod `name`, "" when it does not exist.
  std::string pod_uid(const std::string& ns, const std::string& name) {
    auto pod = kubectl_.get_json({"pod", name, "-n", ns});
    return pod ? uid_of(*pod) : "";
  }

  int violations_ = 0;
};

TEST_F(KillAnywhereTest, EveryRoundEndsInTheStateItWouldHaveReachedWithoutTheKill) {
  const int rounds = chaos::iterations(3, 100);
  const std::uint32_t seed = chaos_seed();
  std::mt19937 random(seed);
  std::printf("kill anywhere: %d rounds, seed %u (NMO_CHAOS_SEED=%u replays it)\n", rounds, seed,
              seed);
  const auto uniform_ms = [&random](int low, int high) {
    return std::chrono::milliseconds(std::uniform_int_distribution<int>(low, high)(random));
  };

  // Four maintained nodes (one per role) and a bystander nobody maintains.
  const std::vector<std::string> nodes = fresh_nodes("kill", std::size(kRoles) + 1);
  ASSERT_EQ(nodes.size(), std::size(kRoles) + 1);
  const std::string& bystander = nodes.back();
  const std::string& admin_node = nodes[3];
  kubectl_.must({"cordon", admin_node});
  TestNamespace ns(kubectl_, "kill");

  std::vector<std::string> flags = kOperatorFlags;
  flags.insert(flags.end(), {"--max-parallel-maintenances", "4"});

  int kills = 0;
  int deleted_mid_flight = 0;
  int maintenances = 0;
  std::map<std::string, int> killed_during;  // phases seen right after each kill
  std::vector<double> settle_seconds;        // restart → every maintenance in its phase

  for (int round = 0; round < rounds && !HasFatalFailure(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + " of seed " + std::to_string(seed));
    // The pods of this round.
    json::array pods;
    std::map<std::size_t, std::vector<std::string>> pods_of;  // node index → pod names
    const auto add_pod = [&](std::size_t node, const std::string& name, bool slow) {
      pods.push_back(
          chaos::round_pod(ns.name(), name, nodes[node], round, slow ? kSlowGraceSeconds : 0));
      pods_of[node].push_back(name);
    };
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::string prefix = fmt::format("r{}-n{}", round, i);
      const bool slow = i < std::size(kRoles) && kRoles[i] == Role::kSlowDelete;
      add_pod(i, prefix + "-a", slow);
      add_pod(i, prefix + "-b", slow);
    }
    const std::string guarded = fmt::format("r{}-guarded", round);
    add_pod(2, guarded, false);
    const std::string pdb = fmt::format("r{}-guard", round);
    kubectl_.apply(json::serialize(
        json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(pods)}}));
    kubectl_.apply(pdb_manifest(ns.name(), pdb, 1, guarded));
    ASSERT_TRUE(wait_running(ns.name(), "round=" + std::to_string(round), 2 * nodes.size() + 1));
    ASSERT_TRUE(wait_pdb(ns.name(), pdb, 1, 0));
    std::map<std::string, std::string> must_survive;  // pod → uid
    must_survive[guarded] = pod_uid(ns.name(), guarded);
    for (const auto& name : pods_of[nodes.size() - 1])
      must_survive[name] = pod_uid(ns.name(), name);

    // The timeline: maintenances now, the kill and the deletions at random instants.
    auto process =
        std::make_unique<OperatorProcess>(fmt::format("KillAnywhereTest.round-{}", round), flags);
    std::vector<std::string> crs;
    for (std::size_t i = 0; i < std::size(kRoles); ++i) {
      crs.push_back(fmt::format("kill-{}-{}", round, i));
      ASSERT_FALSE(create(crs.back(), nodes[i]).empty());
      ++maintenances;
    }
    const Clock::time_point start = Clock::now();
    const Clock::duration kill_at = uniform_ms(0, 3000);
    const Clock::duration restart_after = uniform_ms(0, 1500);
    std::vector<std::pair<Clock::duration, std::size_t>> deletions;
    for (std::size_t i = 0; i < crs.size(); ++i) {
      if (std::bernoulli_distribution(0.3)(random)) deletions.emplace_back(uniform_ms(0, 6000), i);
    }
    std::sort(deletions.begin(), deletions.end());
    std::set<std::size_t> deleted;
    bool killed = false;
    Clock::time_point restarted_at{};
    const auto kill_and_restart = [&] {
      // The instant itself is the experiment: sleep_until places the fault, it synchronises
      // nothing.
      std::this_thread::sleep_until(start + kill_at);
      process->kill();
      ++kills;
      killed = true;
      for (const auto& cr : crs) {
        auto nm = get_node_maintenance(cr);
        const std::string phase = nm ? phase_of(*nm) : "gone";
        ++killed_during[phase.empty() ? "no_status" : phase];
      }
      std::this_thread::sleep_for(restart_after);
      process = std::make_unique<OperatorProcess>(
          fmt::format("KillAnywhereTest.round-{}.restarted", round), flags);
      restarted_at = Clock::now();
    };
    for (const auto& [at, index] : deletions) {
      if (!killed && at >= kill_at) kill_and_restart();
      std::this_thread::sleep_until(start + at);
      remove(crs[index]);
      deleted.insert(index);
      ++deleted_mid_flight;
    }
    if (!killed) kill_and_restart();
    ASSERT_TRUE(process->running()) << process->log_tail(40);

    // Each maintenance left reaches its phase.
    for (std::size_t i = 0; i < crs.size(); ++i) {
      if (deleted.contains(i)) {
        if (!wait_gone(crs[i], kReact)) violation(crs[i] + " deleted but still there");
        continue;
      }
      if (kRoles[i] == Role::kGuarded) {
        std::optional<json::value> nm;
        const bool blocked = wait_until(
            crs[i] + " Running and blocked by its PDB", kDrain,
            [&] {
              nm = get_node_maintenance(crs[i]);
              if (!nm || phase_of(*nm) != "Running") return false;
              const std::vector<op::PendingPodRef> refs =
                  maintenance_of(*nm).status.pending_pods_refs;
              return refs.size() == 1 && refs.front().name == guarded &&
                     refs.front().reason == op::PendingPodReason::kBlockedByPdb;
            },
            [&] { return nm ? json::serialize(*nm) : std::string("no CR"); });
        if (!blocked) violation(crs[i] + " did not reach Running, blocked by its PDB");
      } else if (!wait_phase(crs[i], {"Succeeded"}, kDrain)) {
        violation(crs[i] + " did not reach Succeeded");
      }
    }
    settle_seconds.push_back(std::chrono::duration<double>(Clock::now() - restarted_at).count());

    // The maintenances end; everything they did is undone.
    for (std::size_t i = 0; i < crs.size(); ++i) {
      if (!deleted.contains(i)) remove(crs[i]);
    }
    for (const auto& cr : crs) {
      if (!wait_gone(cr, kReact)) violation(cr + " stuck after its deletion (finalizer)");
    }
    for (std::size_t i = 0; i < std::size(kRoles); ++i) {
      if (!wait_node_restored(nodes[i], kRoles[i] == Role::kAdminCordoned, kReact)) {
        violation("node " + nodes[i] + " not restored");
      }
      if (node_lease_held(nodes[i])) violation("node lease of " + nodes[i] + " still held");
    }
    if (!slot_holders().empty()) violation("a budget slot is still held");
    auto bystander_node = get_node(bystander);
    if (!bystander_node || unschedulable(*bystander_node) || drain_tainted(*bystander_node)) {
      violation("the bystander node " + bystander + " was touched");
    }
    for (const auto& [name, uid] : must_survive) {
      if (uid.empty() || pod_uid(ns.name(), name) != uid) {
        violation("pod " + name + " was evicted but did not need to be");
      }
    }
    EXPECT_EQ(process->stop(), 0) << process->log_tail(40);

    // The round's pods and PDB go before the next round starts.
    (void)kubectl_.run({"delete", "pdb", pdb, "-n", ns.name(), "--ignore-not-found"});
    (void)kubectl_.run({"delete", "pods", "-n", ns.name(), "-l", "round=" + std::to_string(round),
                        "--grace-period=1", "--wait=true", "--timeout=60s"});
  }

  std::vector<chaos::Figure> figures{
      {"rounds", std::to_string(rounds)},
      {"seed", std::to_string(seed)},
      {"maintenances", std::to_string(maintenances)},
      {"kills", std::to_string(kills)},
      {"deleted_mid_flight", std::to_string(deleted_mid_flight)},
      {"violations", std::to_string(violations_)},
      {"settle_median_s", chaos::seconds(chaos::median(settle_seconds))},
      {"settle_max_s", chaos::seconds(chaos::largest(settle_seconds))},
  };
  for (const auto& [phase, count] : killed_during) {
    figures.push_back({"at_kill_" + phase, std::to_string(count)});
  }
  chaos::report("kill anywhere", figures);
  EXPECT_EQ(violations_, 0);
}

}  // namespace
}  // namespace nmo::e2e
