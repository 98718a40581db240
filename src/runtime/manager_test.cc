#include "runtime/manager.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "http/testing/run.h"
#include "kube/client/testing/fake_api_server.h"

namespace nmo::runtime {
namespace {

namespace json = boost::json;

// Records "start <name>" and "stop <name>" into a shared journal; `fail` makes start() fail,
// and `on_start` runs after a successful start.
class Recorder final : public Runnable {
 public:
  Recorder(std::string name, std::vector<std::string>& journal)
      : name_(std::move(name)), journal_(journal) {}
  asio::awaitable<Result<void>> start() override {
    journal_.push_back("start " + name_);
    if (fail) co_return Error(ErrorCode::kTimeout, "caches did not sync");
    if (on_start) on_start();
    co_return Result<void>();
  }
  asio::awaitable<void> stop() override {
    journal_.push_back("stop " + name_);
    co_return;
  }
  bool fail = false;
  std::function<void()> on_start;

 private:
  std::string name_;
  std::vector<std::string>& journal_;
};

ProbeCheck check_of(std::optional<std::string>& failure) {
  return [&failure]() -> asio::awaitable<std::optional<std::string>> { co_return failure; };
}

class ManagerTest : public ::testing::Test {
 protected:
  Recorder* add(const std::string& name, RunsOn runs_on) {
    auto runnable = std::make_unique<Recorder>(name, journal_);
    Recorder* raw = runnable.get();
    manager_.add(name, std::move(runnable), runs_on);
    return raw;
  }

  // Leader election is off in these tests: the Manager reads through its client only to ask
  // whether an API is served (add_when_served), and only where a test says so.
  void TearDown() override {
    for (const kube::testing::FakeRequest& request : client_.requests()) {
      EXPECT_TRUE(expect_probes_ && request.verb == "list" && request.path == kPlans)
          << "unexpected " << request.verb << " " << request.path;
    }
  }

  static constexpr const char* kPlans = "/apis/nodemaintenance.medik8s.io/v1beta1/maintenanceplans";
  const ServedApi kPlansApi{
      .what = "the MaintenancePlan API", .resource = "MaintenancePlans", .install = "install it"};

  asio::io_context io_;
  kube::testing::FakeApiServer client_{io_.get_executor()};
  bool expect_probes_ = false;
  std::vector<bool> leading_;
  Manager manager_{io_.get_executor(), client_,
                   ManagerOptions{.leader_election = std::nullopt,
                                  .on_leading_changed = [this](bool l) { leading_.push_back(l); }}};
  std::vector<std::string> journal_;
};

TEST_F(ManagerTest, StartsEveryReplicaFirstAndStopsInReverse) {
  add("webhook", RunsOn::kEveryReplica);
  add("probes", RunsOn::kEveryReplica);
  add("controller", RunsOn::kLeader);
  Recorder* last = add("housekeeping", RunsOn::kLeader);
  last->on_start = [this] { manager_.stop(); };
  EXPECT_EQ(http::test::run(io_, manager_.run()), 0);
  EXPECT_EQ(journal_, (std::vector<std::string>{"start webhook", "start probes", "start controller",
                                                "start housekeeping", "stop housekeeping",
                                                "stop controller", "stop probes", "stop webhook"}));
  // Without an election this process leads from the start.
  EXPECT_EQ(leading_, std::vector<bool>{true});
  EXPECT_TRUE(manager_.leading());
  EXPECT_TRUE(manager_.check_leading());
}

TEST_F(ManagerTest, ALeaderRunnableThatCannotStartEndsTheRunWithFailure) {
  add("webhook", RunsOn::kEveryReplica);
  add("controller", RunsOn::kLeader)->fail = true;
  add("never", RunsOn::kLeader);
  EXPECT_EQ(http::test::run(io_, manager_.run()), kExitFailure);
  // What failed to start is stopped (it may have begun something), what never started is not.
  EXPECT_EQ(journal_, (std::vector<std::string>{"start webhook", "start controller",
                                                "stop controller", "stop webhook"}));
}

TEST_F(ManagerTest, StoppedBeforeRunStartsOnlyWhatServesEveryReplica) {
  add("webhook", RunsOn::kEveryReplica);
  add("controller", RunsOn::kLeader);
  manager_.stop();
  EXPECT_EQ(http::test::run(io_, manager_.run()), 0);
  EXPECT_EQ(journal_, (std::vector<std::string>{"start webhook", "stop webhook"}));
}

TEST_F(ManagerTest, TheFirstFailingCheckIsReported) {
  std::optional<std::string> stalled;
  std::optional<std::string> webhook;
  std::optional<std::string> caches;
  manager_.add_health_check("reconcile", check_of(stalled));
  manager_.add_ready_check("webhook", check_of(webhook), RunsOn::kEveryReplica);
  manager_.add_ready_check("controller", check_of(caches), RunsOn::kLeader);
  const ProbeCheck healthz = manager_.healthz();
  const ProbeCheck readyz = manager_.readyz();
  EXPECT_EQ(http::test::run(io_, healthz()), std::nullopt);
  EXPECT_EQ(http::test::run(io_, readyz()), std::nullopt);
  stalled = "a reconcile has been running for 301 s";
  caches = "caches not synced";
  EXPECT_EQ(http::test::run(io_, healthz()), "a reconcile has been running for 301 s");
  // Without an election the leader checks count on this process.
  EXPECT_EQ(http::test::run(io_, readyz()), "caches not synced");
  // The first failing check, in the order added.
  webhook = "no answer on port 9443";
  EXPECT_EQ(http::test::run(io_, readyz()), "no answer on port 9443");
}

// A runnable whose API is not served yet is off (the process runs without it) until a LIST of its
// collection succeeds; then it starts, and it stops with the process.
TEST_F(ManagerTest, ARunnableWhoseApiIsNotServedStartsOnceItIs) {
  expect_probes_ = true;
  client_.forbid("list", kPlans);
  add("webhook", RunsOn::kEveryReplica);
  auto plans = std::make_unique<Recorder>("plans", journal_);
  plans->on_start = [this] { manager_.stop(); };
  manager_.add_when_served("plans", client_, kPlans, kPlansApi, std::move(plans), RunsOn::kLeader,
                           std::chrono::milliseconds(20));
  // Allowed once the first probe was refused (a grant applied later, posted from inside that
  // probe so that it runs after the refusal): the next probe starts it.
  client_.before_next("list", kPlans,
                      [this] { asio::post(io_, [this] { client_.allow("list", kPlans); }); });
  EXPECT_EQ(http::test::run(io_, manager_.run()), 0);
  EXPECT_EQ(client_.count("list", kPlans), 2U);
  EXPECT_EQ(journal_, (std::vector<std::string>{"start webhook", "start plans", "stop plans",
                                                "stop webhook"}));
}

// Served, but it cannot start: the process ends with failure, as for any leader runnable.
TEST_F(ManagerTest, ARunnableThatCannotStartOnceServedEndsTheRunWithFailure) {
  expect_probes_ = true;
  client_.set_kind("maintenanceplans", "MaintenancePlan");
  auto plans = std::make_unique<Recorder>("plans", journal_);
  plans->fail = true;
  manager_.add_when_served("plans", client_, kPlans, kPlansApi, std::move(plans), RunsOn::kLeader);
  EXPECT_EQ(http::test::run(io_, manager_.run()), kExitFailure);
  EXPECT_EQ(journal_, (std::vector<std::string>{"start plans", "stop plans"}));
}

// The cache runs with the process and is stopped with it (nothing is lent after run() returned);
// the clients the Manager owns are shut down when run() returns.
TEST_F(ManagerTest, TheCacheAndTheOwnedClientsStopWithTheProcess) {
  add("webhook", RunsOn::kEveryReplica);
  Cache& cache = manager_.add_cache(client_);
  EXPECT_EQ(&manager_.cache(), &cache);
  auto& owned = static_cast<kube::testing::FakeApiServer&>(
      manager_.own_client(std::make_unique<kube::testing::FakeApiServer>(io_.get_executor())));
  Recorder* controller = add("controller", RunsOn::kLeader);
  controller->on_start = [this] { manager_.stop(); };
  EXPECT_EQ(http::test::run(io_, manager_.run()), 0);
  EXPECT_EQ(journal_, (std::vector<std::string>{"start webhook", "start controller",
                                                "stop controller", "stop webhook"}));
  EXPECT_FALSE(cache.acquire<kube::Lease>("after the run", "ns", {}));
  const Result<json::value> after = http::test::run(io_, owned.get_json("/api/v1/nodes"));
  ASSERT_FALSE(after.has_value());
  EXPECT_EQ(after.error().code, ErrorCode::kCancelled);
}

}  // namespace
}  // namespace nmo::runtime
