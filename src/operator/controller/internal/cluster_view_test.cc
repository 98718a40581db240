// ClusterView against the in-memory API server (kube/client/testing/fake_api_server.h): what its
// read functions return for what the fake holds, and who it wakes.
#include "operator/controller/internal/cluster_view.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/result.h"
#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "kube/client/testing/fake_api_server.h"
#include "operator/gates/etcd_quorum.h"
#include "operator/gates/node_lease.h"
#include "operator/testing/fake_cluster_json.h"
#include "runtime/cache.h"

namespace nmo::op::internal {
namespace {

namespace json = boost::json;
using kube::testing::FakeApiServer;
using namespace std::chrono_literals;

constexpr std::string_view kAppNamespace = "shop";

json::value node_object(const std::string& name, bool control_plane) {
  json::object labels{{"kubernetes.io/hostname", name}};
  if (control_plane) labels[kControlPlaneLabel] = "";
  return json::value{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", std::move(labels)}}},
      {"spec", json::object{}},
      {"status", {{"conditions", json::array{{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json::value maintenance_object(const std::string& name, const std::string& node) {
  return json::value{{"apiVersion", kApiVersion},
                     {"kind", kKind},
                     {"metadata", {{"name", name}}},
                     {"spec", {{"nodeName", node}, {"reason", "firmware upgrade"}}}};
}

json::value pod_object(const std::string& ns, const std::string& name, const std::string& node,
                       json::object labels) {
  return json::value{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"namespace", ns}, {"name", name}, {"labels", std::move(labels)}}},
      {"spec", {{"nodeName", node}, {"containers", json::array{{{"name", "c"}, {"image", "i"}}}}}},
      {"status", {{"phase", "Running"}}}};
}

json::value budget_object(const std::string& ns, const std::string& name, const std::string& app) {
  return json::value{
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"namespace", ns}, {"name", name}}},
      {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", app}}}}}}}};
}

json::value lease_object(const std::string& ns, const std::string& name) {
  return json::value{{"apiVersion", "coordination.k8s.io/v1"},
                     {"kind", "Lease"},
                     {"metadata", {{"namespace", ns}, {"name", name}}},
                     {"spec", json::object{}}};
}

template <typename Snapshots>
std::vector<std::string> names(const Snapshots& objects) {
  std::vector<std::string> out;
  for (const auto& object : objects) out.push_back(object->meta.name);
  std::sort(out.begin(), out.end());
  return out;
}

class ClusterViewTest : public ::testing::Test {
 protected:
  // Workers w1 and w2 and the control-plane node cp1; m1 maintains w1 and m2 cp1. In shop, the
  // pod db-0 on w1 and the budgets of its app and of another; in another namespace, a budget
  // of the same app. The etcd member pod of cp1, and the node lease of w1.
  ClusterViewTest() {
    server_.put(node_object("w1", false));
    server_.put(node_object("w2", false));
    server_.put(node_object("cp1", true));
    server_.put(testing::maintenances_path(), maintenance_object("m1", "w1"));
    server_.put(testing::maintenances_path(), maintenance_object("m2", "cp1"));
    server_.put(pod_object(std::string(kAppNamespace), "db-0", "w1", {{"app", "db"}}));
    server_.put(budget_object(std::string(kAppNamespace), "db-budget", "db"));
    server_.put(budget_object(std::string(kAppNamespace), "web-budget", "web"));
    server_.put(budget_object("elsewhere", "db-budget", "db"));
    server_.put(
        pod_object(std::string(kEtcdNamespace), "etcd-cp1", "cp1", {{"component", "etcd"}}));
    server_.put(lease_object(options_.lease_namespace, node_lease_name("w1")));
  }

  void TearDown() override {
    view_.release_pod_watches();
    http::test::run(io_, [this]() -> asio::awaitable<bool> {
      co_await cache_.stop();
      co_return true;
    }());
    io_.restart();
    io_.poll();
  }

  void start() {
    const Result<void> synced = http::test::run(io_, [this]() -> asio::awaitable<Result<void>> {
      NMO_CO_TRY(co_await cache_.start());
      co_return co_await cache_.wait_synced(view_.informers(), 10s);
    }());
    ASSERT_OK(synced);
  }

  void watch_pods(const std::string& node) {
    ASSERT_OK(http::test::run(io_, view_.watch_pods(node)));
  }

  ClusterView::Wakeups record_wakeups() {
    return ClusterView::Wakeups{
        .maintenance_changed =
            [this](const NodeMaintenance* before, const NodeMaintenance* after) {
              if (after == nullptr) woken_.push_back("deleted " + before->meta.name);
            },
        .node_changed = [](const kube::Node&) {},
        .pods_changed = [this](const std::string& node) { woken_.push_back("pods of " + node); },
        .node_lease_changed = [](const std::string&) {},
        .gates_changed = [] {},
    };
  }

  asio::io_context io_;
  FakeApiServer server_{io_.get_executor()};
  runtime::Cache cache_{io_.get_executor(), server_};
  OperatorOptions options_;
  std::vector<std::string> woken_;
  ClusterView view_{cache_, options_, record_wakeups()};
};

TEST_F(ClusterViewTest, ReadsTheMaintenancesAndNodesTheCacheHolds) {
  ASSERT_NO_FATAL_FAILURE(start());

  EXPECT_EQ(names(view_.maintenances()), (std::vector<std::string>{"m1", "m2"}));
  ASSERT_NE(view_.maintenance("m1"), nullptr);
  EXPECT_EQ(view_.maintenance("m1")->spec.node_name, "w1");
  EXPECT_EQ(view_.maintenance("m3"), nullptr);
  EXPECT_EQ(names(view_.maintenances_of_node("w1")), std::vector<std::string>{"m1"});
  EXPECT_EQ(names(view_.maintenances_of_node("w2")), std::vector<std::string>{});
  EXPECT_EQ(names(view_.maintenances_with_lease(node_lease_name("cp1"))),
            std::vector<std::string>{"m2"});

  EXPECT_TRUE(view_.nodes_synced());
  ASSERT_NE(view_.node("w2"), nullptr);
  EXPECT_EQ(view_.node("w3"), nullptr);
  EXPECT_EQ(names(view_.control_plane_nodes()), std::vector<std::string>{"cp1"});

  const auto leases = view_.node_leases();
  ASSERT_EQ(names(leases), std::vector<std::string>{node_lease_name("w1")});
  EXPECT_EQ(view_.lease_node(*leases.front()), "w1");

  const EtcdView etcd = view_.etcd();
  EXPECT_EQ(etcd.control_plane_ready, (std::map<std::string, bool, std::less<>>{{"cp1", true}}));
  EXPECT_FALSE(etcd.openshift);
  ASSERT_EQ(etcd.member_pods.size(), 1U);
  EXPECT_EQ(etcd.member_pods.front().meta.name, "etcd-cp1");
}

TEST_F(ClusterViewTest, ReadsThePodsOfANodeAndTheBudgetsCoveringThem) {
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(names(view_.pods_on("w1")), std::vector<std::string>{})
      << "no pods before the node's pods are watched";

  ASSERT_NO_FATAL_FAILURE(watch_pods("w1"));
  const auto pods = view_.pods_on("w1");
  ASSERT_EQ(names(pods), std::vector<std::string>{"db-0"});

  const std::vector<kube::PodDisruptionBudget> covering = view_.covering_budgets(*pods.front());
  ASSERT_EQ(covering.size(), 1U);
  EXPECT_EQ(covering.front().meta.namespace_, kAppNamespace);
  EXPECT_EQ(covering.front().meta.name, "db-budget");
}

TEST_F(ClusterViewTest, LetsGoOfTheNodesPodsOnceNoMaintenanceNamesIt) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(watch_pods("w1"));
  woken_.clear();
  server_.put(pod_object(std::string(kAppNamespace), "db-1", "w1", {{"app", "db"}}));
  ASSERT_TRUE(http::test::run_until(
      io_, [&] { return view_.pods_on("w1").size() == 2; }, 10s));
  EXPECT_EQ(woken_, std::vector<std::string>{"pods of w1"});

  woken_.clear();
  ASSERT_TRUE(server_.erase(testing::maintenance_path("m1")));
  ASSERT_TRUE(http::test::run_until(
      io_, [&] { return view_.maintenance("m1") == nullptr; }, 10s));
  EXPECT_EQ(woken_, std::vector<std::string>{"deleted m1"});
  EXPECT_EQ(names(view_.pods_on("w1")), std::vector<std::string>{})
      << "the pods of w1 are not watched any more";
  EXPECT_EQ(names(view_.maintenances_of_node("cp1")), std::vector<std::string>{"m2"});
}

}  // namespace
}  // namespace nmo::op::internal
