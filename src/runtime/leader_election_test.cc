#include "runtime/leader_election.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/api/lease.h"
#include "kube/api/resource.h"
#include "kube/client/testing/fake_api_server.h"

namespace nmo::runtime {
namespace {

using namespace std::chrono_literals;
namespace json = boost::json;

constexpr const char* kNamespace = "nmo-system";
constexpr const char* kName = "135b1886.medik8s.io";

class LeaderElectorTest : public ::testing::Test {
 protected:
  // The electors only read, create and update their Lease.
  void TearDown() override {
    for (const kube::testing::FakeRequest& request : server_.requests()) {
      const bool expected =
          request.verb == "create"
              ? request.path == kube::collection_path<kube::Lease>(kNamespace)
              : (request.verb == "get" || request.verb == "update") && request.path == lease_path();
      EXPECT_TRUE(expected) << "unexpected " << request.verb << " " << request.path;
    }
  }

  LeaderElectionConfig config(std::string identity) {
    return LeaderElectionConfig{
        .lease_namespace = kNamespace,
        .lease_name = kName,
        .identity = std::move(identity),
        .lease_duration = 4s,
        .renew_deadline = 2s,
        .retry_period = 1s,
        .release_on_cancel = true,
        .on_started_leading = [this] { ++started_; },
        .on_stopped_leading = [this] { ++stopped_; },
        .on_new_leader = [this](const std::string& leader) { leaders_ += leader + ";"; },
    };
  }

  void start(LeaderElector& elector) {
    asio::co_spawn(io_, elector.run(), [this](const std::exception_ptr& error) {
      EXPECT_FALSE(error);
      done_ = true;
    });
  }

  // Runs the io_context until `condition` holds; false after 10 s.
  bool run_until(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.restart();
      io_.run_for(5ms);
    }
    return true;
  }

  static std::string lease_path() { return kube::object_path<kube::Lease>(kNamespace, kName); }

  // The Lease as the API server holds it now.
  [[nodiscard]] kube::Lease decoded() const {
    const std::optional<json::value> lease = server_.object(lease_path());
    EXPECT_TRUE(lease.has_value()) << "no Lease at " << lease_path();
    if (!lease) return kube::Lease{};
    auto decoded = kube::decode_lease(*lease);
    EXPECT_TRUE(decoded) << decoded.error().describe();
    return decoded ? *decoded : kube::Lease{};
  }

  // Another writer sets the holder (and bumps the version), as `kubectl patch` would.
  void write_holder(const std::string& holder) {
    json::value lease = server_.object(lease_path()).value();
    lease.as_object()["spec"].as_object()["holderIdentity"] = holder;
    server_.put(std::move(lease));
  }

  [[nodiscard]] std::size_t gets() const { return server_.count("get", lease_path()); }
  [[nodiscard]] std::size_t updates() const { return server_.count("update", lease_path()); }

  asio::io_context io_;
  kube::testing::FakeApiServer server_{io_.get_executor()};
  int started_ = 0;
  int stopped_ = 0;
  std::string leaders_;
  bool done_ = false;
};

TEST_F(LeaderElectorTest, CreatesTheMissingLeaseAndReleasesItOnStop) {
  LeaderElector elector(io_.get_executor(), server_, config("me"));
  start(elector);
  ASSERT_TRUE(run_until([&] { return elector.is_leader(); }));
  EXPECT_EQ(started_, 1);
  EXPECT_EQ(leaders_, "me;");
  EXPECT_EQ(elector.leader(), "me");
  EXPECT_EQ(server_.count("create", kube::collection_path<kube::Lease>(kNamespace)), 1U);
  kube::Lease lease = decoded();
  EXPECT_EQ(lease.holder_identity, "me");
  EXPECT_EQ(lease.lease_duration_seconds, 4);
  EXPECT_EQ(lease.lease_transitions, 0);
  ASSERT_TRUE(lease.acquire_time && lease.renew_time);
  EXPECT_EQ(lease.acquire_time, lease.renew_time);

  elector.stop();
  ASSERT_TRUE(run_until([&] { return done_; }));
  EXPECT_FALSE(elector.is_leader());
  EXPECT_EQ(stopped_, 1);
  lease = decoded();
  EXPECT_EQ(lease.holder_identity, "");
  EXPECT_EQ(lease.lease_duration_seconds, 1);
  EXPECT_EQ(lease.lease_transitions, 0);
}

TEST_F(LeaderElectorTest, LeavesALiveLeaseToItsHolder) {
  LeaderElector other(io_.get_executor(), server_, config("other"));
  start(other);
  ASSERT_TRUE(run_until([&] { return other.is_leader(); }));
  LeaderElectionConfig no_release = config("me");
  no_release.release_on_cancel = false;
  LeaderElector me(io_.get_executor(), server_, std::move(no_release));
  const std::size_t gets_before = gets();
  bool me_done = false;
  asio::co_spawn(io_, me.run(), [&](const std::exception_ptr&) { me_done = true; });
  ASSERT_TRUE(run_until([&] { return gets() > gets_before && me.leader() == "other"; }));
  EXPECT_FALSE(me.is_leader());
  EXPECT_EQ(decoded().holder_identity, "other");

  me.stop();
  ASSERT_TRUE(run_until([&] { return me_done; }));
  EXPECT_FALSE(me.is_leader());
  EXPECT_EQ(decoded().holder_identity, "other");
  EXPECT_EQ(started_, 1);  // only `other`
  other.stop();
  ASSERT_TRUE(run_until([&] { return done_; }));
}

// Two replicas on one machine share the hostname; with unique_identity() the second one
// still sees the first as another holder instead of taking the Lease for its own.
TEST_F(LeaderElectorTest, TwoCandidatesOfOneHostDoNotBothLead) {
  const std::string first_identity = unique_identity("host");
  const std::string second_identity = unique_identity("host");
  EXPECT_NE(first_identity, second_identity);
  LeaderElector first(io_.get_executor(), server_, config(first_identity));
  start(first);
  ASSERT_TRUE(run_until([&] { return first.is_leader(); }));
  LeaderElectionConfig no_release = config(second_identity);
  no_release.release_on_cancel = false;
  LeaderElector second(io_.get_executor(), server_, std::move(no_release));
  const std::size_t gets_before = gets();
  bool second_done = false;
  asio::co_spawn(io_, second.run(), [&](const std::exception_ptr&) { second_done = true; });
  ASSERT_TRUE(run_until([&] { return gets() > gets_before && second.leader() == first_identity; }));
  EXPECT_FALSE(second.is_leader());
  EXPECT_EQ(decoded().holder_identity, first_identity);
  EXPECT_EQ(started_, 1);  // only `first`

  second.stop();
  ASSERT_TRUE(run_until([&] { return second_done; }));
  first.stop();
  ASSERT_TRUE(run_until([&] { return done_; }));
}

TEST(UniqueIdentityTest, IsTheHostAndARandomSuffix) {
  const std::string identity = unique_identity("node-maintenance-operator-7d9f");
  ASSERT_EQ(identity.size(), std::string("node-maintenance-operator-7d9f").size() + 33);
  EXPECT_TRUE(identity.starts_with("node-maintenance-operator-7d9f_")) << identity;
  EXPECT_EQ(identity.find_first_not_of("0123456789abcdef", identity.size() - 32), std::string::npos)
      << identity;
  EXPECT_NE(unique_identity("h"), unique_identity("h"));
}

TEST_F(LeaderElectorTest, LosesARaceWithAConcurrentWriter) {
  // A released lease, free to take; another candidate writes it between our GET and our PUT.
  LeaderElector first(io_.get_executor(), server_, config("first"));
  start(first);
  ASSERT_TRUE(run_until([&] { return first.is_leader(); }));
  first.stop();
  ASSERT_TRUE(run_until([&] { return done_; }));
  ASSERT_EQ(decoded().holder_identity, "");

  server_.before_next("update", lease_path(), [&] { write_holder("winner"); });
  LeaderElector me(io_.get_executor(), server_, config("me"));
  bool me_done = false;
  asio::co_spawn(io_, me.run(), [&](const std::exception_ptr&) { me_done = true; });
  const std::size_t updates_before = updates();
  ASSERT_TRUE(run_until([&] { return updates() > updates_before; }));
  EXPECT_FALSE(me.is_leader());
  EXPECT_EQ(decoded().holder_identity, "winner");
  me.stop();
  ASSERT_TRUE(run_until([&] { return me_done; }));
  EXPECT_EQ(decoded().holder_identity, "winner");
  EXPECT_EQ(started_, 1);  // only `first`
}

TEST_F(LeaderElectorTest, StopsLeadingWhenRenewalsFailForTheRenewDeadline) {
  LeaderElector elector(io_.get_executor(), server_, config("me"));
  start(elector);
  ASSERT_TRUE(run_until([&] { return elector.is_leader(); }));
  server_.fail_next("*", "", Error(ErrorCode::kUnavailable, "connection refused"),
                    kube::testing::FakeApiServer::kEveryCall);
  ASSERT_TRUE(run_until([&] { return done_; }));
  // Leadership ends no earlier than the renew deadline after the last successful renewal.
  const std::optional<kube::Time> renewed = decoded().renew_time;
  ASSERT_TRUE(renewed);
  EXPECT_GE(std::chrono::system_clock::now() - *renewed, 2s);
  EXPECT_FALSE(elector.is_leader());
  EXPECT_EQ(started_, 1);
  EXPECT_EQ(stopped_, 1);
  EXPECT_EQ(decoded().holder_identity, "me");  // not released: the server was gone
}

// A leader that was paused (SIGSTOP, a frozen VM) past its renew deadline wakes up still
// "leading" as far as its loop knows; check_leading() already says no, until the loop steps down.
TEST_F(LeaderElectorTest, CheckLeadingSaysNoOncePastTheRenewDeadlineBeforeTheLoopNotices) {
  FakeClock clock(Clock::time_point{} + 1h);
  LeaderElector elector(io_.get_executor(), server_, config("me"), clock);
  EXPECT_EQ(elector.check_leading().error(),
            Error(ErrorCode::kUnavailable, "this replica is not the leader"));
  start(elector);
  ASSERT_TRUE(run_until([&] { return elector.is_leader(); }));
  EXPECT_OK(elector.check_leading());
  clock.advance(1999ms);
  EXPECT_OK(elector.check_leading());

  clock.advance(1500ms);  // the process "wakes up": no renewal has run meanwhile
  EXPECT_TRUE(elector.is_leader());
  EXPECT_EQ(elector.check_leading().error(),
            Error(ErrorCode::kUnavailable,
                  "the leader lease was last renewed 3.5 s ago, more than the renew deadline of "
                  "2 s: not acting until it is renewed"));
  ASSERT_TRUE(run_until([&] { return done_; }));  // the loop steps down at its next turn
  EXPECT_FALSE(elector.is_leader());
  EXPECT_EQ(stopped_, 1);
  EXPECT_EQ(elector.check_leading().error(),
            Error(ErrorCode::kUnavailable, "this replica is not the leader"));
}

TEST(ValidateLeaderElectionConfigTest, AcceptsDefaultsAndRejectsInconsistentDurations) {
  LeaderElectionConfig config{.lease_namespace = kNamespace, .lease_name = kName, .identity = "me"};
  EXPECT_OK(validate(config));
  config.renew_deadline = 15s;
  EXPECT_EQ(validate(config).error(),
            Error(ErrorCode::kInvalid,
                  "leader election needs lease duration > renew deadline > retry period > 0, "
                  "got 15s, 15s, 2s"));
  config.renew_deadline = 2s;
  EXPECT_FALSE(validate(config));
  config.renew_deadline = 10s;
  config.retry_period = 0s;
  EXPECT_FALSE(validate(config));
  config.retry_period = 2s;
  config.identity = "";
  EXPECT_EQ(validate(config).error().message,
            "leader election needs a lease namespace, a lease name and an identity");
}

}  // namespace
}  // namespace nmo::runtime
