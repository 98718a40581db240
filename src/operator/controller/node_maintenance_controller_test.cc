// The NodeMaintenance controller's I/O shell (operator.h) against the in-memory API server
// (kube/client/testing/fake_api_server.h): the whole controller on one io_context with the shared
// Cache, as the manager runs it, and the outcomes an admin would see in the API (node, pods,
// status, Leases, Events). The decisions themselves are state_machine_test.cc's; these tests
// check that the reconcile carries them out, reads from the cache, and survives the API
// misbehaving the way it did in the runs that found commits 2004f61 and 9e60a53.
#include "operator/controller/node_maintenance_controller.h"

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
#include "kube/api/pod.h"
#include "kube/api/resource.h"
#include "kube/client/testing/fake_api_server.h"
#include "operator/api/node_maintenance.h"
#include "operator/controller/state_machine.h"
#include "operator/gates/budget.h"
#include "operator/gates/node_lease.h"
#include "operator/kubevirt/vm_policy.h"
#include "operator/node/node_patch.h"
#include "operator/testing/fake_cluster_json.h"
#include "runtime/cache.h"

namespace nmo::op {
namespace {

namespace json = boost::json;
using kube::testing::FakeApiServer;
using kube::testing::FakeRequest;
using testing::at;
using testing::maintenance_path;
using testing::maintenances_path;
using testing::node_path;
using testing::string_at;
using testing::text;
using namespace std::chrono_literals;

constexpr std::string_view kLeaseNamespace = "medik8s-leases";
constexpr std::string_view kOperatorNamespace = "node-maintenance-operator-system";
constexpr std::string_view kAppNamespace = "shop";

// ---- objects as the tests seed them ----

json::value node_object(const std::string& name) {
  return json::value{{"apiVersion", "v1"},
                     {"kind", "Node"},
                     {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
                     {"spec", json::object{}},
                     {"status",
                      {{"conditions", json::array{{{"type", "Ready"}, {"status", "True"}}}},
                       {"nodeInfo", {{"bootID", "boot-1"}}}}}};
}

json::value pod_object(const std::string& name, const std::string& node,
                       json::array owners = json::array{}) {
  return json::value{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"namespace", kAppNamespace},
        {"name", name},
        {"labels", {{"app", "db"}}},
        {"ownerReferences", std::move(owners)}}},
      {"spec", {{"nodeName", node}, {"containers", json::array{{{"name", "c"}, {"image", "i"}}}}}},
      {"status", {{"phase", "Running"}}}};
}

json::value daemon_set_object(const std::string& name) {
  return json::value{{"apiVersion", "apps/v1"},
                     {"kind", "DaemonSet"},
                     {"metadata", {{"namespace", kAppNamespace}, {"name", name}}},
                     {"spec", {{"selector", {{"matchLabels", {{"app", name}}}}}}}};
}

// A budget of the app's pods that allows no disruption (as in docs/design.md §8, S2).
json::value budget_object(const std::string& name) {
  return json::value{
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"namespace", kAppNamespace}, {"name", name}}},
      {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "db"}}}}}}},
      {"status",
       {{"currentHealthy", 1},
        {"desiredHealthy", 1},
        {"disruptionsAllowed", 0},
        {"expectedPods", 1}}}};
}

// ---- paths ----

std::string pod_path(std::string_view name) {
  return kube::object_path<kube::Pod>(kAppNamespace, name);
}
std::string node_leases_path() { return kube::collection_path<kube::Lease>(kLeaseNamespace); }
std::string node_lease_path(std::string_view node) {
  return kube::object_path<kube::Lease>(kLeaseNamespace, node_lease_name(node));
}

// ---- reading the fake's JSON ----

bool has_taint(const json::value& node, std::string_view key, std::string_view effect) {
  const json::value* taints = at(node, "/spec/taints");
  if (taints == nullptr || !taints->is_array()) return false;
  return std::any_of(taints->as_array().begin(), taints->as_array().end(), [&](const auto& t) {
    return string_at(t, "/key") == key && string_at(t, "/effect") == effect;
  });
}

bool unschedulable(const json::value& node) {
  const json::value* flag = at(node, "/spec/unschedulable");
  return flag != nullptr && flag->is_bool() && flag->as_bool();
}

std::string annotation(const json::value& object, std::string_view key) {
  const json::value* annotations = at(object, "/metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return {};
  const json::value* found = annotations->as_object().if_contains(key);
  return found != nullptr && found->is_string() ? std::string(found->as_string()) : std::string();
}

// Whether `request` is the JSON patch that takes our finalizer off a NodeMaintenance
// (runtime/finalizer.h: a `test` of the finalizer, then its `remove`).
bool removes_finalizer(const FakeRequest& request) {
  if (request.verb != "patch" || !request.body.is_array()) return false;
  return std::any_of(request.body.as_array().begin(), request.body.as_array().end(),
                     [](const json::value& op) {
                       return string_at(op, "/op") == "remove" &&
                              string_at(op, "/path").starts_with("/metadata/finalizers/");
                     });
}

// Whether `request` is the JSON patch that puts our finalizer on a NodeMaintenance.
bool adds_finalizer(const FakeRequest& request) {
  if (request.verb != "patch" || !request.body.is_array()) return false;
  return std::any_of(request.body.as_array().begin(), request.body.as_array().end(),
                     [](const json::value& op) {
                       return string_at(op, "/op") == "add" &&
                              string_at(op, "/path").starts_with("/metadata/finalizers");
                     });
}

class OperatorShellTest : public ::testing::Test {
 protected:
  OperatorShellTest() {
    // No KubeVirt in these clusters: its API group is not served (the fake would serve any).
    server_.fail_next(
        "*", "/apis/kubevirt.io",
        Error(ErrorCode::kNotFound, "the server could not find the requested resource", 404),
        FakeApiServer::kEveryCall);
  }

  void TearDown() override {
    // A held or delayed call would keep a reflector from stopping.
    server_.clear_faults();
    http::test::run(io_, [this]() -> asio::awaitable<bool> {
      if (operator_ != nullptr) co_await operator_->stop();
      co_await cache_.stop();
      co_return true;
    }());
    io_.restart();
    io_.poll();
  }

  // One worker, so that reconciles run one at a time; the etcd quorum gate (kube-system's etcd
  // pods, OpenShift's guard) is left to state_machine_test.cc.
  static OperatorOptions options() {
    OperatorOptions options;
    options.workers = 1;
    options.etcd_quorum_check = false;
    return options;
  }

  // Starts the cache and the operator (start() returns once its caches synced).
  void start(OperatorOptions options = OperatorShellTest::options()) {
    operator_ = std::make_unique<NodeMaintenanceController>(io_.get_executor(), server_, cache_,
                                                            std::move(options));
    const Result<void> started = http::test::run(io_, [this]() -> asio::awaitable<Result<void>> {
      NMO_CO_TRY(co_await cache_.start());
      co_return co_await operator_->start();
    }());
    ASSERT_OK(started);
    ASSERT_TRUE(operator_->ready());
  }

  // Runs the io_context until `condition` holds; false (and a test failure naming `what`)
  // after `limit`.
  [[nodiscard]] bool run_until(std::string_view what, const std::function<bool()>& condition,
                               std::chrono::seconds limit = 10s) {
    if (http::test::run_until(io_, condition, limit)) return true;
    ADD_FAILURE() << what << ": not reached in " << limit.count() << " s";
    return false;
  }

  // Creates the NodeMaintenance `name` of `node` through the API, as kubectl would.
  void create_maintenance(const std::string& name, const std::string& node) {
    json::value body{{"apiVersion", kApiVersion},
                     {"kind", kKind},
                     {"metadata", {{"name", name}}},
                     {"spec", {{"nodeName", node}, {"reason", "firmware upgrade"}}}};
    std::string path = maintenances_path();
    ASSERT_OK(http::test::run(io_, server_.create(std::move(path), std::move(body), {})));
  }

  void delete_maintenance(const std::string& name) {
    std::string path = maintenance_path(name);
    ASSERT_OK(http::test::run(io_, server_.remove(std::move(path), {})));
  }

  // The NodeMaintenance as stored; std::nullopt once it is gone.
  std::optional<NodeMaintenance> maintenance(std::string_view name) const {
    auto stored = server_.object(maintenance_path(name));
    if (!stored) return std::nullopt;
    Result<NodeMaintenance> decoded = decode_node_maintenance(*stored);
    EXPECT_OK(decoded);
    if (!decoded) return std::nullopt;
    return std::move(decoded).value();
  }

  std::optional<Phase> phase(std::string_view name) const {
    auto nm = maintenance(name);
    return nm ? nm->status.phase : std::nullopt;
  }

  // The reasons of the Events about the NodeMaintenance `name` written so far.
  std::vector<std::string> event_reasons(std::string_view name) const {
    std::vector<std::string> reasons;
    for (const json::value& event : server_.objects("/api/v1/events")) {
      if (string_at(event, "/involvedObject/kind") == kKind &&
          string_at(event, "/involvedObject/name") == name) {
        reasons.push_back(string_at(event, "/reason"));
      }
    }
    return reasons;
  }

  bool has_event(std::string_view name, std::string_view reason) const {
    const std::vector<std::string> reasons = event_reasons(name);
    return std::find(reasons.begin(), reasons.end(), reason) != reasons.end();
  }

  // Where the first received call satisfying `matches` is in the request log.
  std::optional<std::size_t> first_request(
      const std::function<bool(const FakeRequest&)>& matches) const {
    const auto& log = server_.requests();
    const auto found = std::find_if(log.begin(), log.end(), matches);
    if (found == log.end()) return std::nullopt;
    return static_cast<std::size_t>(found - log.begin());
  }

  // Drains w1 (no pods) with the node lease renewed every second, until m1 Succeeded.
  void succeed_renewing_every_second() {
    server_.put(node_object("w1"));
    OperatorOptions renewing = options();
    renewing.node_lease_renew_interval = 1s;
    ASSERT_NO_FATAL_FAILURE(start(std::move(renewing)));
    ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
    ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  }

  // The node lease cache the operator declared (declared again, the Cache gives the same one).
  runtime::Reflector<kube::Lease>& node_lease_cache() {
    return cache_.informer<kube::Lease>("node leases", std::string(kLeaseNamespace));
  }

  // Drains w1 (no pods) with the node lease cache held behind: its watch never opens, so the
  // cache never shows the Lease the maintenance creates (as during run 20's API server
  // restart). Then deletes the maintenance and waits until it is gone.
  void drain_and_delete_while_the_lease_cache_lags() {
    server_.put(node_object("w1"));
    server_.hold("watch", node_leases_path());
    ASSERT_NO_FATAL_FAILURE(start());
    ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
    ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
    auto lease = server_.object(node_lease_path("w1"));
    ASSERT_TRUE(lease) << "the node lease was not taken";
    ASSERT_EQ(string_at(*lease, "/spec/holderIdentity"), kNodeLeaseHolder);
    // The precondition of the defect: the operator's lease cache does not show its own Lease.
    ASSERT_EQ(
        node_lease_cache().store()->get(std::string(kLeaseNamespace) + "/" + node_lease_name("w1")),
        nullptr);
    ASSERT_EQ(server_.waiting(), 1U) << "the lease watch is not the one call held";

    ASSERT_NO_FATAL_FAILURE(delete_maintenance("m1"));
    ASSERT_TRUE(run_until("m1 gone", [&] { return !server_.object(maintenance_path("m1")); }));
  }

  asio::io_context io_;
  FakeApiServer server_{io_.get_executor()};
  runtime::Cache cache_{io_.get_executor(), server_};
  std::unique_ptr<NodeMaintenanceController> operator_;
};

// docs/design.md §2.1–2.6 end to end through the shell: cordon and taint, the node lease, the
// evictions, Succeeded; then the deletion gives everything back before the finalizer goes.
TEST_F(OperatorShellTest, DrainsTheNodeThenGivesItBackWhenDeleted) {
  server_.put(node_object("w1"));
  server_.put(node_object("w2"));
  const json::value agent = server_.put(daemon_set_object("agent"));
  server_.put(pod_object("web-1", "w1"));
  server_.put(pod_object("web-2", "w2"));
  server_.put(pod_object("agent-w1", "w1",
                         json::array{{{"apiVersion", "apps/v1"},
                                      {"kind", "DaemonSet"},
                                      {"name", "agent"},
                                      {"uid", string_at(agent, "/metadata/uid")},
                                      {"controller", true}}}));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));

  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  const NodeMaintenance drained = *maintenance("m1");
  EXPECT_EQ(drained.status.total_pods, 1);
  EXPECT_EQ(drained.status.eviction_pods, 1);
  EXPECT_EQ(drained.status.drain_progress, 100);
  EXPECT_TRUE(drained.status.pending_pods.empty());
  EXPECT_EQ(drained.status.last_error, "");
  EXPECT_NE(std::find(drained.meta.finalizers.begin(), drained.meta.finalizers.end(), kFinalizer),
            drained.meta.finalizers.end());

  // The node: cordoned, both NoSchedule taints, the prior state recorded; w2 untouched.
  const json::value node = *server_.object(node_path("w1"));
  EXPECT_TRUE(unschedulable(node)) << node;
  EXPECT_TRUE(has_taint(node, kDrainTaintKey, kNoScheduleEffect)) << node;
  EXPECT_TRUE(has_taint(node, kUnschedulableTaintKey, kNoScheduleEffect)) << node;
  EXPECT_NE(annotation(node, kPriorStateAnnotation), "") << node;
  const json::value other = *server_.object(node_path("w2"));
  EXPECT_FALSE(unschedulable(other)) << other;
  EXPECT_FALSE(has_taint(other, kDrainTaintKey, kNoScheduleEffect)) << other;

  // The pods: the evictable one evicted, the DaemonSet's and the other node's left alone.
  EXPECT_FALSE(server_.object(pod_path("web-1")));
  EXPECT_TRUE(server_.object(pod_path("agent-w1")));
  EXPECT_TRUE(server_.object(pod_path("web-2")));
  EXPECT_EQ(server_.count("evict", "/api/v1/namespaces/shop/pods/web-1"), 1U);
  EXPECT_EQ(server_.count("evict"), 1U);

  // The medik8s node lease (docs/design.md §3.1), owned by the node.
  const auto lease = server_.object(node_lease_path("w1"));
  ASSERT_TRUE(lease);
  EXPECT_EQ(string_at(*lease, "/spec/holderIdentity"), kNodeLeaseHolder);
  const json::value* duration = at(*lease, "/spec/leaseDurationSeconds");
  ASSERT_TRUE(duration != nullptr && duration->is_int64()) << *lease;
  EXPECT_EQ(duration->as_int64(), kNodeLeaseDurationSeconds);
  EXPECT_EQ(string_at(*lease, "/metadata/ownerReferences/0/kind"), "Node");
  EXPECT_EQ(string_at(*lease, "/metadata/ownerReferences/0/name"), "w1");
  EXPECT_EQ(server_.objects(kube::collection_path<kube::Lease>(kOperatorNamespace)).size(), 1U)
      << "no budget slot Lease";

  // The Events of docs/design.md §5, written once their status is on record.
  EXPECT_TRUE(run_until("SucceedMaintenance announced",
                        [&] { return has_event("m1", "SucceedMaintenance"); }));
  for (const char* reason : {"BeginMaintenance", "LeaseAcquired", "BeginEviction"}) {
    EXPECT_TRUE(has_event("m1", reason)) << "no " << reason << " Event";
  }

  ASSERT_NO_FATAL_FAILURE(delete_maintenance("m1"));
  ASSERT_TRUE(run_until("m1 gone", [&] { return !server_.object(maintenance_path("m1")); }));
  // Everything went back before the finalizer did (the object is gone only after it).
  const json::value restored = *server_.object(node_path("w1"));
  EXPECT_FALSE(unschedulable(restored)) << restored;
  EXPECT_FALSE(has_taint(restored, kDrainTaintKey, kNoScheduleEffect)) << restored;
  EXPECT_EQ(annotation(restored, kPriorStateAnnotation), "") << restored;
  EXPECT_FALSE(server_.object(node_lease_path("w1"))) << "the node lease was not released";
  EXPECT_TRUE(server_.objects(kube::collection_path<kube::Lease>(kOperatorNamespace)).empty())
      << "the budget slot was not released";
  EXPECT_TRUE(server_.object(pod_path("agent-w1")));
}

// Commit 2004f61: the deletion of a maintenance whose node lease the lease cache does not show
// (its watch lagging behind our own create) must still release the lease before removing the
// finalizer. Before it, the finalizer went and the Lease stayed, held by nobody's maintenance.
TEST_F(OperatorShellTest, DeletionReleasesTheNodeLeaseTheCacheDoesNotShow) {
  ASSERT_NO_FATAL_FAILURE(drain_and_delete_while_the_lease_cache_lags());
  EXPECT_FALSE(server_.object(node_lease_path("w1"))) << "the node lease outlived its maintenance";
  const auto lease_deleted = first_request(
      [](const FakeRequest& r) { return r.verb == "delete" && r.path == node_lease_path("w1"); });
  const auto finalizer_removed = first_request([](const FakeRequest& r) {
    return r.path == maintenance_path("m1") && removes_finalizer(r);
  });
  ASSERT_TRUE(lease_deleted.has_value()) << "the node lease was never deleted";
  ASSERT_TRUE(finalizer_removed.has_value());
  EXPECT_LT(*lease_deleted, *finalizer_removed) << "the finalizer went before the node lease";
}

// Commit 9e60a53: the lease Role in medik8s-leases grants list, watch, create, update and
// delete, but no get (docs/rbac.md). A lease missing from the cache is read with a list by
// name; with a get, every retry of the deletion was refused and the maintenance never went.
TEST_F(OperatorShellTest, DeletionReadsAnUncachedNodeLeaseWithoutGet) {
  server_.forbid("get", node_leases_path());
  ASSERT_NO_FATAL_FAILURE(drain_and_delete_while_the_lease_cache_lags());
  EXPECT_FALSE(server_.object(node_lease_path("w1"))) << "the node lease outlived its maintenance";
  EXPECT_EQ(server_.count("get", node_leases_path()), 0U);
  EXPECT_TRUE(first_request([](const FakeRequest& r) {
    return r.verb == "list" && r.path == node_leases_path() && r.list_options.has_value() &&
           r.list_options->field_selector == "metadata.name=" + node_lease_name("w1");
  })) << "the node lease was not listed by name";
}

// One informer per collection (docs/design.md §7): twenty maintenances waiting for the one
// budget slot read their nodes from the shared node cache; none opens a watch or lists.
TEST_F(OperatorShellTest, TwentyWaitingMaintenancesShareOneNodeInformer) {
  constexpr int kMaintenances = 20;
  auto name_of = [](const char* prefix, int i) {
    return std::string(prefix) + (i < 10 ? "0" : "") + std::to_string(i);
  };
  for (int i = 0; i < kMaintenances; ++i) server_.put(node_object(name_of("w", i)));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_TRUE(run_until("every informer watching",
                        [&] { return server_.open_watches() == cache_.informers(); }));
  const std::size_t watches_at_start = server_.open_watches();

  // One at a time, so that the first is admitted alone.
  for (int i = 0; i < kMaintenances; ++i) {
    ASSERT_NO_FATAL_FAILURE(create_maintenance(name_of("m", i), name_of("w", i)));
    if (i == 0) {
      ASSERT_TRUE(run_until("m00 Succeeded", [&] { return phase("m00") == Phase::kSucceeded; }));
    }
  }
  ASSERT_TRUE(run_until("the other maintenances Pending", [&] {
    for (int i = 1; i < kMaintenances; ++i) {
      if (phase(name_of("m", i)) != Phase::kPending) return false;
    }
    return true;
  }));
  EXPECT_EQ(text(phase("m00")), "Succeeded");
  EXPECT_EQ(server_.open_watches("/api/v1/nodes"), 1U);
  EXPECT_EQ(server_.count("watch", "/api/v1/nodes"), 1U);
  EXPECT_EQ(server_.count("list", "/api/v1/nodes"), 1U);
  EXPECT_EQ(server_.count("list", maintenances_path()), 1U);
  // The one node being drained has its pods watched; the waiting ones nothing of their own.
  EXPECT_EQ(server_.open_watches("/api/v1/pods"), 1U);
  EXPECT_EQ(server_.open_watches(), watches_at_start + 1);
}

// Status writes while a PodDisruptionBudget refuses an eviction (docs/design.md §2.4, S2): the
// pod is pending with BlockedByPDB and the budget's message, the maintenance stays Running and
// the pod stays; once an eviction is allowed the drain finishes and the error goes.
TEST_F(OperatorShellTest, APodBlockedByItsBudgetIsReportedUntilItIsAllowed) {
  server_.put(node_object("w1"));
  server_.put(pod_object("db-0", "w1"));
  server_.put(budget_object("db-pdb"));
  // The first eviction is refused, the retry (after the 5 s backoff) allowed.
  server_.fail_next("evict", pod_path("db-0"), FakeApiServer::pdb_refusal("db-pdb"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));

  ASSERT_TRUE(run_until("db-0 BlockedByPDB in the status", [&] {
    const auto nm = maintenance("m1");
    return nm && std::any_of(nm->status.pending_pods_refs.begin(),
                             nm->status.pending_pods_refs.end(), [](const PendingPodRef& ref) {
                               return ref.name == "db-0" &&
                                      ref.reason == PendingPodReason::kBlockedByPdb;
                             });
  }));
  const NodeMaintenance held = *maintenance("m1");
  EXPECT_EQ(text(held.status.phase), "Running");
  EXPECT_EQ(held.status.pending_pods, std::vector<std::string>{"db-0"});
  ASSERT_EQ(held.status.pending_pods_refs.size(), 1U);
  EXPECT_EQ(held.status.pending_pods_refs[0].namespace_, kAppNamespace);
  EXPECT_TRUE(held.status.pending_pods_refs[0].message.starts_with("PDB shop/db-pdb:"))
      << held.status.pending_pods_refs[0].message;
  EXPECT_NE(held.status.last_error, "");
  EXPECT_EQ(held.status.eviction_pods, 0);
  EXPECT_TRUE(server_.object(pod_path("db-0"))) << "the protected pod was evicted";
  EXPECT_TRUE(run_until("DrainError announced", [&] { return has_event("m1", "DrainError"); }));

  ASSERT_TRUE(run_until("m1 Succeeded once the eviction is allowed",
                        [&] { return phase("m1") == Phase::kSucceeded; }));
  const NodeMaintenance done = *maintenance("m1");
  EXPECT_TRUE(done.status.pending_pods.empty());
  EXPECT_TRUE(done.status.pending_pods_refs.empty());
  EXPECT_EQ(done.status.last_error, "");
  EXPECT_EQ(done.status.eviction_pods, 1);
  EXPECT_FALSE(server_.object(pod_path("db-0")));
  EXPECT_EQ(server_.count("evict", pod_path("db-0")), 2U);
}

// A metrics backend that counts what the operator reports.
class CountingMetrics : public OperatorMetrics {
 public:
  void on_drain_completed(std::chrono::nanoseconds /*took*/) override { ++drains_completed; }
  void on_migration(std::string_view result) override { migrations.emplace_back(result); }
  void on_budget_retry(std::chrono::nanoseconds /*after_allowed*/) override { ++budget_retries; }
  int drains_completed = 0;
  int budget_retries = 0;
  std::vector<std::string> migrations;  // the results reported, in order
};

// docs/design.md §2.4: a pod its budget refused is evicted again as soon as the budget, changed
// since, allows a disruption; the refusal's backoff (5 s) is only the fallback. The metric says
// the retry came from the budget.
TEST_F(OperatorShellTest, ARefusedPodIsEvictedAgainWhenItsBudgetAllows) {
  server_.put(node_object("w1"));
  server_.put(pod_object("db-0", "w1"));
  server_.put(budget_object("db-pdb"));
  server_.fail_next("evict", pod_path("db-0"), FakeApiServer::pdb_refusal("db-pdb"));
  auto metrics = std::make_shared<CountingMetrics>();
  OperatorOptions counted = options();
  counted.metrics = metrics;
  ASSERT_NO_FATAL_FAILURE(start(std::move(counted)));
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("the refusal announced", [&] { return has_event("m1", "DrainError"); }));
  ASSERT_EQ(server_.count("evict", pod_path("db-0")), 1U);

  json::value allowing = budget_object("db-pdb");
  allowing.at("status").as_object()["disruptionsAllowed"] = 1;
  allowing.at("status").as_object()["observedGeneration"] = 1;  // of the current spec
  server_.put(std::move(allowing));
  ASSERT_TRUE(run_until("db-0 evicted again", [&] { return !server_.object(pod_path("db-0")); }));
  EXPECT_EQ(metrics->budget_retries, 1);
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  EXPECT_EQ(server_.count("evict", pod_path("db-0")), 2U);
}

// A stopping controller lets an eviction in flight finish before the client goes (the manager
// shuts it down after stop()): cut off after the API server granted it, it would leave a
// disruption its budget counts for two minutes (docs/design.md §2.4).
TEST_F(OperatorShellTest, AStoppingControllerLetsItsEvictionsInFlightFinish) {
  server_.put(node_object("w1"));
  server_.put(pod_object("web-1", "w1"));
  server_.set_latency("evict", pod_path("web-1"), 300ms);
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("the eviction sent",
                        [&] { return server_.count("evict", pod_path("web-1")) == 1; }));
  http::test::run(io_, [this]() -> asio::awaitable<bool> {
    co_await operator_->stop();
    co_return true;
  }());
  server_.shutdown();
  EXPECT_FALSE(server_.object(pod_path("web-1"))) << "the eviction was cut off";
}

// ---- the handlers of actions.h that have behaviour of their own ----

// AddFinalizer: a conflict (the object changed since the cache showed it) is not an error with
// its millisecond backoff; the reconcile comes back after kConflictRetry. Two conflicts: the
// third patch, which adds the finalizer, comes a pause after the first at the earliest (a wake
// queued while the first ran may bring the second at once).
TEST_F(OperatorShellTest, AConflictingFinalizerPatchIsRetriedAfterTheConflictPause) {
  server_.put(node_object("w1"));
  server_.fail_next("patch", maintenance_path("m1"),
                    Error(ErrorCode::kConflict, "the object has been modified", 409), 2);
  ASSERT_NO_FATAL_FAILURE(start());
  const auto finalizer_patches = [&] {
    return std::count_if(
        server_.requests().begin(), server_.requests().end(),
        [](const FakeRequest& r) { return r.path == maintenance_path("m1") && adds_finalizer(r); });
  };
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("the first finalizer patch", [&] { return finalizer_patches() == 1; }));
  const auto refused_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_until("the third finalizer patch", [&] { return finalizer_patches() == 3; }));
  EXPECT_GE(std::chrono::steady_clock::now() - refused_at, kConflictRetry - 50ms);
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  const NodeMaintenance done = *maintenance("m1");
  EXPECT_EQ(std::count(done.meta.finalizers.begin(), done.meta.finalizers.end(), kFinalizer), 1);
  EXPECT_EQ(finalizer_patches(), 3);
}

// WriteStatus: when the write fails, the Events announcing its status go with the next write
// that carries it, once: BeginMaintenance is sent after Pending is on record, and only then.
TEST_F(OperatorShellTest, AFailedStatusWriteSendsItsAnnouncementsWithTheNextWrite) {
  server_.put(node_object("w1"));
  const std::string status_path = maintenance_path("m1") + "/status";
  server_.fail_next("patch", status_path, Error(ErrorCode::kInternal, "etcdserver: timeout", 500));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  ASSERT_TRUE(run_until("SucceedMaintenance announced",
                        [&] { return has_event("m1", "SucceedMaintenance"); }));

  const std::vector<std::string> reasons = event_reasons("m1");
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "BeginMaintenance"), 1);
  const auto& log = server_.requests();
  const auto status_patch = [&](std::size_t from) {
    return std::find_if(
        log.begin() + static_cast<std::ptrdiff_t>(from), log.end(),
        [&](const FakeRequest& r) { return r.verb == "patch" && r.path == status_path; });
  };
  const auto refused = status_patch(0);
  ASSERT_NE(refused, log.end());
  const auto written = status_patch(static_cast<std::size_t>(refused - log.begin()) + 1);
  ASSERT_NE(written, log.end()) << "the status was never written again";
  const auto announced = first_request([](const FakeRequest& r) {
    return r.verb == "create" && string_at(r.body, "/reason") == "BeginMaintenance";
  });
  ASSERT_TRUE(announced.has_value());
  EXPECT_GT(*announced, static_cast<std::size_t>(written - log.begin()))
      << "BeginMaintenance went out before its status was on record";
}

// TakeNodeLease: an admission whose node lease cannot be taken gives its budget slot back, so
// that it holds no slot while it waits; the next try takes both.
TEST_F(OperatorShellTest, AFailedNodeLeaseGivesTheSlotBack) {
  server_.put(node_object("w1"));
  server_.fail_next("create", node_leases_path(),
                    Error(ErrorCode::kInternal, "etcdserver: timeout", 500));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));

  const std::string slots = kube::collection_path<kube::Lease>(kOperatorNamespace);
  const auto lease_refused = first_request(
      [](const FakeRequest& r) { return r.verb == "create" && r.path == node_leases_path(); });
  const auto slot_given_back = first_request(
      [&](const FakeRequest& r) { return r.verb == "delete" && r.path.starts_with(slots + "/"); });
  ASSERT_TRUE(lease_refused.has_value());
  ASSERT_TRUE(slot_given_back.has_value()) << "the slot was kept while the node lease failed";
  EXPECT_GT(*slot_given_back, *lease_refused);
  EXPECT_EQ(server_.objects(slots).size(), 1U) << "the slot was not taken again";
  EXPECT_TRUE(server_.object(node_lease_path("w1")));
}

// The Events about the object of `kind` named `name`, as stored.
std::vector<json::value> events_about(const FakeApiServer& server, std::string_view kind,
                                      std::string_view name) {
  std::vector<json::value> found;
  for (const json::value& event : server.objects("/api/v1/events")) {
    if (string_at(event, "/involvedObject/kind") == kind &&
        string_at(event, "/involvedObject/name") == name) {
      found.push_back(event);
    }
  }
  return found;
}

// Cordon: a conflict (the node changed since it was read) is not an error with its millisecond
// backoff; the reconcile comes back after kConflictRetry. The node of a Succeeded maintenance is
// uncordoned behind its back, and the re-applying patch conflicts twice: the third patch, which
// cordons and taints the node again, comes a pause after the first at the earliest (the node's
// change may bring the second at once), and MaintenanceReapplied is said once, by the patch that
// changed the node.
TEST_F(OperatorShellTest, AConflictingCordonIsRetriedAfterTheConflictPause) {
  server_.put(node_object("w1"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  const auto cordon_patches = [&] {
    return std::count_if(
        server_.requests().begin(), server_.requests().end(),
        [](const FakeRequest& r) { return r.verb == "patch" && r.path == node_path("w1"); });
  };
  server_.clear_requests();
  server_.fail_next("patch", node_path("w1"),
                    Error(ErrorCode::kConflict, "the object has been modified", 409), 2);
  server_.put(node_object("w1"));  // uncordoned, untainted, unlabelled
  ASSERT_TRUE(run_until("the first cordon patch", [&] { return cordon_patches() == 1; }));
  const auto refused_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_until("the third cordon patch", [&] { return cordon_patches() == 3; }));
  EXPECT_GE(std::chrono::steady_clock::now() - refused_at, kConflictRetry - 50ms);
  ASSERT_TRUE(run_until("the node cordoned again",
                        [&] { return unschedulable(*server_.object(node_path("w1"))); }));
  const json::value node = *server_.object(node_path("w1"));
  EXPECT_TRUE(has_taint(node, kDrainTaintKey, kNoScheduleEffect)) << node;
  EXPECT_EQ(cordon_patches(), 3);
  ASSERT_TRUE(run_until("MaintenanceReapplied written",
                        [&] { return has_event("m1", "MaintenanceReapplied"); }));
  const std::vector<std::string> reasons = event_reasons("m1");
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "MaintenanceReapplied"), 1);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "NodeCordoned"), 1);
  EXPECT_EQ(phase("m1"), Phase::kSucceeded);
}

// RestoreNode: a conflict while the deletion gives the node back brings the reconcile back after
// kConflictRetry; the node is uncordoned before the finalizer goes, and the UncordonNode Event
// (EmitEvent about the Node) names the node.
TEST_F(OperatorShellTest, AConflictingRestoreIsRetriedBeforeTheFinalizerGoes) {
  const json::value w1 = server_.put(node_object("w1"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  server_.clear_requests();
  // Two conflicts: a wake queued while the first ran may bring the second at once.
  server_.fail_next("patch", node_path("w1"),
                    Error(ErrorCode::kConflict, "the object has been modified", 409), 2);
  const auto deleted_at = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(delete_maintenance("m1"));
  ASSERT_TRUE(run_until("m1 gone", [&] { return !server_.object(maintenance_path("m1")); }));
  EXPECT_GE(std::chrono::steady_clock::now() - deleted_at, kConflictRetry - 50ms);

  const json::value restored = *server_.object(node_path("w1"));
  EXPECT_FALSE(unschedulable(restored)) << restored;
  EXPECT_FALSE(has_taint(restored, kDrainTaintKey, kNoScheduleEffect)) << restored;
  const auto& log = server_.requests();
  const auto node_patches = std::count_if(log.begin(), log.end(), [](const FakeRequest& r) {
    return r.verb == "patch" && r.path.starts_with(node_path("w1"));
  });
  EXPECT_GE(node_patches, 3) << "the refused node patches were not tried again";
  const auto last_node_patch = std::find_if(log.rbegin(), log.rend(), [](const FakeRequest& r) {
    return r.verb == "patch" && r.path == node_path("w1");
  });
  const auto finalizer_removed = first_request([](const FakeRequest& r) {
    return r.path == maintenance_path("m1") && removes_finalizer(r);
  });
  ASSERT_NE(last_node_patch, log.rend());
  ASSERT_TRUE(finalizer_removed.has_value());
  EXPECT_LT(static_cast<std::size_t>(log.rend() - last_node_patch) - 1, *finalizer_removed)
      << "the finalizer went before the node was given back";

  ASSERT_TRUE(run_until("UncordonNode on the Node",
                        [&] { return !events_about(server_, "Node", "w1").empty(); }));
  const std::vector<json::value> about_node = events_about(server_, "Node", "w1");
  ASSERT_EQ(about_node.size(), 1U);
  EXPECT_EQ(string_at(about_node[0], "/reason"), "UncordonNode");
  EXPECT_EQ(string_at(about_node[0], "/involvedObject/uid"), string_at(w1, "/metadata/uid"));
}

// TakeSlot: a failed create of the budget slot Lease stops the admission before the node lease
// is asked for; the next try takes both.
TEST_F(OperatorShellTest, AFailedSlotTakeStopsTheAdmission) {
  server_.put(node_object("w1"));
  const std::string slots = kube::collection_path<kube::Lease>(kOperatorNamespace);
  server_.fail_next("create", slots, Error(ErrorCode::kInternal, "etcdserver: timeout", 500));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));

  const auto& log = server_.requests();
  const auto slot_creates = [&](const FakeRequest& r) {
    return r.verb == "create" && r.path.starts_with(slots);
  };
  EXPECT_EQ(std::count_if(log.begin(), log.end(), slot_creates), 2);
  const auto slot_taken = std::find_if(log.rbegin(), log.rend(), slot_creates);
  const auto lease_asked = first_request(
      [](const FakeRequest& r) { return r.verb == "create" && r.path == node_leases_path(); });
  ASSERT_TRUE(lease_asked.has_value());
  EXPECT_GT(*lease_asked, static_cast<std::size_t>(log.rend() - slot_taken) - 1)
      << "the node lease was asked for without a slot";
  EXPECT_EQ(server_.objects(slots).size(), 1U);
  EXPECT_TRUE(server_.object(node_lease_path("w1")));
}

// ReleaseNodeLease: a failed delete of the node lease stops the deletion's reconcile, so the
// finalizer stays until the lease is gone.
TEST_F(OperatorShellTest, AFailedNodeLeaseReleaseKeepsTheFinalizer) {
  server_.put(node_object("w1"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  server_.clear_requests();
  server_.fail_next("delete", node_lease_path("w1"),
                    Error(ErrorCode::kInternal, "etcdserver: timeout", 500));
  ASSERT_NO_FATAL_FAILURE(delete_maintenance("m1"));
  ASSERT_TRUE(run_until("m1 gone", [&] { return !server_.object(maintenance_path("m1")); }));

  EXPECT_FALSE(server_.object(node_lease_path("w1"))) << "the node lease outlived its maintenance";
  EXPECT_EQ(server_.count("delete", node_lease_path("w1")), 2U);
  const auto& log = server_.requests();
  const auto lease_deleted = std::find_if(log.rbegin(), log.rend(), [](const FakeRequest& r) {
    return r.verb == "delete" && r.path == node_lease_path("w1");
  });
  const auto finalizer_removed = first_request([](const FakeRequest& r) {
    return r.path == maintenance_path("m1") && removes_finalizer(r);
  });
  ASSERT_TRUE(finalizer_removed.has_value());
  EXPECT_LT(static_cast<std::size_t>(log.rend() - lease_deleted) - 1, *finalizer_removed)
      << "the finalizer went while the node lease was still held";
}

// ReleaseSlot: a failed delete of the budget slot Lease stops the deletion's reconcile, so the
// finalizer stays until the slot is given back.
TEST_F(OperatorShellTest, AFailedSlotReleaseKeepsTheFinalizer) {
  server_.put(node_object("w1"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  const std::string slots = kube::collection_path<kube::Lease>(kOperatorNamespace);
  ASSERT_EQ(server_.objects(slots).size(), 1U);
  server_.clear_requests();
  server_.fail_next("delete", slots, Error(ErrorCode::kInternal, "etcdserver: timeout", 500));
  ASSERT_NO_FATAL_FAILURE(delete_maintenance("m1"));
  ASSERT_TRUE(run_until("m1 gone", [&] { return !server_.object(maintenance_path("m1")); }));

  EXPECT_TRUE(server_.objects(slots).empty()) << "the budget slot was not released";
  const auto& log = server_.requests();
  const auto slot_deletes = [&](const FakeRequest& r) {
    return r.verb == "delete" && r.path.starts_with(slots + "/");
  };
  EXPECT_EQ(std::count_if(log.begin(), log.end(), slot_deletes), 2);
  const auto slot_released = std::find_if(log.rbegin(), log.rend(), slot_deletes);
  const auto finalizer_removed = first_request([](const FakeRequest& r) {
    return r.path == maintenance_path("m1") && removes_finalizer(r);
  });
  ASSERT_TRUE(finalizer_removed.has_value());
  EXPECT_LT(static_cast<std::size_t>(log.rend() - slot_released) - 1, *finalizer_removed)
      << "the finalizer went while the slot was still held";
}

// RemoveFinalizer: a failed patch leaves the object; the reconcile tries again and it goes.
TEST_F(OperatorShellTest, AFailedFinalizerRemovalIsTriedAgain) {
  server_.put(node_object("w1"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  server_.clear_requests();
  server_.fail_next("patch", maintenance_path("m1"),
                    Error(ErrorCode::kInternal, "etcdserver: timeout", 500));
  ASSERT_NO_FATAL_FAILURE(delete_maintenance("m1"));
  ASSERT_TRUE(run_until("m1 gone", [&] { return !server_.object(maintenance_path("m1")); }));
  const auto& log = server_.requests();
  EXPECT_EQ(std::count_if(log.begin(), log.end(),
                          [](const FakeRequest& r) {
                            return r.path == maintenance_path("m1") && removes_finalizer(r);
                          }),
            2);
}

// RenewNodeLease: the held node lease is renewed every renew interval, by us.
TEST_F(OperatorShellTest, TheHeldNodeLeaseIsRenewed) {
  ASSERT_NO_FATAL_FAILURE(succeed_renewing_every_second());
  const std::string taken_at = string_at(*server_.object(node_lease_path("w1")), "/spec/renewTime");
  ASSERT_TRUE(run_until("the node lease renewed",
                        [&] { return server_.count("update", node_lease_path("w1")) >= 1; }));
  const auto lease = server_.object(node_lease_path("w1"));
  ASSERT_TRUE(lease);
  EXPECT_EQ(string_at(*lease, "/spec/holderIdentity"), kNodeLeaseHolder);
  EXPECT_NE(string_at(*lease, "/spec/renewTime"), taken_at) << *lease;
  EXPECT_EQ(phase("m1"), Phase::kSucceeded);
}

// DrainCompleted: the finished drain is reported to the metrics backend once.
TEST_F(OperatorShellTest, AFinishedDrainIsCounted) {
  server_.put(node_object("w1"));
  server_.put(pod_object("web-1", "w1"));
  auto metrics = std::make_shared<CountingMetrics>();
  OperatorOptions counted = options();
  counted.metrics = metrics;
  ASSERT_NO_FATAL_FAILURE(start(std::move(counted)));
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("the drain counted", [&] { return metrics->drains_completed > 0; }));
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  EXPECT_EQ(metrics->drains_completed, 1);
}

// EmitEvent with a pod: the DrainError of a refused eviction names the pod as its related
// object.
TEST_F(OperatorShellTest, ADrainErrorNamesThePodItIsAbout) {
  server_.put(node_object("w1"));
  const json::value pod = server_.put(pod_object("db-0", "w1"));
  server_.put(budget_object("db-pdb"));
  server_.fail_next("evict", pod_path("db-0"), FakeApiServer::pdb_refusal("db-pdb"));
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("DrainError written", [&] { return has_event("m1", "DrainError"); }));
  for (const json::value& event : events_about(server_, kKind, "m1")) {
    if (string_at(event, "/reason") != "DrainError") continue;
    EXPECT_EQ(string_at(event, "/related/kind"), "Pod") << event;
    EXPECT_EQ(string_at(event, "/related/namespace"), kAppNamespace) << event;
    EXPECT_EQ(string_at(event, "/related/name"), "db-0") << event;
    EXPECT_EQ(string_at(event, "/related/uid"), string_at(pod, "/metadata/uid")) << event;
  }
}

// TakeNodeLease: a node lease another holder took after the gates looked (the cache shows it
// only once the slot is taken) is not ours to take: the slot goes back, the node stays as it
// was, and the maintenance waits for the lease with its Event.
TEST_F(OperatorShellTest, ANodeLeaseTakenMeanwhileByAnotherHolderStopsTheAdmission) {
  server_.put(node_object("w1"));
  const std::string slots = kube::collection_path<kube::Lease>(kOperatorNamespace);
  kube::Lease foreign;
  foreign.meta.name = node_lease_name("w1");
  foreign.meta.namespace_ = std::string(kLeaseNamespace);
  foreign.holder_identity = "NodeHealthCheck-x";
  foreign.lease_duration_seconds = kNodeLeaseDurationSeconds;
  foreign.renew_time = kube::wall_now();
  // The slot create lets the Lease's watch event in before the node lease is taken.
  server_.set_latency("create", slots, 50ms);
  server_.before_next("create", slots,
                      [&] { server_.put(node_leases_path(), kube::encode_lease(foreign)); });
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("BlockedByNodeHealthCheck written",
                        [&] { return has_event("m1", "BlockedByNodeHealthCheck"); }));
  EXPECT_EQ(phase("m1"), Phase::kPending);
  const std::string slot =
      kube::object_path<kube::Lease>(kOperatorNamespace, slot_lease_name("m1"));
  EXPECT_FALSE(server_.object(slot)) << "the slot was kept";
  EXPECT_EQ(server_.count("delete", slot), 1U);
  EXPECT_FALSE(unschedulable(*server_.object(node_path("w1"))));
  EXPECT_EQ(string_at(*server_.object(node_lease_path("w1")), "/spec/holderIdentity"),
            "NodeHealthCheck-x");
  EXPECT_FALSE(has_event("m1", "LeaseAcquired"));
}

// TakeNodeLease: a lease namespace that is missing and may not be created stops the admission
// with the slot given back and the problem on /readyz; the take is tried again after
// kLeaseNamespaceRetry, not at the error backoff's pace, and goes through once it can.
TEST_F(OperatorShellTest, AMissingLeaseNamespaceIsTriedAgainAtItsOwnPace) {
  server_.put(node_object("w1"));
  const std::string slots = kube::collection_path<kube::Lease>(kOperatorNamespace);
  server_.fail_next("create", node_leases_path(),
                    Error(ErrorCode::kNotFound,
                          "namespaces \"" + std::string(kLeaseNamespace) + "\" not found", 404),
                    FakeApiServer::kEveryCall);
  server_.forbid("create", "/api/v1/namespaces");
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("the lease problem reported",
                        [&] { return operator_->lease_problem().has_value(); }));
  const auto refused_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_until("the slot given back", [&] { return server_.objects(slots).empty(); }));
  EXPECT_EQ(phase("m1"), Phase::kPending);
  EXPECT_FALSE(unschedulable(*server_.object(node_path("w1"))));
  const std::size_t tries = server_.count("create", node_leases_path());

  server_.clear_faults();
  server_.allow("create", "/api/v1/namespaces");
  ASSERT_TRUE(run_until(
      "m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }, kLeaseNamespaceRetry + 5s));
  EXPECT_GE(std::chrono::steady_clock::now() - refused_at, kLeaseNamespaceRetry - 100ms);
  EXPECT_EQ(server_.count("create", node_leases_path()), tries + 1);
  EXPECT_FALSE(operator_->lease_problem().has_value());
}

// RenewNodeLease: a failed renewal is not an error on the lease (errorOnLeaseCount stays 0) and
// does not stop the maintenance; it is tried again after kNodeLeaseRetryInterval, or the renew
// interval when that is shorter (1 s here), not at once.
TEST_F(OperatorShellTest, AFailedRenewalIsNotCountedAgainstTheLease) {
  ASSERT_NO_FATAL_FAILURE(succeed_renewing_every_second());
  server_.fail_next("update", node_lease_path("w1"),
                    Error(ErrorCode::kInternal, "etcdserver: request timed out", 500), 2);
  const auto renewals = [&] { return server_.count("update", node_lease_path("w1")); };
  ASSERT_TRUE(run_until("a renewal refused", [&] { return renewals() == 1; }));
  const auto refused_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_until("a renewal through", [&] { return renewals() == 3; }));
  EXPECT_GE(std::chrono::steady_clock::now() - refused_at, 2s - 100ms);
  EXPECT_EQ(phase("m1"), Phase::kSucceeded);
  EXPECT_EQ(maintenance("m1")->status.error_on_lease_count, 0);
  EXPECT_EQ(string_at(*server_.object(node_lease_path("w1")), "/spec/holderIdentity"),
            kNodeLeaseHolder);
}

// ---- KubeVirt (docs/design.md §2.9): its API served by the fake, its controllers played by the
// test (the migration's phase is set by hand) ----

// A VM whose pod's eviction would shut it down (eviction strategy None) and that can migrate.
json::value vmi_object(const std::string& name, const std::string& node) {
  return json::value{
      {"apiVersion", std::string(kKubeVirtApiVersion)},
      {"kind", "VirtualMachineInstance"},
      {"metadata", {{"namespace", kAppNamespace}, {"name", name}}},
      {"spec", {{"evictionStrategy", "None"}}},
      {"status",
       {{"phase", "Running"},
        {"nodeName", node},
        {"conditions", json::array{{{"type", "LiveMigratable"}, {"status", "True"}}}}}}};
}

json::value virt_launcher_object(const std::string& vmi, const std::string& node) {
  json::value pod = pod_object("virt-launcher-" + vmi + "-x", node);
  json::object& labels = pod.at("metadata").at("labels").as_object();
  labels[std::string(kVirtLauncherLabel)] = std::string(kVirtLauncherValue);
  labels[std::string(kVmNameLabel)] = vmi;
  return pod;
}

class OperatorKubeVirtTest : public OperatorShellTest {
 protected:
  OperatorKubeVirtTest() {
    server_.clear_faults();  // the shell tests' KubeVirt is not served
    server_.serve_group_version(std::string(kKubeVirtApiVersion));
    server_.set_kind("virtualmachineinstances", "VirtualMachineInstance");
    server_.set_kind("virtualmachineinstancemigrations", "VirtualMachineInstanceMigration");
    server_.set_kind("kubevirts", "KubeVirt");
    server_.put(node_object("w1"));
    server_.put(vmi_object("db", "w1"));
    server_.put(virt_launcher_object("db", "w1"));
  }

  // The operator's migrations, as stored.
  std::vector<json::value> migrations() const {
    return server_.objects(kube::collection_path<Migration>(kAppNamespace));
  }

  std::shared_ptr<CountingMetrics> metrics_ = std::make_shared<CountingMetrics>();

  void start_counting() {
    OperatorOptions counted = options();
    counted.metrics = metrics_;
    ASSERT_NO_FATAL_FAILURE(start(std::move(counted)));
  }
};

// CreateMigration and MigrationEnded: the VM is live-migrated instead of its pod being evicted;
// the migration's end is counted once, and the pod ending after it lets the drain succeed.
TEST_F(OperatorKubeVirtTest, AVmIsMigratedAndTheMigrationsEndIsCountedOnce) {
  ASSERT_NO_FATAL_FAILURE(start_counting());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("a migration created", [&] { return migrations().size() == 1; }));
  json::value migration = migrations().front();
  EXPECT_EQ(string_at(migration, "/spec/vmiName"), "db");
  EXPECT_EQ(
      json::value_to<std::string>(migration.at("metadata").at("labels").at(kMigrationOwnerLabel)),
      maintenance("m1")->meta.uid);
  EXPECT_EQ(server_.count("evict"), 0U) << "the VM's pod was evicted";
  ASSERT_TRUE(run_until("MigratingVM written", [&] { return has_event("m1", "MigratingVM"); }));

  migration.as_object()["status"] = json::object{{"phase", "Succeeded"}};
  server_.put(std::move(migration));
  ASSERT_TRUE(run_until("the migration's end counted", [&] {
    return std::count(metrics_->migrations.begin(), metrics_->migrations.end(), "succeeded") == 1;
  }));
  server_.erase(pod_path("virt-launcher-db-x"));  // KubeVirt ends the source pod
  ASSERT_TRUE(run_until("m1 Succeeded", [&] { return phase("m1") == Phase::kSucceeded; }));
  EXPECT_EQ(metrics_->migrations, (std::vector<std::string>{"started", "succeeded"}));
  EXPECT_EQ(migrations().size(), 1U);
  EXPECT_EQ(server_.count("evict"), 0U);
}

// CancelMigrations: deleting the maintenance deletes its unfinished migration before the node is
// given back, and RemovedMaintenance names it.
TEST_F(OperatorKubeVirtTest, DeletionCancelsTheRunningMigrationAndNamesIt) {
  ASSERT_NO_FATAL_FAILURE(start_counting());
  ASSERT_NO_FATAL_FAILURE(create_maintenance("m1", "w1"));
  ASSERT_TRUE(run_until("a migration created", [&] { return migrations().size() == 1; }));
  const std::string name = string_at(migrations().front(), "/metadata/name");
  ASSERT_NO_FATAL_FAILURE(delete_maintenance("m1"));
  ASSERT_TRUE(run_until("m1 gone", [&] { return !maintenance("m1"); }));
  EXPECT_TRUE(migrations().empty()) << "the migration was left running";
  EXPECT_FALSE(unschedulable(*server_.object(node_path("w1"))));
  ASSERT_TRUE(run_until("RemovedMaintenance written",
                        [&] { return has_event("m1", "RemovedMaintenance"); }));
  std::string removed;
  for (const json::value& event : events_about(server_, kKind, "m1")) {
    if (string_at(event, "/reason") == "RemovedMaintenance") removed = string_at(event, "/message");
  }
  EXPECT_EQ(removed,
            "Node maintenance removed for node w1; cancelled the live migrations it had "
            "started: " +
                std::string(kAppNamespace) + "/" + name);
}

}  // namespace
}  // namespace nmo::op
