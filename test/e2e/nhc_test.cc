// The story's chapter 6 proven against medik8s Node Health Check itself (docs/design.md §3.1): the
// operator and NHC take the same per-node Lease, so a node under maintenance is never remediated
// by NHC, and a node NHC remediates is never taken down for maintenance, nor another one beside it.
//
// NHC's real manager runs beside the operator (test/e2e/support/nhc_process.h; the tests skip
// without its fixture), with a NodeHealthCheck that selects only the kwok nodes each test creates
// (a label unique to the test), calls a node unhealthy after Ready has been False or Unknown for
// a few seconds, and remediates with Self Node Remediation. SNR's controller does not run: the
// tests play its part by making the node Ready again, after which NHC deletes its remediation and
// gives the Lease back.
//
// The two scenarios run one after the other, each with its own NHC: the operator's budget of one
// node down at a time counts NHC's Lease as a slot (docs/design.md §2.2), so a maintenance of one
// scenario would hold the other's.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "test/e2e/support/cluster.h"
#include "test/e2e/support/nhc_process.h"
#include "test/e2e/support/operator_fixture.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// The story's Event for a maintenance that waits for the node lease or a budget slot.
constexpr const char* kBlockedByNhc = "BlockedByNodeHealthCheck";
constexpr const char* kWaitingForLease =
    "Waiting to acquire lease for node maintenance. Other maintenance or node health check is in "
    "progress.";
// The label by which the test's NodeHealthCheck selects the test's nodes only.
constexpr const char* kSelectorLabel = "test.node-maintenance/nhc";
// How long Ready must be False or Unknown before NHC calls a node unhealthy.
constexpr std::chrono::seconds kUnhealthyAfter{5};
// NHC retries a remediation it skipped because the node lease was taken a minute later (its
// RequeueIfLeaseTaken); a node under maintenance is watched for two such periods.
constexpr std::chrono::seconds kNhcRetry{60};
// NHC notices a node once its conditions change, or at its next retry.
constexpr std::chrono::seconds kNhcReact = kNhcRetry + std::chrono::seconds(30);

// Now as an RFC 3339 timestamp in seconds, as the API server writes creationTimestamp.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::int64_t seconds_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count();
}

class NodeHealthCheckTest : public OperatorFixture {
 protected:
  void SetUp() override {
    if (!nhc_fixture_present()) {
      GTEST_SKIP() << "medik8s Node Health Check's fixture (manager.xz and crds/) not found in "
                   << nhc_fixture()
                   << "; set NMO_NHC_DIR (or the CMake cache variable of that name)";
    }
    OperatorFixture::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    started_ = true;
    install_nhc_crds(kubectl_);
    ASSERT_FALSE(HasFailure());
    namespace_ = std::make_unique<TestNamespace>(kubectl_, "nhc-e2e");
    selector_value_ = unique_name("run");
    name_ = unique_name("nmo-e2e-nhc");
    kubectl_.apply(snr_template_manifest(namespace_->name(), "snr"));
    kubectl_.apply(node_health_check_manifest(name_, kSelectorLabel, selector_value_,
                                              kUnhealthyAfter, namespace_->name(), "snr"));
    auto nhc = kubectl_.get_json({"nodehealthcheck", name_});
    ASSERT_TRUE(nhc);
    uid_ = uid_of(*nhc);
    nhc_ = std::make_unique<NhcProcess>(test_name() + ".nhc", namespace_->name());
    ASSERT_TRUE(nhc_->running()) << "NHC exited; log " << nhc_->log_path();
    start_operator(kOperatorFlags);
  }

  void TearDown() override {
    if (!started_) return;
    if (HasFailure() && nhc_ != nullptr) {
      std::cerr << "---- NHC log " << nhc_->log_path() << " (last 60 lines)\n"
                << nhc_->log_tail(60) << "---- end of NHC log\n";
      for (const auto& e : events_matching(kubectl_, "involvedObject.uid=" + uid_)) {
        std::cerr << "NHC Event " << e.type << " " << e.reason << " x" << e.count << ": "
                  << e.message << '\n';
      }
    }
    // The NodeHealthCheck goes while NHC runs (it owns the remediations, which the garbage
    // collector then removes), then NHC stops, and the Leases it held on the test's nodes go, so
    // that none fills the next test's budget.
    (void)kubectl_.run({"delete", "nodehealthcheck", name_, "--ignore-not-found", "--timeout=60s"});
    if (nhc_ != nullptr) {
      EXPECT_EQ(nhc_->stop(), 0) << "NHC did not exit cleanly on SIGTERM";
    }
    for (const auto& node : nodes_) {
      auto held = lease(kLeaseNamespace, "node-" + node);
      if (held && string_at(*held, "/spec/holderIdentity") == nhc_lease_holder(name_)) {
        (void)kubectl_.run(
            {"delete", "lease", "-n", kLeaseNamespace, "node-" + node, "--ignore-not-found"});
      }
    }
    OperatorFixture::TearDown();
    namespace_.reset();
  }

  static std::string test_name() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string(info->test_suite_name()) + "." + info->name();
  }

  // Fresh kwok nodes, selected by the test's NodeHealthCheck (deleted at the end).
  std::vector<std::string> selected_nodes(const std::string& prefix, std::size_t count) {
    std::vector<std::string> nodes = fresh_nodes(prefix, count);
    for (const auto& node : nodes) {
      kubectl_.must({"label", "node", node, std::string(kSelectorLabel) + "=" + selector_value_});
      nodes_.push_back(node);
    }
    return nodes;
  }

  // Ready again, as after a reboot: kwok heartbeats the node once the fault label is gone.
  void make_ready(const std::string& node) {
    kubectl_.must({"label", "node", node, std::string(kNotReadyLabel) + "-"});
  }

  std::string lease_holder(const std::string& node) {
    auto l = lease(kLeaseNamespace, "node-" + node);
    return l ? string_at(*l, "/spec/holderIdentity") : std::string();
  }

  // NHC's remediation of `node` (a SelfNodeRemediation named after it), or nullopt.
  std::optional<json::value> remediation(const std::string& node) {
    const ProcessResult r =
        kubectl_.run({"get", kSnrResource, node, "-n", namespace_->name(), "-o", "json"});
    if (!r.ok()) {
      if (r.err.find("NotFound") == std::string::npos) ADD_FAILURE() << r.err;
      return std::nullopt;
    }
    return json::parse(r.out);
  }

  // NHC's Events about its NodeHealthCheck with `reason` that name `node`.
  std::vector<Event> nhc_events(const std::string& reason, const std::string& node) {
    std::vector<Event> out;
    for (auto& e : events_matching(kubectl_, "involvedObject.uid=" + uid_)) {
      if (e.reason == reason && e.message.find(node) != std::string::npos) {
        out.push_back(std::move(e));
      }
    }
    return out;
  }

  // NHC's Lease as its lease manager writes it: holder NodeHealthCheck-<name>, its default
  // remediation time of 10 min plus a minute's buffer, acquireTime and renewTime set,
  // and owned by the Node.
  void expect_nhc_lease(const std::string& node) {
    auto taken = lease(kLeaseNamespace, "node-" + node);
    ASSERT_TRUE(taken);
    EXPECT_EQ(string_at(*taken, "/spec/holderIdentity"), nhc_lease_holder(name_));
    EXPECT_EQ(int_at(*taken, "/spec/leaseDurationSeconds"), 660);
    EXPECT_FALSE(string_at(*taken, "/spec/acquireTime").empty());
    EXPECT_FALSE(string_at(*taken, "/spec/renewTime").empty());
    EXPECT_EQ(string_at(*taken, "/metadata/ownerReferences/0/kind"), "Node");
    EXPECT_EQ(string_at(*taken, "/metadata/ownerReferences/0/name"), node);
  }

  static std::string describe(const std::vector<Event>& events) {
    std::string out;
    for (const auto& e : events) {
      out += "\n  " + e.type + " " + e.reason + " x" + std::to_string(e.count) + ": " + e.message;
    }
    return out.empty() ? "no events" : out;
  }

  std::string name_;  // the NodeHealthCheck
  std::string uid_;
  std::string selector_value_;
  std::unique_ptr<TestNamespace> namespace_;
  std::unique_ptr<NhcProcess> nhc_;
  std::vector<std::string> nodes_;
  bool started_ = false;
};

// Scenario 1: the memory upgrade reboots a node under maintenance. NHC sees it NotReady but finds
// the maintenance's exclude label, says so in a Warning and creates no remediation; it does not
// requeue, and nothing happens for two of its retry periods. Once the maintenance is deleted with
// the node still NotReady, the operator gives the node back (Lease and exclude label gone), and
// the node's change wakes NHC, which takes the Lease and remediates at once.
TEST_F(NodeHealthCheckTest, NodeUnderMaintenanceGoingNotReadyIsNotRemediated) {
  const auto began = Clock::now();
  const std::string node = selected_nodes("nhc-maint", 1).front();
  const std::string cr = unique_name("nhc-memory-upgrade");
  ASSERT_FALSE(create(cr, node, "memory upgrade").empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  ASSERT_TRUE(node_lease_held(node));

  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, node, kReact));
  const auto not_ready = Clock::now();
  // NHC finds the node unhealthy and skips it, saying why: it checks the exclude label before it
  // asks for the node lease. Throughout two of its retry periods the maintenance keeps the node
  // and no remediation exists.
  std::optional<Clock::time_point> first_skip;
  std::vector<Event> skipped;
  ASSERT_TRUE(wait_until(
      "NHC to skip " + node + ", then two retry periods", kNhcReact + 2 * kNhcRetry,
      [&] {
        EXPECT_FALSE(remediation(node)) << "NHC remediates a node under maintenance";
        EXPECT_EQ(lease_holder(node), kNodeLeaseHolder);
        skipped = nhc_events(kRemediationSkipped, node);
        if (skipped.empty()) return false;
        if (!first_skip) first_skip = Clock::now();
        return Clock::now() - *first_skip >= 2 * kNhcRetry;
      },
      [&] { return describe(skipped); }));
  RecordProperty("seconds_held_not_ready", std::to_string(seconds_since(not_ready)));
  for (const auto& e : skipped) {
    EXPECT_EQ(e.type, "Warning");
    EXPECT_EQ(e.message, "[remediation] Remediation skipped on node " + node +
                             ": node has Exclude from Remediation label");
  }
  auto held = get_node_maintenance(cr);
  ASSERT_TRUE(held);
  EXPECT_EQ(phase_of(*held), "Succeeded");
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_EQ(label(*n, kExcludeFromRemediationLabel), "true") << describe_node(*n);

  // The maintenance ends while the node is still down: the node is ours no more, NHC's now.
  const auto deleted = Clock::now();
  remove(cr);
  ASSERT_TRUE(wait_gone(cr, kReact));
  ASSERT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  std::string holder;
  ASSERT_TRUE(wait_until(
      "NHC to take the node lease of " + node + " and remediate", kNhcReact,
      [&] {
        holder = lease_holder(node);
        const bool remediated = remediation(node).has_value();
        // Never a remediation while the maintenance's Lease is still there.
        if (remediated) {
          EXPECT_NE(holder, kNodeLeaseHolder);
        }
        return remediated && holder == nhc_lease_holder(name_);
      },
      [&] { return "lease holder [" + holder + "]"; }));
  RecordProperty("seconds_to_remediation", std::to_string(seconds_since(deleted)));
  EXPECT_FALSE(nhc_events(kRemediationCreated, node).empty());
  expect_nhc_lease(node);

  // SNR's part: the node comes back. NHC deletes its remediation and gives the Lease back by
  // deleting it.
  make_ready(node);
  ASSERT_TRUE(wait_node_ready(node));
  ASSERT_TRUE(wait_until(
      "NHC to end the remediation of " + node + " and delete its Lease", kNhcReact,
      [&] { return !remediation(node) && !lease(kLeaseNamespace, "node-" + node); },
      [&] { return "lease holder [" + lease_holder(node) + "]"; }));
  RecordProperty("seconds", std::to_string(seconds_since(began)));
}

// Scenario 2: NHC remediates a node (it holds the node's Lease). A maintenance of that node waits
// for the Lease, and a maintenance of another node waits too: NHC's node is the one node down the
// budget allows. Once the node is healthy again NHC gives the Lease back, and the maintenances go,
// oldest first, one at a time, with nothing done by hand but ending the first maintenance.
TEST_F(NodeHealthCheckTest, NodeRemediatedByNhcHoldsMaintenances) {
  const auto began = Clock::now();
  const std::vector<std::string> nodes = selected_nodes("nhc-remediated", 2);
  const std::string& sick = nodes[0];
  const std::string& other = nodes[1];
  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, sick, kReact));
  std::string holder;
  ASSERT_TRUE(wait_until(
      "NHC to take the node lease of " + sick + " and remediate", kNhcReact,
      [&] {
        holder = lease_holder(sick);
        return holder == nhc_lease_holder(name_) && remediation(sick).has_value();
      },
      [&] { return "lease holder [" + holder + "]"; }));
  expect_nhc_lease(sick);

  const std::string cr_sick = unique_name("nhc-sick");
  const std::string cr_other = unique_name("nhc-other");
  const std::string uid_sick = create(cr_sick, sick, "replace the disk");
  ASSERT_FALSE(uid_sick.empty());
  // The older maintenance goes first by creation time (seconds), then by name (docs/design.md
  // §2.2); its name sorts after the other's, so only a creation time a second apart puts it first.
  ASSERT_TRUE(wait_until("the second after " + cr_sick + " was created", 5s, [&] {
    auto nm = get_node_maintenance(cr_sick);
    return nm && utc_now() > string_at(*nm, "/metadata/creationTimestamp");
  }));
  const std::string uid_other = create(cr_other, other, "firmware");
  ASSERT_FALSE(uid_other.empty());
  for (const auto& uid : {uid_sick, uid_other}) {
    auto e = wait_event(uid, kBlockedByNhc, std::string(kWaitingForLease), kReact);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->type, "Normal");
  }
  for (const auto& [cr, node] : {std::pair{cr_sick, sick}, std::pair{cr_other, other}}) {
    auto nm = get_node_maintenance(cr);
    ASSERT_TRUE(nm);
    EXPECT_EQ(phase_of(*nm), "Pending") << cr;
    auto n = get_node(node);
    ASSERT_TRUE(n);
    EXPECT_FALSE(drain_tainted(*n)) << node << ": " << describe_node(*n);
    EXPECT_FALSE(unschedulable(*n)) << node << ": " << describe_node(*n);
  }
  EXPECT_EQ(lease_holder(sick), nhc_lease_holder(name_));
  EXPECT_EQ(lease_holder(other), "");

  // SNR's part: the node comes back. NHC ends the remediation and gives the Lease back; the older
  // maintenance (of the node NHC had) goes first, the other waits for its slot.
  const auto recovered = Clock::now();
  make_ready(sick);
  ASSERT_TRUE(wait_node_ready(sick));
  std::string phase_sick;
  std::string phase_other;
  ASSERT_TRUE(wait_until(
      "the maintenance of " + sick + " to go once NHC is done", kNhcReact,
      [&] {
        auto a = get_node_maintenance(cr_sick);
        auto b = get_node_maintenance(cr_other);
        phase_sick = a ? phase_of(*a) : "gone";
        phase_other = b ? phase_of(*b) : "gone";
        if (phase_sick != "Pending") {
          EXPECT_FALSE(remediation(sick)) << "a maintenance runs while NHC remediates";
        }
        // A younger maintenance going first ends the wait (and fails below).
        return phase_sick == "Succeeded" || phase_other != "Pending";
      },
      [&] {
        auto l = lease(kLeaseNamespace, "node-" + sick);
        return cr_sick + "=" + phase_sick + " " + cr_other + "=" + phase_other + "; Lease of " +
               sick + ": " + (l ? json::serialize(l->at("spec")) : std::string("none"));
      }));
  auto l = lease(kLeaseNamespace, "node-" + sick);
  ASSERT_EQ(phase_other, "Pending")
      << "the younger maintenance went before the older one; " << cr_sick << "=" << phase_sick
      << "; Lease of " << sick << ": " << (l ? json::serialize(*l) : std::string("none"));
  RecordProperty("seconds_to_first_maintenance", std::to_string(seconds_since(recovered)));
  EXPECT_EQ(lease_holder(sick), kNodeLeaseHolder);
  EXPECT_FALSE(nhc_events(kRemediationCreated, sick).empty());
  auto still = get_node_maintenance(cr_other);
  ASSERT_TRUE(still);
  EXPECT_EQ(phase_of(*still), "Pending") << "two nodes down at once";

  // The first maintenance ends; the other takes its slot.
  remove(cr_sick);
  ASSERT_TRUE(wait_gone(cr_sick, kReact));
  ASSERT_TRUE(wait_phase(cr_other, {"Succeeded"}, kDrain));
  EXPECT_EQ(lease_holder(other), kNodeLeaseHolder);
  RecordProperty("seconds", std::to_string(seconds_since(began)));
}

}  // namespace
}  // namespace nmo::e2e
