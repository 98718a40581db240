// LeaderElector against the real local API server: two candidates (each with its own Client,
// as two replicas would have) elect exactly one leader; a killed leader (no release) is replaced
// only once its lease has expired; a leader stopping cleanly hands over at once; every takeover
// counts a leaseTransition; a leader that cannot renew steps down after its renew deadline.
#include "runtime/leader_election.h"

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kube/api/lease.h"
#include "kube/client/client.h"
#include "kube/config/kubeconfig_loader.h"
#include "test/e2e/support/cluster.h"

namespace nmo::runtime {
namespace {

using e2e::ClusterTest;
using e2e::TestNamespace;
using e2e::wait_until;
using namespace std::chrono_literals;

// Small durations so takeovers happen within seconds.
constexpr std::chrono::seconds kLeaseDuration{4};
constexpr std::chrono::seconds kRenewDeadline{3};
constexpr std::chrono::seconds kRetryPeriod{1};
constexpr std::chrono::milliseconds kWait{20s};

// One replica: its own Client, its elector, and what its callbacks reported.
struct Candidate {
  std::string identity;
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::atomic<bool> done{false};
};

class LeaderElectionTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    namespace_ = std::make_unique<TestNamespace>(kubectl_, "itest-leader");
    lease_name_ = e2e::unique_name("lease");
    // Two threads, as the operator runs its io_context: the electors' strands must hold up.
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  void TearDown() override {
    for (const auto& candidate : candidates_) {
      if (candidate->elector) candidate->elector->stop();
    }
    for (const auto& candidate : candidates_) {
      wait_until("elector " + candidate->identity + " ends", kWait,
                 [&] { return !candidate->elector || candidate->done.load(); });
    }
    for (const auto& candidate : candidates_) {
      if (candidate->client) candidate->client->shutdown();
    }
    work_.reset();
    for (std::thread& thread : threads_) thread.join();
    candidates_.clear();
    namespace_.reset();
  }

  // A candidate named `identity` with its own Client from the kubeconfig; not started yet.
  Candidate& add_candidate(const std::string& identity, bool release_on_cancel) {
    auto candidate = std::make_unique<Candidate>();
    candidate->identity = identity;
    auto config = kube::load_kubeconfig({});
    EXPECT_TRUE(config) << config.error().describe();
    auto client = kube::Client::create(io_.get_executor(), std::move(*config));
    EXPECT_TRUE(client) << client.error().describe();
    candidate->client = std::move(*client);
    Candidate* raw = candidate.get();
    candidate->elector =
        std::make_unique<LeaderElector>(io_.get_executor(), *candidate->client,
                                        LeaderElectionConfig{
                                            .lease_namespace = namespace_->name(),
                                            .lease_name = lease_name_,
                                            .identity = identity,
                                            .lease_duration = kLeaseDuration,
                                            .renew_deadline = kRenewDeadline,
                                            .retry_period = kRetryPeriod,
                                            .release_on_cancel = release_on_cancel,
                                            .on_started_leading = [raw] { ++raw->started; },
                                            .on_stopped_leading = [raw] { ++raw->stopped; },
                                            .on_new_leader = {},
                                        });
    candidates_.push_back(std::move(candidate));
    return *raw;
  }

  void start(Candidate& candidate) {
    asio::co_spawn(io_, candidate.elector->run(),
                   [&candidate](const std::exception_ptr&) { candidate.done = true; });
  }

  // The Lease as the API server has it now.
  std::optional<kube::Lease> read_lease() const {
    auto json = kubectl_.get_json({"lease", lease_name_, "-n", namespace_->name()});
    if (!json) return std::nullopt;
    auto lease = kube::decode_lease(*json);
    EXPECT_TRUE(lease) << lease.error().describe();
    if (!lease) return std::nullopt;
    return *lease;
  }

  std::string holder() const {
    const std::optional<kube::Lease> lease = read_lease();
    return lease ? lease->holder_identity.value_or("") : "<no lease>";
  }

  // Starts `a` and `b` together; returns {leader, follower} once one leads and the other has
  // seen it do so.
  std::pair<Candidate*, Candidate*> elect(Candidate& a, Candidate& b) {
    start(a);
    start(b);
    if (!wait_until("a leader is elected", kWait,
                    [&] { return a.elector->is_leader() || b.elector->is_leader(); })) {
      return {nullptr, nullptr};
    }
    Candidate* leader = a.elector->is_leader() ? &a : &b;
    Candidate* follower = leader == &a ? &b : &a;
    // Once the follower has observed the leader it has had its chance to (wrongly) take over.
    wait_until("the follower observes the leader", kWait,
               [&] { return follower->elector->leader() == leader->identity; });
    return {leader, follower};
  }

  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{
      io_.get_executor()};
  std::vector<std::thread> threads_;
  std::unique_ptr<TestNamespace> namespace_;
  std::string lease_name_;
  std::vector<std::unique_ptr<Candidate>> candidates_;
};

TEST_F(LeaderElectionTest, OneLeaderAndTakeoverOnlyAfterAKilledLeadersLeaseExpires) {
  Candidate& a = add_candidate("replica-a_" + lease_name_, /*release_on_cancel=*/false);
  Candidate& b = add_candidate("replica-b_" + lease_name_, /*release_on_cancel=*/false);
  // Plain pointers, not a structured binding: Clang 14 cannot capture bindings in lambdas.
  const std::pair<Candidate*, Candidate*> elected = elect(a, b);
  Candidate* const leader = elected.first;
  Candidate* const follower = elected.second;
  ASSERT_NE(leader, nullptr);

  EXPECT_TRUE(leader->elector->is_leader());
  EXPECT_FALSE(follower->elector->is_leader());
  EXPECT_EQ(leader->started.load() + follower->started.load(), 1);
  EXPECT_EQ(leader->elector->leader(), leader->identity);
  EXPECT_EQ(holder(), leader->identity);
  const std::optional<kube::Lease> before = read_lease();
  ASSERT_TRUE(before);
  EXPECT_EQ(before->lease_duration_seconds, 4);

  // Kill the leader: it stops without handing the lease back.
  const auto killed_at = std::chrono::steady_clock::now();
  leader->elector->stop();
  ASSERT_TRUE(
      wait_until("the killed leader's run() ends", kWait, [&] { return leader->done.load(); }));
  EXPECT_FALSE(leader->elector->is_leader());
  EXPECT_EQ(leader->stopped.load(), 1);
  const std::optional<kube::Lease> abandoned = read_lease();
  ASSERT_TRUE(abandoned);
  EXPECT_EQ(abandoned->holder_identity, leader->identity) << "the lease must not be released";

  ASSERT_TRUE(wait_until(
      "the follower takes over the expired lease", kWait,
      [&] { return follower->elector->is_leader(); }, [&] { return "holder " + holder(); }));
  const auto takeover = std::chrono::steady_clock::now() - killed_at;
  const std::optional<kube::Lease> taken = read_lease();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->holder_identity, follower->identity);
  EXPECT_EQ(taken->lease_transitions, before->lease_transitions + 1);
  EXPECT_EQ(follower->started.load(), 1);
  // Expiry is judged on the follower's monotonic clock from when it saw the last renewal, which
  // it saw no earlier than it was written: the new acquireTime is at least a lease duration after
  // the killed leader's last renewTime (both written by this machine's wall clock).
  ASSERT_TRUE(abandoned->renew_time && taken->acquire_time);
  const auto expiry_gap = *taken->acquire_time - *abandoned->renew_time;
  EXPECT_GE(expiry_gap, kLeaseDuration);
  std::cout << "takeover after kill: " << std::chrono::duration<double>(takeover).count()
            << " s after stop, " << std::chrono::duration<double>(expiry_gap).count()
            << " s after the last renewal (bound: lease " << kLeaseDuration.count()
            << " s + 2 x retry " << kRetryPeriod.count() << " s)\n";
}

TEST_F(LeaderElectionTest, CleanStopReleasesTheLeaseAndTheFollowerTakesOverAtOnce) {
  Candidate& a = add_candidate("replica-a_" + lease_name_, /*release_on_cancel=*/true);
  Candidate& b = add_candidate("replica-b_" + lease_name_, /*release_on_cancel=*/true);
  // Plain pointers, not a structured binding: Clang 14 cannot capture bindings in lambdas.
  const std::pair<Candidate*, Candidate*> elected = elect(a, b);
  Candidate* const leader = elected.first;
  Candidate* const follower = elected.second;
  ASSERT_NE(leader, nullptr);
  EXPECT_EQ(holder(), leader->identity);
  const std::optional<kube::Lease> before = read_lease();
  ASSERT_TRUE(before);

  const auto stopped_at = std::chrono::steady_clock::now();
  leader->elector->stop();
  ASSERT_TRUE(wait_until("the leader's run() ends", kWait, [&] { return leader->done.load(); }));
  EXPECT_FALSE(leader->elector->is_leader());
  EXPECT_EQ(leader->stopped.load(), 1);

  ASSERT_TRUE(wait_until(
      "the follower takes over the released lease", kWait,
      [&] { return follower->elector->is_leader(); }, [&] { return "holder " + holder(); }));
  const auto takeover = std::chrono::steady_clock::now() - stopped_at;
  std::cout << "takeover after release: " << std::chrono::duration<double>(takeover).count()
            << " s after stop\n";
  // Released, the lease is free at the follower's next poll (one retry period plus request
  // latency); otherwise it would stay taken until a lease duration after the last renewal.
  EXPECT_LT(takeover, kLeaseDuration - kRetryPeriod);
  const std::optional<kube::Lease> taken = read_lease();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->holder_identity, follower->identity);
  EXPECT_EQ(taken->lease_duration_seconds, 4);
  EXPECT_EQ(taken->lease_transitions, before->lease_transitions + 1);

  // The new leader releases on stop too: the lease ends with no holder.
  follower->elector->stop();
  ASSERT_TRUE(
      wait_until("the new leader's run() ends", kWait, [&] { return follower->done.load(); }));
  const std::optional<kube::Lease> released = read_lease();
  ASSERT_TRUE(released);
  EXPECT_EQ(released->holder_identity.value_or(""), "");
  EXPECT_EQ(released->lease_duration_seconds, 1);
  EXPECT_EQ(released->lease_transitions, before->lease_transitions + 1);
}

TEST_F(LeaderElectionTest, LeaderThatCannotRenewStepsDownAfterTheRenewDeadline) {
  Candidate& a = add_candidate("replica-a_" + lease_name_, /*release_on_cancel=*/true);
  start(a);
  ASSERT_TRUE(wait_until("a leads", kWait, [&] { return a.elector->is_leader(); }));
  EXPECT_EQ(holder(), a.identity);

  // Another writer takes the lease behind the elector's back; to the elector it is a live lease
  // held by someone else, so its renewals fail until the renew deadline passes.
  kubectl_.must({"patch", "lease", lease_name_, "-n", namespace_->name(), "--type=merge", "-p",
                 R"({"spec":{"holderIdentity":"intruder"}})"});
  ASSERT_TRUE(wait_until("a steps down", kWait, [&] { return a.done.load(); }));
  EXPECT_FALSE(a.elector->is_leader());
  EXPECT_EQ(a.started.load(), 1);
  EXPECT_EQ(a.stopped.load(), 1);
  EXPECT_EQ(a.elector->leader(), "intruder");
  EXPECT_EQ(holder(), "intruder");
}

}  // namespace
}  // namespace nmo::runtime
