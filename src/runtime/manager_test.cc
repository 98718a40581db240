#include "runtime/manager.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "http/testing/run.h"

namespace nmo::runtime {
namespace {

namespace json = boost::json;

// Leader election is off in these tests: the Manager never writes through its client.
class NoClient final : public kube::Client {
 public:
  const kube::RestConfig& config() const override { return config_; }
  asio::awaitable<Result<json::value>> get_json(std::string /*path*/) override {
    co_return unused();
  }
  asio::awaitable<Result<json::value>> create(std::string /*path*/, json::value /*object*/,
                                              kube::WriteOptions /*options*/) override {
    co_return unused();
  }
  asio::awaitable<Result<json::value>> update(std::string /*path*/, json::value /*object*/,
                                              kube::WriteOptions /*options*/) override {
    co_return unused();
  }
  asio::awaitable<Result<json::value>> patch(std::string /*path*/, kube::PatchType /*type*/,
                                             std::string /*body*/,
                                             kube::WriteOptions /*options*/) override {
    co_return unused();
  }
  asio::awaitable<Result<void>> remove(std::string /*path*/,
                                       kube::DeleteOptions /*options*/) override {
    co_return unused();
  }
  asio::awaitable<Result<kube::EvictionResult>> evict(std::string /*namespace_*/,
                                                      std::string /*name*/,
                                                      kube::EvictOptions /*options*/) override {
    co_return unused();
  }
  asio::awaitable<Result<std::string>> list_raw(std::string /*path*/,
                                                kube::ListOptions /*options*/) override {
    co_return unused();
  }
  asio::awaitable<Result<std::unique_ptr<kube::WatchStream>>> watch(
      std::string /*path*/, kube::WatchOptions /*options*/) override {
    co_return unused();
  }
  void shutdown() override {}

 private:
  static Error unused() {
    ADD_FAILURE() << "the manager used its client without leader election";
    return Error(ErrorCode::kInternal, "unused");
  }
  kube::RestConfig config_;
};

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

  asio::io_context io_;
  NoClient client_;
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

}  // namespace
}  // namespace nmo::runtime
