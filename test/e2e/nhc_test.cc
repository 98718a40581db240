// The story's chapter 6 proven against medik8s Node Health Check itself (docs/design.md §3.1): the
// operator and NHC take the same per-node Lease, so a node under maintenance is never remediated
// by NHC, and a node NHC remediates is never taken down for maintenance, nor another one beside it;
// a MaintenancePlan counts that node as unavailable and does not take it as healthy while NHC has
// it.
//
// NHC's real manager runs beside the operator (test/e2e/support/nhc_process.h; the tests skip
// without its fixture), with a NodeHealthCheck that selects only the kwok nodes each test creates
// (a label unique to the test), calls a node unhealthy after Ready has been False or Unknown for
// a few seconds, and remediates with Self Node Remediation. SNR's controller does not run: the
// tests play its part by making the node Ready again, after which NHC deletes its remediation and
// gives the Lease back.
//
// The scenarios run one after the other, each with its own NHC: the operator's budget of one node
// down at a time counts NHC's Lease as a slot (docs/design.md §2.2), so a maintenance of one
// scenario would hold the other's. Throughout, the tests sample that no node is ever held by both:
// a remediation never exists under the operator's Lease or exclude label (or, once NHC has been
// killed, no remediation but the one it left).
#include <signal.h>
#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "operator/api/maintenance_plan.h"
#include "operator/fleet/rollout.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/nhc_process.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/plans.h"
#include "test/e2e/support/serving_certificate.h"
#include "test/e2e/support/subprocess.h"
#include "test/e2e/support/upstream_fixture.h"

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

// The operator's flags here: a MaintenancePlan waiting on something no watch of its own reports
// (maxUnavailable) looks again every second rather than every 5 s.
const std::vector<std::string> kNhcOperatorFlags = [] {
  std::vector<std::string> flags = kOperatorFlags;
  flags.insert(flags.end(), {"--test-hook-plan-poll", "1"});
  return flags;
}();

// Now as an RFC 3339 timestamp in seconds, as the API server writes creationTimestamp.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// Now plus `offset` as a Lease writes its times: RFC 3339 with microseconds.
std::string lease_time_from_now(std::chrono::seconds offset) {
  const std::time_t at = std::time(nullptr) + offset.count();
  std::tm utc{};
  gmtime_r(&at, &utc);
  char text[40];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S.000000Z", &utc);
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
    operator_ = &start_operator(kNhcOperatorFlags);
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
    if (nhc_ != nullptr && nhc_->running()) {
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

  // SNR's part: the node comes back Ready; NHC then deletes its remediation and its Lease.
  [[nodiscard]] bool recover_and_wait_for_nhc_release(const std::string& node) {
    make_ready(node);
    return wait_node_ready(node) &&
           wait_until(
               "NHC to end the remediation of " + node + " and delete its Lease", kNhcReact,
               [&] { return !remediation(node) && !lease(kLeaseNamespace, "node-" + node); },
               [&] { return "lease holder [" + lease_holder(node) + "]"; });
  }

  // Waits until NHC says it skipped `node` (its RemediationSkipped Events, oldest first), with
  // `check` at every look; empty when the deadline passed (the wait has failed the test).
  std::vector<Event> wait_nhc_skipped(const std::string& node, const std::string& what,
                                      const std::function<void()>& check) {
    std::vector<Event> skipped;
    const bool seen = wait_until(
        what, kNhcReact,
        [&] {
          check();
          skipped = nhc_events(kRemediationSkipped, node);
          return !skipped.empty();
        },
        [&] { return describe(skipped); });
    return seen ? skipped : std::vector<Event>{};
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

  // The rule of chapter 6, sampled (docs/design.md §3.1): a node is never held by both. A
  // remediation of `node` exists only while the node lease is not the operator's and the node
  // does not carry the maintenance's exclude label.
  void expect_not_held_by_both(const std::string& node) {
    if (!remediation(node)) return;
    EXPECT_NE(lease_holder(node), kNodeLeaseHolder) << node << " is remediated under our Lease";
    auto n = get_node(node);
    ASSERT_TRUE(n);
    EXPECT_NE(label(*n, kExcludeFromRemediationLabel), "true")
        << node << " is remediated under maintenance: " << describe_node(*n);
  }

  // The remediation of `node`, if any, is the one with `uid`: no other is created.
  void expect_only_remediation(const std::string& node, const std::string& uid) {
    auto r = remediation(node);
    if (r) {
      EXPECT_EQ(uid_of(*r), uid) << "a second remediation of " << node;
    }
  }

  // NHC's Events saying it found the node lease of `node` taken.
  std::vector<Event> lease_taken_events(const std::string& node) {
    std::vector<Event> out;
    for (auto& e : nhc_events(kRemediationSkipped, node)) {
      if (e.message.find("lease is already taken") != std::string::npos) {
        out.push_back(std::move(e));
      }
    }
    return out;
  }

  // NHC finds `node` unhealthy, takes its Lease and creates a remediation.
  [[nodiscard]] bool wait_nhc_remediates(const std::string& node) {
    std::string holder;
    return wait_until(
        "NHC to take the node lease of " + node + " and remediate", kNhcReact,
        [&] {
          holder = lease_holder(node);
          return holder == nhc_lease_holder(name_) && remediation(node).has_value();
        },
        [&] { return "lease holder [" + holder + "]"; });
  }

  // A MaintenancePlan over `nodes` (as listed) with `spec`; deleted at the end, and the
  // NodeMaintenances it may have left with it.
  void create_plan(const std::string& plan, const std::vector<std::string>& nodes,
                   json::object spec) {
    std::vector<std::string> names{"delete", "nodemaintenance", "--ignore-not-found", "--wait=true",
                                   "--timeout=60s"};
    json::array listed;
    for (const auto& node : nodes) {
      listed.emplace_back(node);
      names.push_back(op::fleet::maintenance_name(plan, node));
    }
    defer([this, plan, names] {
      (void)kubectl_.run({"delete", "maintenanceplan", plan, "--ignore-not-found", "--wait=true",
                          "--timeout=60s"});
      (void)kubectl_.run(names);
    });
    spec["nodes"] = std::move(listed);
    apply_plan(kubectl_, plan, std::move(spec));
  }

  std::optional<op::MaintenancePlan> get_plan(const std::string& plan) {
    return e2e::get_plan(kubectl_, plan);
  }

  std::optional<op::MaintenancePlan> wait_plan(
      const std::string& plan, const std::string& what, std::chrono::milliseconds timeout,
      const std::function<bool(const op::MaintenancePlan&)>& check) {
    return e2e::wait_plan(kubectl_, plan, what, timeout, check);
  }

  // The plan's entry for `node` ("" phase when it has none).
  static op::PlanNodeStatus plan_entry(const op::MaintenancePlan& plan, const std::string& node) {
    for (const op::PlanNodeStatus& entry : plan.status.nodes) {
      if (entry.name == node) return entry;
    }
    return {};
  }

  static bool node_phase_is(const op::MaintenancePlan& plan, const std::string& node,
                            op::PlanNodePhase phase) {
    const op::PlanNodeStatus entry = plan_entry(plan, node);
    return entry.name == node && entry.phase == phase;
  }

  // The technician's word, as `kubectl maintenance done` writes it.
  void mark_done(const std::string& plan, const std::string& node) {
    kubectl_.must({"annotate", "nodemaintenance", op::fleet::maintenance_name(plan, node),
                   std::string(op::kDoneAnnotation) + "=" + utc_now(), "--overwrite"});
  }

  static std::string describe(const op::MaintenancePlan& plan) { return describe_plan(plan); }

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
  OperatorProcess* operator_ = nullptr;
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
  ASSERT_TRUE(recover_and_wait_for_nhc_release(node));
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

// Scenario 4a: the operator dies (SIGKILL) holding the node lease of a maintenance that has
// succeeded, and the node then goes NotReady. Nothing renews the Lease, but it stays valid for
// its hour (docs/design.md §3.1) and the node keeps the exclude label: NHC skips the node for
// the label. Then, on top, the label goes while the operator is still down: NHC wakes at once,
// asks for the Lease, finds it held and skips again; no remediation. The operator comes back,
// puts the label back and keeps the node; only when the maintenance is deleted does NHC take
// the node, at once.
TEST_F(NodeHealthCheckTest, OperatorKilledHoldingTheLeaseKeepsTheNode) {
  const auto began = Clock::now();
  const std::string node = selected_nodes("nhc-opkill", 1).front();
  const std::string cr = unique_name("nhc-opkill");
  ASSERT_FALSE(create(cr, node, "memory upgrade").empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  auto ours = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(ours);
  ASSERT_EQ(string_at(*ours, "/spec/holderIdentity"), kNodeLeaseHolder);
  EXPECT_EQ(int_at(*ours, "/spec/leaseDurationSeconds"), 3600);
  const std::string renewed = string_at(*ours, "/spec/renewTime");

  EXPECT_EQ(operator_->kill(), 128 + SIGKILL);
  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, node, kReact));
  const std::vector<Event> skipped =
      wait_nhc_skipped(node, "NHC to skip " + node + " for its exclude label",
                       [&] { expect_not_held_by_both(node); });
  ASSERT_FALSE(skipped.empty());
  EXPECT_EQ(skipped.front().message, "[remediation] Remediation skipped on node " + node +
                                         ": node has Exclude from Remediation label");

  // The label goes while the operator is down (by hand, or a tool that resets labels): only
  // the Lease guards the node now.
  const auto unlabelled = Clock::now();
  kubectl_.must({"label", "node", node, std::string(kExcludeFromRemediationLabel) + "-"});
  std::vector<Event> taken;
  ASSERT_TRUE(wait_until(
      "NHC to find the node lease of " + node + " taken", kNhcReact,
      [&] {
        expect_not_held_by_both(node);
        taken = lease_taken_events(node);
        return !taken.empty();
      },
      [&] { return describe(nhc_events(kRemediationSkipped, node)); }));
  RecordProperty("seconds_to_lease_check", std::to_string(seconds_since(unlabelled)));
  EXPECT_EQ(taken.front().type, "Warning");
  EXPECT_EQ(taken.front().message, "[remediation] Skipped remediation of node: " + node +
                                       ", because node lease is already taken");
  EXPECT_FALSE(remediation(node)) << "NHC remediates a node whose Lease we hold";
  auto untouched = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(untouched);
  EXPECT_EQ(string_at(*untouched, "/spec/holderIdentity"), kNodeLeaseHolder);
  EXPECT_EQ(string_at(*untouched, "/spec/renewTime"), renewed) << "someone wrote our Lease";

  // The operator comes back: the maintenance is Succeeded, the label is put back (a node
  // under maintenance that lost part of it, docs/design.md §2.5), the Lease stays ours.
  operator_ = &start_operator(kNhcOperatorFlags);
  std::string exclude;
  ASSERT_TRUE(wait_until(
      "the operator to put the exclude label back on " + node, kReact,
      [&] {
        expect_not_held_by_both(node);
        auto n = get_node(node);
        exclude = n ? label(*n, kExcludeFromRemediationLabel) : std::string();
        return exclude == "true";
      },
      [&] { return "label [" + exclude + "]"; }));
  auto held = get_node_maintenance(cr);
  ASSERT_TRUE(held);
  EXPECT_EQ(phase_of(*held), "Succeeded");
  EXPECT_EQ(lease_holder(node), kNodeLeaseHolder);
  EXPECT_FALSE(remediation(node));

  // The maintenance ends with the node still down: NHC takes it, and nothing of ours is left.
  const auto deleted = Clock::now();
  remove(cr);
  ASSERT_TRUE(wait_gone(cr, kReact));
  ASSERT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  std::string holder;
  ASSERT_TRUE(wait_until(
      "NHC to take the node lease of " + node + " and remediate", kNhcReact,
      [&] {
        expect_not_held_by_both(node);
        holder = lease_holder(node);
        return holder == nhc_lease_holder(name_) && remediation(node).has_value();
      },
      [&] { return "lease holder [" + holder + "]"; }));
  RecordProperty("seconds_to_remediation", std::to_string(seconds_since(deleted)));
  expect_nhc_lease(node);

  ASSERT_TRUE(recover_and_wait_for_nhc_release(node));
  RecordProperty("seconds", std::to_string(seconds_since(began)));
}

// Scenario 4b: NHC dies (SIGKILL) while it remediates a node. Its Lease (660 s) outlives it: a
// maintenance of the node waits, Pending, while the Lease is valid. Rather than wait the 660 s
// out, the Lease's renewTime is moved back so that it expires a few seconds later by time alone,
// with no write to wake anyone: the operator must notice the expiry itself, then takes the
// Lease over (medik8s' rule: an expired lease may be taken) and the maintenance proceeds. The
// remediation the killed NHC left stays (nothing deletes it); NHC restarted leaves it and the
// node alone while the maintenance lasts, and ends it once the node is Ready again.
TEST_F(NodeHealthCheckTest, NhcKilledHoldingTheLeaseHoldsTheMaintenanceUntilItExpires) {
  const auto began = Clock::now();
  const std::string node = selected_nodes("nhc-nhckill", 1).front();
  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, node, kReact));
  std::string holder;
  ASSERT_TRUE(wait_until(
      "NHC to take the node lease of " + node + " and remediate", kNhcReact,
      [&] {
        holder = lease_holder(node);
        return holder == nhc_lease_holder(name_) && remediation(node).has_value();
      },
      [&] { return "lease holder [" + holder + "]"; }));
  expect_nhc_lease(node);
  auto snr = remediation(node);
  ASSERT_TRUE(snr);
  const std::string snr_uid = uid_of(*snr);
  EXPECT_EQ(nhc_->kill(), 128 + SIGKILL);

  const std::string cr = unique_name("nhc-after-crash");
  const std::string uid = create(cr, node, "replace the mainboard");
  ASSERT_FALSE(uid.empty());
  auto blocked = wait_event(uid, kBlockedByNhc, std::string(kWaitingForLease), kReact);
  ASSERT_TRUE(blocked);

  // NHC's Lease expires kExpiresIn from now.
  constexpr std::chrono::seconds kExpiresIn{12};
  const auto expires = Clock::now() + kExpiresIn;
  kubectl_.must({"patch", "lease", "-n", kLeaseNamespace, "node-" + node, "--type=merge", "-p",
                 R"({"spec":{"renewTime":")" +
                     lease_time_from_now(kExpiresIn - std::chrono::seconds(660)) + R"("}})"});
  // Valid until then (a second's margin for the clock): the maintenance waits, the node is
  // untouched, the Lease stays NHC's.
  std::string phase;
  ASSERT_TRUE(wait_until("NHC's Lease of " + node + " to run out", kExpiresIn + 5s, [&] {
    if (Clock::now() >= expires - 1s) return true;
    expect_only_remediation(node, snr_uid);
    auto nm = get_node_maintenance(cr);
    EXPECT_TRUE(nm);
    if (nm) {
      EXPECT_EQ(phase_of(*nm), "Pending");
    }
    EXPECT_EQ(lease_holder(node), nhc_lease_holder(name_));
    auto n = get_node(node);
    if (n) {
      EXPECT_FALSE(drain_tainted(*n)) << describe_node(*n);
    }
    return false;
  }));

  // Expired by time: the operator takes the Lease over and the maintenance goes.
  const auto expired = Clock::now();
  ASSERT_TRUE(wait_until(
      "the operator to take the expired Lease of " + node, kReact,
      [&] {
        expect_only_remediation(node, snr_uid);
        auto nm = get_node_maintenance(cr);
        phase = nm ? phase_of(*nm) : "gone";
        return phase == "Running" || phase == "Succeeded";
      },
      [&] { return cr + "=" + phase + "; lease holder [" + lease_holder(node) + "]"; }));
  RecordProperty("seconds_to_take_over", std::to_string(seconds_since(expired)));
  auto taken = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(taken);
  EXPECT_EQ(string_at(*taken, "/spec/holderIdentity"), kNodeLeaseHolder);
  EXPECT_EQ(int_at(*taken, "/spec/leaseDurationSeconds"), 3600);
  EXPECT_EQ(int_at(*taken, "/spec/leaseTransitions"), 1);
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));

  // What the killed NHC left: its remediation (nothing deleted it), now under our Lease and
  // label. A restarted NHC finds the node excluded, says so and leaves both alone: it does not
  // delete the remediation, creates no other, and asks for no Lease.
  nhc_ = std::make_unique<NhcProcess>(test_name() + ".nhc.2", namespace_->name());
  ASSERT_TRUE(nhc_->running()) << "NHC exited; log " << nhc_->log_path();
  const std::vector<Event> skipped =
      wait_nhc_skipped(node, "the restarted NHC to skip " + node + " for its exclude label",
                       [&] { expect_only_remediation(node, snr_uid); });
  ASSERT_FALSE(skipped.empty());
  EXPECT_EQ(lease_holder(node), kNodeLeaseHolder);
  expect_only_remediation(node, snr_uid);
  EXPECT_TRUE(remediation(node)) << "the restarted NHC deleted its remediation";

  // The maintenance ends with the node still down: the node and the Lease are given back. NHC
  // carries on with the remediation it has without taking the Lease again (it asks for one only
  // before it creates a remediation); the node coming back ends it.
  remove(cr);
  ASSERT_TRUE(wait_gone(cr, kReact));
  ASSERT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  EXPECT_FALSE(lease(kLeaseNamespace, "node-" + node));
  make_ready(node);
  ASSERT_TRUE(wait_node_ready(node));
  ASSERT_TRUE(wait_until(
      "NHC to end the remediation of " + node, kNhcReact,
      [&] {
        expect_only_remediation(node, snr_uid);
        return !remediation(node);
      },
      [&] { return "lease holder [" + lease_holder(node) + "]"; }));
  RecordProperty("seconds", std::to_string(seconds_since(began)));
}

// Scenario 3a: NHC remediates the last node of a plan with maxUnavailable 1. That node is the
// one the plan may have down: the plan starts none, and its status says why. Once the node is
// Ready and NHC has given its Lease back, the plan goes on by itself, the remediated node last.
TEST_F(NodeHealthCheckTest, MaintenancePlanCountsTheNodeNhcRemediatesAsUnavailable) {
  const auto began = Clock::now();
  const std::vector<std::string> nodes = selected_nodes("nhc-plan", 3);
  const std::string& sick = nodes[2];
  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, sick, kReact));
  ASSERT_TRUE(wait_nhc_remediates(sick));

  const std::string plan = unique_name("nhc-plan");
  create_plan(plan, nodes, {{"maxUnavailable", 1}, {"doneWhen", "Soaked"}, {"soakTime", "1s"}});
  const std::string reached =
      "next node: maxUnavailable 1 reached: 1 nodes of the plan are unavailable";
  ASSERT_TRUE(wait_plan(plan, "held by maxUnavailable", kReact,
                        [&](const auto& p) { return p.status.message == reached; }));
  // A few of the plan's looks: nothing starts while NHC remediates.
  const auto held = Clock::now();
  ASSERT_TRUE(wait_until("a few looks of plan " + plan, 10s, [&] {
    auto p = get_plan(plan);
    EXPECT_TRUE(p);
    if (p) {
      EXPECT_EQ(p->status.message, reached);
      for (const auto& node : nodes) {
        EXPECT_TRUE(node_phase_is(*p, node, op::PlanNodePhase::kWaiting)) << describe(*p);
        EXPECT_FALSE(get_node_maintenance(op::fleet::maintenance_name(plan, node))) << node;
      }
    }
    EXPECT_EQ(lease_holder(sick), nhc_lease_holder(name_));
    return Clock::now() - held >= 3s;
  }));

  // SNR's part: the node comes back and NHC lets it go; the plan takes its nodes in order.
  const auto released = Clock::now();
  ASSERT_TRUE(recover_and_wait_for_nhc_release(sick));
  ASSERT_TRUE(wait_plan(plan, "the first node started", kReact, [&](const auto& p) {
    return !node_phase_is(p, nodes[0], op::PlanNodePhase::kWaiting);
  }));
  RecordProperty("seconds_to_first_node", std::to_string(seconds_since(released)));
  ASSERT_TRUE(wait_plan(plan, "Succeeded", kDrain, [&](const auto& p) {
    expect_not_held_by_both(sick);
    return p.status.phase == op::PlanPhase::kSucceeded;
  }));
  EXPECT_FALSE(remediation(sick));
  RecordProperty("seconds", std::to_string(seconds_since(began)));
}

// Scenario 3b: the plan's health gate does not hand a node back as healthy while NHC holds its
// Lease. The memory upgrade reboots the plan's first node (NotReady under maintenance: NHC skips
// it); the work is marked done with the node still down, so the plan gives it back NotReady and
// NHC takes it at once. NHC then dies mid-remediation and the node comes back Ready: nothing
// but NHC's Lease (valid 660 s) says the node is still being remediated, and the gate waits on
// it (no maxUnavailable: the gate reads the Lease itself). Rather than wait the 660 s out, the
// Lease's renewTime is moved back so that it runs out seconds later by time alone; then the
// gate passes and the plan goes on.
TEST_F(NodeHealthCheckTest, PlanHealthGateWaitsWhileNhcHoldsTheNodeLease) {
  const auto began = Clock::now();
  const std::vector<std::string> nodes = selected_nodes("nhc-gate", 2);
  const std::string& first = nodes[0];
  const std::string plan = unique_name("nhc-gate");
  create_plan(plan, nodes, {{"healthGateTimeout", "10m"}});
  ASSERT_TRUE(wait_plan(plan, first + " drained", kDrain, [&](const auto& p) {
    return node_phase_is(p, first, op::PlanNodePhase::kInMaintenance);
  }));
  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, first, kReact));
  const std::vector<Event> skipped =
      wait_nhc_skipped(first, "NHC to skip " + first + " for its exclude label",
                       [&] { expect_not_held_by_both(first); });
  ASSERT_FALSE(skipped.empty());

  // Given back while still NotReady: NHC takes the node, and the gate waits for it to be Ready.
  mark_done(plan, first);
  ASSERT_TRUE(wait_nhc_remediates(first));
  ASSERT_TRUE(wait_node_restored(first, /*stays_cordoned=*/false, kReact));
  auto gate = wait_plan(plan, first + " in the health gate", kReact, [&](const auto& p) {
    return node_phase_is(p, first, op::PlanNodePhase::kHealthCheck);
  });
  ASSERT_TRUE(gate);
  EXPECT_NE(plan_entry(*gate, first).message.find("node " + first + " is not Ready"),
            std::string::npos)
      << describe(*gate);
  auto snr = remediation(first);
  ASSERT_TRUE(snr);
  const std::string snr_uid = uid_of(*snr);
  EXPECT_EQ(nhc_->kill(), 128 + SIGKILL);

  // SNR's part: the node is back. NHC is not there to end its remediation: its Lease stays.
  make_ready(first);
  ASSERT_TRUE(wait_node_ready(first));
  const std::string held_by =
      "health gate: node " + first + ": its node lease is held by " + nhc_lease_holder(name_);
  ASSERT_TRUE(wait_plan(plan, "the gate held by NHC's Lease", kReact,
                        [&](const auto& p) { return plan_entry(p, first).message == held_by; }));
  const std::string second_maintenance = op::fleet::maintenance_name(plan, nodes[1]);
  constexpr std::chrono::seconds kExpiresIn{8};
  const auto expires = Clock::now() + kExpiresIn;
  kubectl_.must({"patch", "lease", "-n", kLeaseNamespace, "node-" + first, "--type=merge", "-p",
                 R"({"spec":{"renewTime":")" +
                     lease_time_from_now(kExpiresIn - std::chrono::seconds(660)) + R"("}})"});
  // Valid until then (a second's margin for the clock): the gate holds, the next node waits.
  ASSERT_TRUE(wait_until("NHC's Lease of " + first + " to run out", kExpiresIn + 5s, [&] {
    if (Clock::now() >= expires - 1s) return true;
    expect_only_remediation(first, snr_uid);
    auto p = get_plan(plan);
    EXPECT_TRUE(p);
    if (p) {
      EXPECT_EQ(plan_entry(*p, first).message, held_by) << describe(*p);
      EXPECT_TRUE(node_phase_is(*p, nodes[1], op::PlanNodePhase::kWaiting)) << describe(*p);
    }
    EXPECT_FALSE(get_node_maintenance(second_maintenance)) << "the gate passed under NHC's Lease";
    return false;
  }));

  // Run out: the gate passes and the next node starts.
  const auto expired = Clock::now();
  ASSERT_TRUE(
      wait_plan(plan, first + " done and " + nodes[1] + " started", kReact, [&](const auto& p) {
        return node_phase_is(p, first, op::PlanNodePhase::kDone) &&
               !node_phase_is(p, nodes[1], op::PlanNodePhase::kWaiting);
      }));
  RecordProperty("seconds_to_gate_after_expiry", std::to_string(seconds_since(expired)));
  ASSERT_TRUE(wait_plan(plan, nodes[1] + " drained", kDrain, [&](const auto& p) {
    return node_phase_is(p, nodes[1], op::PlanNodePhase::kInMaintenance);
  }));
  mark_done(plan, nodes[1]);
  ASSERT_TRUE(wait_plan(plan, "Succeeded", kReact, [&](const auto& p) {
    return p.status.phase == op::PlanPhase::kSucceeded;
  }));
  RecordProperty("seconds", std::to_string(seconds_since(began)));
}

// Upstream medik8s NMO's manager, run as upstream_upgrade_test.cc runs it (its fixture's
// manager.xz unpacked into a temporary directory, a throwaway serving certificate, the admin
// kubeconfig, no leader election); started and stopped at will.
class UpstreamNmo {
 public:
  UpstreamNmo() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "nmo-e2e-upstream-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed";
      return;
    }
    work_ = pattern;
    const ProcessResult unpacked =
        run_process({"sh", "-c", "xz -dc \"$0\" > \"$1\" && chmod +x \"$1\"",
                     (upstream_fixture() / "manager.xz").string(), (work_ / "manager").string()});
    if (!unpacked.ok()) ADD_FAILURE() << "unpacking upstream's manager.xz failed: " << unpacked.err;
    std::error_code ec;
    std::filesystem::create_directories(work_ / "tmp/k8s-webhook-server", ec);
    std::filesystem::create_symlink(certificate_.dir(),
                                    work_ / "tmp/k8s-webhook-server/serving-certs", ec);
    if (ec) ADD_FAILURE() << "cannot link upstream's serving certificate: " << ec.message();
  }
  UpstreamNmo(const UpstreamNmo&) = delete;
  UpstreamNmo& operator=(const UpstreamNmo&) = delete;
  ~UpstreamNmo() {
    stop();
    std::error_code ignored;
    if (!work_.empty()) std::filesystem::remove_all(work_, ignored);
  }

  // Returns once its controller runs its worker.
  void start(const std::string& log_name) {
    const char* kubeconfig = std::getenv("KUBECONFIG");
    process_ = std::make_unique<OperatorProcess>(
        ForeignOperator{.binary = work_ / "manager",
                        .args = {"--kubeconfig", kubeconfig != nullptr ? kubeconfig : "",
                                 "--metrics-bind-address=0", "--health-probe-bind-address=0"},
                        .env = {"TMPDIR=" + (work_ / "tmp").string()}},
        log_name);
    EXPECT_TRUE(process_->wait_for_log("Starting workers", 60s))
        << "upstream's manager did not start; log:\n"
        << process_->log_tail(40);
  }

  void stop() {
    if (process_ != nullptr && process_->running()) {
      EXPECT_EQ(process_->stop(), 0) << "upstream did not exit cleanly on SIGTERM";
    }
  }

 private:
  std::filesystem::path work_;
  ServingCertificate certificate_;
  std::unique_ptr<OperatorProcess> process_;
};

// Scenario 5: scenario 1 with upstream medik8s NMO instead of the operator, so that a user moving
// from upstream knows what changes. Upstream and NHC both serve their webhooks on port 9443, fixed
// in both (no flag), so they cannot run at once here: they take turns, each started on the state
// the other left. That proves what each writes and how the other reads it (both are
// level-triggered: a manager's first reconcile looks at everything), not how fast NHC reacts to
// a change, which scenario 1 measures with the operator.
TEST_F(NodeHealthCheckTest, UpstreamNmoNodeUnderMaintenanceGoingNotReadyIsNotRemediated) {
  if (!std::filesystem::exists(upstream_fixture() / "manager.xz")) {
    GTEST_SKIP() << "upstream medik8s NMO's fixture (manager.xz) not found in "
                 << upstream_fixture() << "; set NMO_UPSTREAM_NMO_DIR";
  }
  const auto began = Clock::now();
  // Neither the operator nor NHC run while upstream does (SetUp started both a moment ago: how
  // they exit while still starting does not matter here).
  (void)operator_->stop();
  (void)nhc_->stop();
  UpstreamNmo upstream;
  ASSERT_FALSE(HasFailure());
  const std::string log = test_name() + ".upstream";

  const std::string node = selected_nodes("nhc-upstream", 1).front();
  const std::string cr = unique_name("nhc-upstream-memory-upgrade");
  upstream.start(log + ".1");
  ASSERT_FALSE(create(cr, node, "memory upgrade").empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  upstream.stop();
  auto l = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(l);
  EXPECT_EQ(string_at(*l, "/spec/holderIdentity"), kNodeLeaseHolder);
  EXPECT_EQ(int_at(*l, "/spec/leaseDurationSeconds"), 3600);
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_EQ(label(*n, kExcludeFromRemediationLabel), "true") << describe_node(*n);

  // The node goes NotReady under upstream's maintenance; NHC skips it for the label.
  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, node, kReact));
  nhc_ = std::make_unique<NhcProcess>(test_name() + ".nhc.2", namespace_->name());
  ASSERT_TRUE(nhc_->running()) << "NHC exited; log " << nhc_->log_path();
  const std::vector<Event> skipped =
      wait_nhc_skipped(node, "NHC to skip " + node + " under upstream's maintenance",
                       [&] { expect_not_held_by_both(node); });
  ASSERT_FALSE(skipped.empty());
  EXPECT_EQ(skipped.front().message, "[remediation] Remediation skipped on node " + node +
                                         ": node has Exclude from Remediation label");
  // NHC does not requeue after that skip (scenario 1 watches two of its retry periods): a few
  // seconds show nothing follows.
  const auto skip_seen = Clock::now();
  ASSERT_TRUE(wait_until("a few seconds after NHC skipped " + node, 10s, [&] {
    expect_not_held_by_both(node);
    EXPECT_FALSE(remediation(node)) << "NHC remediates a node under upstream's maintenance";
    return Clock::now() - skip_seen >= 5s;
  }));
  EXPECT_EQ(lease_holder(node), kNodeLeaseHolder);
  (void)nhc_->stop();

  // Upstream ends the maintenance with the node still down.
  upstream.start(log + ".2");
  remove(cr);
  ASSERT_TRUE(wait_gone(cr, kReact));
  std::string exclude = "true";
  ASSERT_TRUE(wait_until(
      "upstream to give " + node + " back", kReact,
      [&] {
        auto now = get_node(node);
        exclude = now ? label(*now, kExcludeFromRemediationLabel) : "?";
        return now && exclude.empty() && !unschedulable(*now) && !drain_tainted(*now);
      },
      [&] { return "exclude label [" + exclude + "]"; }));
  upstream.stop();
  auto freed = lease(kLeaseNamespace, "node-" + node);
  const std::string freed_as = freed ? json::serialize(freed->at("spec")) : std::string("deleted");
  RecordProperty("upstream_freed_lease", freed_as);
  EXPECT_EQ(freed ? lease_holder(node) : std::string(), "") << freed_as;

  // NHC back: it takes the Lease upstream freed and remediates.
  nhc_ = std::make_unique<NhcProcess>(test_name() + ".nhc.3", namespace_->name());
  ASSERT_TRUE(nhc_->running()) << "NHC exited; log " << nhc_->log_path();
  std::string holder;
  ASSERT_TRUE(wait_until(
      "NHC to take the node lease of " + node + " and remediate", kNhcReact,
      [&] {
        holder = lease_holder(node);
        return holder == nhc_lease_holder(name_) && remediation(node).has_value();
      },
      [&] { return "lease holder [" + holder + "]"; }));
  expect_nhc_lease(node);
  make_ready(node);
  ASSERT_TRUE(wait_node_ready(node));
  ASSERT_TRUE(wait_until(
      "NHC to end the remediation of " + node, kNhcReact, [&] { return !remediation(node); },
      [&] { return "lease holder [" + lease_holder(node) + "]"; }));
  RecordProperty("seconds", std::to_string(seconds_since(began)));
}

}  // namespace
}  // namespace nmo::e2e
