// The MaintenancePlan controller's I/O shell (plan_controller.h) against the in-memory API server
// (kube/client/testing/fake_api_server.h), with the shared Cache as the manager runs it. No
// NodeMaintenance controller runs: the test plays it (and the node) by writing what it would
// write, and checks what the plan creates, deletes and reports, and that it reads the cluster
// from the cache. The decisions themselves are rollout_test.cc's.
#include "operator/fleet/plan_controller.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/error.h"
#include "base/result.h"
#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/resource.h"
#include "kube/client/testing/fake_api_server.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"
#include "operator/fleet/rollout.h"
#include "operator/node/lifecycle_conditions.h"
#include "operator/node/steering_taint.h"
#include "operator/testing/fake_cluster_json.h"
#include "runtime/cache.h"

namespace nmo::op::fleet {
namespace {

namespace json = boost::json;
using kube::testing::FakeApiServer;
using op::testing::maintenance_path;
using op::testing::maintenances_path;
using op::testing::node_path;
using op::testing::string_at;
using op::testing::text;
using namespace std::chrono_literals;

constexpr std::string_view kLeaseNamespace = "medik8s-leases";
constexpr const char* kPlan = "kernel";

// A Ready node with `taints` (as the API server stores them).
json::value node_object(const std::string& name, const std::string& boot_id,
                        json::array taints = {}) {
  json::object spec;
  if (!taints.empty()) spec["taints"] = std::move(taints);
  return json::value{{"apiVersion", "v1"},
                     {"kind", "Node"},
                     {"metadata", {{"name", name}}},
                     {"spec", std::move(spec)},
                     {"status",
                      {{"conditions", json::array{{{"type", "Ready"}, {"status", "True"}}}},
                       {"nodeInfo", {{"bootID", boot_id}}}}}};
}

std::string plan_path() { return kube::object_path<MaintenancePlan>("", kPlan); }

// Our steering taint, and another tool's PreferNoSchedule taint, as the API server stores them.
json::value steering_taint() {
  return {{"key", kSteeringTaintKey}, {"effect", kPreferNoScheduleEffect}};
}
json::value kured_taint() { return {{"key", "kured.dev/reboot"}, {"effect", "PreferNoSchedule"}}; }
constexpr const char* kSteered = "nodemaintenance.medik8s.io/planned:PreferNoSchedule";
constexpr const char* kKured = "kured.dev/reboot:PreferNoSchedule";

// The taints of the stored node `name` as key[=value]:effect, in order.
std::vector<std::string> taints_of(const FakeApiServer& server, const std::string& name) {
  std::vector<std::string> texts;
  const auto node = server.object(node_path(name));
  if (!node) return texts;
  boost::system::error_code ec;
  const json::value* taints = node->find_pointer("/spec/taints", ec);
  if (taints == nullptr || !taints->is_array()) return texts;
  for (const json::value& taint : taints->as_array()) {
    const std::string value = string_at(taint, "/value");
    texts.push_back(string_at(taint, "/key") + (value.empty() ? "" : "=" + value) + ":" +
                    string_at(taint, "/effect"));
  }
  return texts;
}

// metadata.<map>[key] of `object` ("" when absent).
std::string metadata_entry(const json::value& object, std::string_view map, std::string_view key) {
  boost::system::error_code ec;
  const json::value* entries = object.find_pointer("/metadata/" + std::string(map), ec);
  if (entries == nullptr || !entries->is_object()) return {};
  const json::value* found = entries->as_object().if_contains(key);
  return found != nullptr && found->is_string() ? std::string(found->as_string()) : std::string();
}

// The status of the node condition `type`, "" when the node has none.
std::string condition_status(const json::value& node, std::string_view type) {
  boost::system::error_code ec;
  const json::value* conditions = node.find_pointer("/status/conditions", ec);
  if (conditions == nullptr || !conditions->is_array()) return {};
  for (const json::value& condition : conditions->as_array()) {
    if (string_at(condition, "/type") == type) return string_at(condition, "/status");
  }
  return {};
}

class PlanControllerShellTest : public ::testing::Test {
 protected:
  void TearDown() override {
    // A held call would keep a reflector from stopping.
    server_.clear_faults();
    http::test::run(io_, [this]() -> asio::awaitable<bool> {
      if (controller_ != nullptr) co_await controller_->stop();
      co_await cache_.stop();
      co_return true;
    }());
    io_.restart();
    io_.poll();
  }

  // Starts the cache and the controller, which returns at once and starts its plans once the
  // MaintenancePlan API answered its probe and its caches synced.
  void start(PlanControllerOptions options = {}) {
    options.poll = 1s;
    controller_ =
        std::make_unique<PlanController>(io_.get_executor(), server_, cache_, std::move(options));
    ASSERT_OK(http::test::run(io_, [this]() -> asio::awaitable<Result<void>> {
      NMO_CO_TRY(co_await cache_.start());
      co_return co_await controller_->start();
    }()));
  }

  // Runs the io_context until `condition` holds; false (and a test failure naming `what`)
  // after `limit`.
  [[nodiscard]] bool run_until(std::string_view what, const std::function<bool()>& condition,
                               std::chrono::seconds limit = 10s) {
    if (http::test::run_until(io_, condition, limit)) return true;
    ADD_FAILURE() << what << ": not reached in " << limit.count() << " s";
    return false;
  }

  // Creates the plan: spec.nodes (w1 then w2 unless given), each given back once it rebooted.
  void create_plan(const std::vector<std::string>& nodes = {"w1", "w2"}) {
    json::array listed(nodes.begin(), nodes.end());
    json::value body{{"apiVersion", kPlanApiVersion},
                     {"kind", kPlanKind},
                     {"metadata", {{"name", kPlan}}},
                     {"spec",
                      {{"nodes", std::move(listed)},
                       {"doneWhen", "NodeRebooted"},
                       {"reason", "kernel upgrade"}}}};
    std::string path = kube::collection_path<MaintenancePlan>();
    ASSERT_OK(http::test::run(io_, server_.create(std::move(path), std::move(body), {})));
  }

  // The plan as stored; std::nullopt when it is not there.
  std::optional<MaintenancePlan> plan() const {
    auto stored = server_.object(plan_path());
    if (!stored) return std::nullopt;
    Result<MaintenancePlan> decoded = decode_maintenance_plan(*stored);
    EXPECT_OK(decoded);
    if (!decoded) return std::nullopt;
    return std::move(decoded).value();
  }

  // The status entry of `node` in `plan`, or null.
  static const PlanNodeStatus* entry(const MaintenancePlan& plan, std::string_view node) {
    const auto found = std::find_if(plan.status.nodes.begin(), plan.status.nodes.end(),
                                    [&](const PlanNodeStatus& e) { return e.name == node; });
    return found == plan.status.nodes.end() ? nullptr : &*found;
  }

  // Whether the stored plan has `node` in `phase`.
  bool node_phase_is(std::string_view node, PlanNodePhase phase) const {
    const auto p = plan();
    const PlanNodeStatus* e = p ? entry(*p, node) : nullptr;
    return e != nullptr && e->phase == phase;
  }

  // Plays the NodeMaintenance controller: the maintenance `name` reaches `phase`.
  void write_maintenance_phase(const std::string& name, std::string_view phase) {
    std::string path = maintenance_path(name) + "/status";
    std::string body = json::serialize(json::value{{"status", {{"phase", phase}}}});
    ASSERT_OK(http::test::run(
        io_, server_.patch(std::move(path), kube::PatchType::kMergePatch, std::move(body), {})));
  }

  // Deletes the plan (it has the finalizer: the API server marks it for deletion).
  void delete_plan() { ASSERT_OK(http::test::run(io_, server_.remove(plan_path(), {}))); }

  // The index in server_.requests() of the first call matching `matches`; requests().size()
  // when none does.
  std::size_t first_request(const std::function<bool(const kube::testing::FakeRequest&)>& matches,
                            std::size_t from = 0) const {
    const auto& requests = server_.requests();
    for (std::size_t i = from; i < requests.size(); ++i) {
      if (matches(requests[i])) return i;
    }
    return requests.size();
  }

  // The JSON Patches of the node `name` (its spec: the taints) received so far, by index.
  std::vector<std::size_t> taint_patches(const std::string& name) const {
    std::vector<std::size_t> found;
    const auto& requests = server_.requests();
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].verb == "patch" && requests[i].path == node_path(name) &&
          requests[i].patch_type == kube::PatchType::kJsonPatch) {
        found.push_back(i);
      }
    }
    return found;
  }

  // The reasons of the Events about the plan written so far.
  std::vector<std::string> plan_event_reasons() const {
    std::vector<std::string> reasons;
    for (const json::value& event : server_.objects("/api/v1/events")) {
      if (string_at(event, "/involvedObject/kind") == kPlanKind) {
        reasons.push_back(string_at(event, "/reason"));
      }
    }
    return reasons;
  }

  asio::io_context io_;
  FakeApiServer server_{io_.get_executor()};
  runtime::Cache cache_{io_.get_executor(), server_};
  std::unique_ptr<PlanController> controller_;
};

// A two-node plan from start to end (docs/design.md §10): one NodeMaintenance at a time, the next
// node only once the first is back and healthy, Succeeded at the end; MaintenancePlanned on the
// node that waits. Everything is read from the shared cache: each collection is listed once, by
// its informer, and only watched after that.
TEST_F(PlanControllerShellTest, TakesTwoNodesOneAfterTheOtherReadingOnlyFromTheCache) {
  server_.put(node_object("w1", "boot-1"));
  server_.put(node_object("w2", "boot-1"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_plan());
  const std::string first = maintenance_name(kPlan, "w1");
  const std::string second = maintenance_name(kPlan, "w2");

  ASSERT_TRUE(
      run_until("w1 Draining", [&] { return node_phase_is("w1", PlanNodePhase::kDraining); }));
  const auto nm = server_.object(maintenance_path(first));
  ASSERT_TRUE(nm) << "the plan did not create " << first;
  EXPECT_EQ(string_at(*nm, "/spec/nodeName"), "w1");
  EXPECT_EQ(string_at(*nm, "/spec/reason"), "kernel upgrade");
  const MaintenancePlan started = *plan();
  ASSERT_NE(entry(started, "w1"), nullptr);
  ASSERT_NE(entry(started, "w2"), nullptr);
  // The plan's own: its label and uid, no owner reference (docs/design.md §10).
  EXPECT_EQ(metadata_entry(*nm, "labels", kPlanLabel), kPlan);
  EXPECT_EQ(metadata_entry(*nm, "annotations", kPlanUidAnnotation), started.meta.uid);
  EXPECT_EQ(nm->as_object().at("metadata").as_object().if_contains("ownerReferences"), nullptr);
  EXPECT_EQ(text(started.status.phase), "Running");
  EXPECT_EQ(entry(started, "w1")->maintenance, first);
  EXPECT_EQ(text(entry(started, "w2")->phase), "Waiting");
  EXPECT_FALSE(server_.object(maintenance_path(second))) << "two nodes started at once";
  // The waiting node is told it is planned (docs/design.md §2.10).
  EXPECT_TRUE(run_until("MaintenancePlanned on w2", [&] {
    return condition_status(*server_.object(node_path("w2")), kMaintenancePlannedCondition) ==
           "True";
  }));

  // The drain succeeds, the node reboots and is Ready again: the plan deletes the maintenance,
  // passes the health gate and starts the next node.
  ASSERT_NO_FATAL_FAILURE(write_maintenance_phase(first, "Succeeded"));
  ASSERT_TRUE(run_until("w1 InMaintenance",
                        [&] { return node_phase_is("w1", PlanNodePhase::kInMaintenance); }));
  server_.put(node_object("w1", "boot-2"));
  ASSERT_TRUE(run_until("w1 Done", [&] { return node_phase_is("w1", PlanNodePhase::kDone); }));
  EXPECT_FALSE(server_.object(maintenance_path(first))) << "the first maintenance was not deleted";
  ASSERT_TRUE(
      run_until("w2 Draining", [&] { return node_phase_is("w2", PlanNodePhase::kDraining); }));
  EXPECT_TRUE(server_.object(maintenance_path(second)));
  EXPECT_TRUE(run_until("MaintenancePlanned gone from w2", [&] {
    return condition_status(*server_.object(node_path("w2")), kMaintenancePlannedCondition) == "";
  }));

  ASSERT_NO_FATAL_FAILURE(write_maintenance_phase(second, "Succeeded"));
  ASSERT_TRUE(run_until("w2 InMaintenance",
                        [&] { return node_phase_is("w2", PlanNodePhase::kInMaintenance); }));
  server_.put(node_object("w2", "boot-2"));
  ASSERT_TRUE(run_until("the plan Succeeded",
                        [&] { return plan() && plan()->status.phase == PlanPhase::kSucceeded; }));
  const MaintenancePlan done = *plan();
  ASSERT_NE(entry(done, "w1"), nullptr);
  ASSERT_NE(entry(done, "w2"), nullptr);
  EXPECT_EQ(done.status.done, 2);
  EXPECT_EQ(done.status.failed, 0);
  EXPECT_EQ(text(entry(done, "w1")->phase), "Done");
  EXPECT_EQ(text(entry(done, "w2")->phase), "Done");
  EXPECT_TRUE(server_.objects(maintenances_path()).empty());
  // The Events of each node's steps (written in the background, after the status).
  for (const char* reason : {"NodeStarted", "NodeDrained", "NodeWorkDone", "NodeDone"}) {
    EXPECT_TRUE(run_until(std::string("two ") + reason + " Events", [&] {
      const std::vector<std::string> reasons = plan_event_reasons();
      return std::count(reasons.begin(), reasons.end(), reason) == 2;
    }));
  }

  // Read from the cache: one list (the informer's first) and one watch per collection.
  for (const std::string& collection : {std::string("/api/v1/nodes"), maintenances_path(),
                                        kube::collection_path<kube::PodDisruptionBudget>(),
                                        kube::collection_path<kube::Lease>(kLeaseNamespace)}) {
    EXPECT_EQ(server_.count("list", collection), 1U) << collection;
    EXPECT_EQ(server_.count("watch", collection), 1U) << collection;
    EXPECT_EQ(server_.open_watches(collection), 1U) << collection;
  }
}

// The defect fixed by commit 64e3ccd: the plan's own status write reaches it before the ADDED
// event of the NodeMaintenance it created (here the NodeMaintenance watch is held, so the cache
// never shows it). The plan must decide from its own create, not report the maintenance
// "deleted by someone else", fail the node and stop.
TEST_F(PlanControllerShellTest, ItsOwnNewMaintenanceIsNotTakenForDeletedBeforeTheCacheShowsIt) {
  server_.put(node_object("w1", "boot-1"));
  server_.put(node_object("w2", "boot-1"));
  server_.hold("watch", maintenances_path());
  // Each reconcile of the live plan writes MaintenancePlanned on waiting w2 afresh, as its
  // patch conflicts every time (a kubelet's heartbeat, which a live plan passes over): the
  // number of those patches counts the reconciles.
  server_.fail_next("patch", node_path("w2") + "/status",
                    Error(ErrorCode::kConflict,
                          "Operation cannot be fulfilled on nodes \"w2\": the object has been "
                          "modified; please apply your changes to the latest version and try again",
                          409),
                    FakeApiServer::kEveryCall);
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_plan());
  const std::string first = maintenance_name(kPlan, "w1");
  auto reconciles = [&] { return server_.count("patch", node_path("w2") + "/status"); };

  ASSERT_TRUE(
      run_until("w1 Draining", [&] { return node_phase_is("w1", PlanNodePhase::kDraining); }));
  ASSERT_TRUE(server_.object(maintenance_path(first)));
  // The plan's cache has its status write; a reconcile after that decides from it.
  ASSERT_TRUE(run_until("the status write in the plan cache", [&] {
    const auto plans = controller_->plans();
    return plans.size() == 1 && entry(plans[0], "w1") != nullptr &&
           entry(plans[0], "w1")->phase == PlanNodePhase::kDraining;
  }));
  const std::size_t seen = reconciles();
  ASSERT_TRUE(run_until("another reconcile", [&] { return reconciles() > seen; }));
  // The precondition: the NodeMaintenance cache still has not seen the maintenance.
  ASSERT_EQ(cache_.informer<NodeMaintenance>("NodeMaintenances").store()->size(), 0U);
  ASSERT_EQ(server_.waiting(), 1U) << "the NodeMaintenance watch is not the one call held";

  MaintenancePlan running = *plan();
  ASSERT_NE(entry(running, "w1"), nullptr);
  EXPECT_EQ(text(running.status.phase), "Running") << running.status.message;
  EXPECT_EQ(text(entry(running, "w1")->phase), "Draining") << entry(running, "w1")->message;
  EXPECT_EQ(running.status.failed, 0);
  EXPECT_EQ(kube::find_condition(running.status.conditions, kStoppedCondition), nullptr);
  EXPECT_TRUE(server_.object(maintenance_path(first)));
  const std::vector<std::string> reasons = plan_event_reasons();
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "NodeFailed"), 0);

  // The watch catches up: the cache takes over from the plan's memory of its create.
  server_.release();
  ASSERT_TRUE(run_until("the maintenance in the cache", [&] {
    return cache_.informer<NodeMaintenance>("NodeMaintenances").store()->size() == 1;
  }));
  const std::size_t caught_up = reconciles();
  ASSERT_TRUE(run_until("another reconcile", [&] { return reconciles() > caught_up; }));
  running = *plan();
  ASSERT_NE(entry(running, "w1"), nullptr);
  EXPECT_EQ(text(running.status.phase), "Running") << running.status.message;
  EXPECT_EQ(text(entry(running, "w1")->phase), "Draining") << entry(running, "w1")->message;
}

// The steering taint (docs/design.md §10, "Steering"): while the plan runs, the nodes it takes
// later carry it; each node's taint goes before its NodeMaintenance is created, and the taint of
// another tool beside ours is left as it is.
TEST_F(PlanControllerShellTest, TheNodesThePlanTakesLaterAreTaintedUntilTheirTurn) {
  server_.put(node_object("w1", "boot-1"));
  server_.put(node_object("w2", "boot-1", json::array{kured_taint()}));
  server_.put(node_object("w3", "boot-1"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_plan({"w1", "w2", "w3"}));

  ASSERT_TRUE(run_until("w2 and w3 tainted", [&] {
    return taints_of(server_, "w2") == std::vector<std::string>{kKured, kSteered} &&
           taints_of(server_, "w3") == std::vector<std::string>{kSteered};
  }));
  ASSERT_TRUE(
      run_until("w1 Draining", [&] { return node_phase_is("w1", PlanNodePhase::kDraining); }));
  // The first node's turn came at the plan's first decision: it was never tainted.
  EXPECT_TRUE(taints_of(server_, "w1").empty());
  EXPECT_TRUE(taint_patches("w1").empty());

  // What w2 carries when its NodeMaintenance is created.
  std::optional<std::vector<std::string>> at_create;
  server_.before_next("create", maintenances_path(), [&] { at_create = taints_of(server_, "w2"); });
  ASSERT_NO_FATAL_FAILURE(write_maintenance_phase(maintenance_name(kPlan, "w1"), "Succeeded"));
  ASSERT_TRUE(run_until("w1 InMaintenance",
                        [&] { return node_phase_is("w1", PlanNodePhase::kInMaintenance); }));
  server_.put(node_object("w1", "boot-2"));
  ASSERT_TRUE(
      run_until("w2 Draining", [&] { return node_phase_is("w2", PlanNodePhase::kDraining); }));
  ASSERT_TRUE(at_create.has_value()) << "w2's NodeMaintenance was not created";
  EXPECT_EQ(*at_create, std::vector<std::string>{kKured});
  const std::size_t create = first_request([](const kube::testing::FakeRequest& request) {
    return request.verb == "create" && string_at(request.body, "/spec/nodeName") == "w2";
  });
  const std::vector<std::size_t> patches = taint_patches("w2");
  ASSERT_EQ(patches.size(), 2U) << "one to taint w2, one to take the taint off";
  EXPECT_LT(patches[1], create);
  EXPECT_EQ(taints_of(server_, "w2"), std::vector<std::string>{kKured});
  EXPECT_EQ(taints_of(server_, "w3"), std::vector<std::string>{kSteered});
}

// A deleted plan takes its taints off before its finalizer goes, retrying a write that lost a
// race (the NodeMaintenance controller's cordon changed the node's taints since the read).
TEST_F(PlanControllerShellTest, ADeletedPlanTakesItsTaintsOffBeforeItsFinalizerGoes) {
  server_.put(node_object("w1", "boot-1"));
  server_.put(node_object("w2", "boot-1", json::array{kured_taint()}));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_plan());
  ASSERT_TRUE(
      run_until("w1 Draining", [&] { return node_phase_is("w1", PlanNodePhase::kDraining); }));
  ASSERT_TRUE(run_until("w2 tainted", [&] {
    return taints_of(server_, "w2") == std::vector<std::string>{kKured, kSteered};
  }));

  server_.fail_next("patch", node_path("w2"),
                    Error(ErrorCode::kInvalid,
                          "the server rejected our request due to an error in our request", 422));
  const std::size_t before = server_.requests().size();
  ASSERT_NO_FATAL_FAILURE(delete_plan());
  ASSERT_TRUE(run_until("the plan gone", [&] { return !server_.object(plan_path()); }));

  EXPECT_EQ(taints_of(server_, "w2"), std::vector<std::string>{kKured});
  std::vector<std::size_t> removals = taint_patches("w2");
  std::erase_if(removals, [&](std::size_t index) { return index < before; });
  ASSERT_EQ(removals.size(), 2U) << "the refused removal, then the one that went through";
  const std::size_t finalizer = first_request(
      [](const kube::testing::FakeRequest& request) {
        return request.verb == "patch" && request.path == plan_path();
      },
      before);
  ASSERT_LT(finalizer, server_.requests().size()) << "no finalizer removal";
  EXPECT_LT(removals[1], finalizer);
}

// The sweep: at start, a taint of ours that no plan wants (a plan deleted while the operator was
// down and its finalizer removed by hand) goes; so does a plan's once the plan leaves without its
// finalizer's cleanup. Another tool's PreferNoSchedule taint is never touched.
TEST_F(PlanControllerShellTest, TheSweepTakesOffTheTaintsNoPlanWants) {
  server_.put(node_object("w1", "boot-1"));
  server_.put(node_object("w2", "boot-1"));
  server_.put(node_object("w8", "boot-1", json::array{kured_taint(), steering_taint()}));
  server_.put(node_object("w9", "boot-1", json::array{kured_taint()}));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_TRUE(run_until("the orphan taint off w8", [&] {
    return taints_of(server_, "w8") == std::vector<std::string>{kKured};
  }));

  ASSERT_NO_FATAL_FAILURE(create_plan());
  ASSERT_TRUE(run_until("w2 tainted", [&] {
    return taints_of(server_, "w2") == std::vector<std::string>{kSteered};
  }));
  // The plan goes without its cleanup, as when its finalizer is removed by hand.
  ASSERT_TRUE(server_.erase(plan_path()));
  ASSERT_TRUE(run_until("the taint off w2", [&] { return taints_of(server_, "w2").empty(); }));

  EXPECT_EQ(taints_of(server_, "w9"), std::vector<std::string>{kKured});
  EXPECT_TRUE(taint_patches("w9").empty());
  EXPECT_EQ(taint_patches("w8").size(), 1U);
}

// --plan-steering-taint=false: nothing is tainted, and ours, left by an earlier run, goes.
TEST_F(PlanControllerShellTest, TurnedOffItTaintsNothingAndTakesOursOff) {
  server_.put(node_object("w1", "boot-1"));
  server_.put(node_object("w2", "boot-1", json::array{steering_taint(), kured_taint()}));
  server_.put(node_object("w3", "boot-1", json::array{steering_taint()}));
  PlanControllerOptions options;
  options.steering_taint = false;
  ASSERT_NO_FATAL_FAILURE(start(std::move(options)));
  ASSERT_NO_FATAL_FAILURE(create_plan({"w1", "w2"}));
  ASSERT_TRUE(
      run_until("w1 Draining", [&] { return node_phase_is("w1", PlanNodePhase::kDraining); }));
  ASSERT_TRUE(run_until("ours off w2 and w3", [&] {
    return taints_of(server_, "w2") == std::vector<std::string>{kKured} &&
           taints_of(server_, "w3").empty();
  }));
  EXPECT_TRUE(node_phase_is("w2", PlanNodePhase::kWaiting));
  EXPECT_TRUE(taints_of(server_, "w1").empty());
  EXPECT_TRUE(taint_patches("w1").empty());
  EXPECT_EQ(taint_patches("w2").size(), 1U);
  EXPECT_EQ(taint_patches("w3").size(), 1U);
}

}  // namespace
}  // namespace nmo::op::fleet
