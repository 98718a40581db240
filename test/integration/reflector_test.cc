// The Reflector and Store against the real local API server: the initial list, changes after
// start in order, a label-selected reflector, recovery from an API-server restart without
// losing an event, and a relist after a 410 when etcd compacted the watched version away (the
// last two stop the shared API server, so they run last).
#include "runtime/reflector.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/api/meta.h"
#include "kube/client/client.h"
#include "kube/config/kubeconfig_loader.h"
#include "runtime/store.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_process.h"
#include "test/e2e/support/subprocess.h"

namespace nmo::kube {

// A ConfigMap projection: its metadata and `data`.
struct ConfigMap {
  ObjectMeta meta;
  std::map<std::string, std::string> data;
};

template <>
struct ResourceInfo<ConfigMap> {
  static constexpr std::string_view kGroup = "";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "configmaps";
  static constexpr std::string_view kKind = "ConfigMap";
  static constexpr bool kNamespaced = true;
  static Result<ConfigMap> decode(const boost::json::value& object) {
    auto meta = decode_meta(object);
    if (!meta) return meta.error();
    ConfigMap out{std::move(*meta), {}};
    const auto* data = object.as_object().if_contains("data");
    if (data != nullptr && data->is_object()) {
      for (const auto& [key, value] : data->as_object()) {
        if (!value.is_string()) return Error(ErrorCode::kInvalid, "data: expected strings");
        out.data.emplace(std::string(key), std::string(value.as_string()));
      }
    }
    return out;
  }
};

}  // namespace nmo::kube

namespace nmo::runtime {
namespace {

using e2e::ClusterTest;
using e2e::TestNamespace;
using e2e::wait_until;
using kube::ConfigMap;
using namespace std::chrono_literals;

// Created by the control plane in every namespace; the tests ignore it.
constexpr const char* kRootCa = "kube-root-ca.crt";

// hack/cluster-restart.sh of this checkout, from its root as the build names it (not __FILE__,
// which ccache's base_dir makes relative to the build directory).
std::string restart_script() {
  return (e2e::source_dir() / "hack" / "cluster-restart.sh").string();
}

// Stops the API server (hack/cluster-restart.sh --stop-only --kill: a crash, so the outage is
// short) and starts it again when start() is called or, at the latest, when the guard goes: a
// failed assertion in between must not leave the shared cluster without its API server.
class StoppedApiServer {
 public:
  StoppedApiServer() {
    const e2e::ProcessResult stopped =
        e2e::run_process({restart_script(), "--stop-only", "--kill", "kube-apiserver"});
    stopped_ = stopped.ok();
    EXPECT_TRUE(stopped_) << stopped.err;
  }
  StoppedApiServer(const StoppedApiServer&) = delete;
  StoppedApiServer& operator=(const StoppedApiServer&) = delete;
  ~StoppedApiServer() { start(); }

  [[nodiscard]] bool stopped() const { return stopped_; }

  // Starts the API server and waits until it is ready; true when it is.
  bool start() {
    // Run even when the stop reported a failure: --start-only does nothing unless a stop
    // really happened.
    const e2e::ProcessResult started =
        e2e::run_process({restart_script(), "--start-only", "kube-apiserver"});
    EXPECT_TRUE(started.ok()) << started.err;
    stopped_ = false;
    return started.ok();
  }

 private:
  bool stopped_ = false;
};

class ReflectorIntegrationTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    auto config = kube::load_kubeconfig({});
    ASSERT_TRUE(config) << config.error().describe();
    auto client = kube::Client::create(io_.get_executor(), std::move(*config));
    ASSERT_TRUE(client) << client.error().describe();
    client_ = std::move(*client);
    io_thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    // Stopped even when a test returned early: a running reflector must not be destroyed.
    if (reflector_ != nullptr) stop(*reflector_);
    if (client_ != nullptr) client_->shutdown();
    work_.reset();
    if (io_thread_.joinable()) io_thread_.join();
    if (api_server_stopped_) wait_until_control_plane_recovered();
  }

  // Whether a test holds `node` NotReady on purpose (the kwok fault label).
  static bool held_not_ready(const boost::json::value& node) {
    std::string pointer = "/metadata/labels/";
    for (const char c : std::string_view(e2e::kNotReadyLabel)) {
      pointer += c == '/' ? std::string("~1") : std::string(1, c);  // JSON pointer escape
    }
    return !e2e::string_at(node, pointer).empty();
  }

  // Marks that the test stops the API server, so that TearDown waits for the cluster to recover.
  void will_stop_api_server() { api_server_stopped_ = true; }

  // kube-controller-manager and kwok back off while the API server is down (client-go's
  // reflector: 0.8 s doubling to 30 s, up to twice that with jitter, forgotten only after 2 min
  // without failures), so for a while after a restart they may ignore new objects. Waits until
  // they work again, so that the next test finds the cluster as this one found it.
  void wait_until_control_plane_recovered() {
    const auto began = std::chrono::steady_clock::now();
    const auto seconds_since_began = [&] {
      return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                              began)
          .count();
    };
    const std::string probe = e2e::unique_name("itest-recovered");
    kubectl_.must({"create", "namespace", probe});
    EXPECT_TRUE(wait_until("kube-controller-manager creating ServiceAccounts again", 180s, [&] {
      return kubectl_.run({"get", "serviceaccount", "default", "-n", probe}).ok();
    }));
    (void)kubectl_.run({"delete", "namespace", probe, "--wait=false"});
    const auto controller_manager_seconds = seconds_since_began();
    std::vector<std::string> nodes = e2e::kControlPlaneNodes;
    nodes.insert(nodes.end(), e2e::kWorkerNodes.begin(), e2e::kWorkerNodes.end());
    std::string not_ready;
    EXPECT_TRUE(wait_until(
        "kwok reporting every node Ready again", 180s,
        [&] {
          not_ready.clear();
          for (const std::string& node : nodes) {
            const std::optional<boost::json::value> json = kubectl_.get_json({"node", node});
            if (!json ||
                (!held_not_ready(*json) && e2e::node_ready_status(json->as_object()) != "True")) {
              not_ready += node + " ";
            }
          }
          return not_ready.empty();
        },
        [&] { return "not Ready: " + not_ready; }));
    std::cout << "[ reflector ] control plane recovered: controller manager after "
              << controller_manager_seconds << " s, nodes after " << seconds_since_began()
              << " s\n";
  }

  // A reflector of the ConfigMaps of `ns`, owned by the fixture, recording its changes.
  Reflector<ConfigMap>& make_reflector(const std::string& ns, kube::ListOptions selectors = {}) {
    reflector_ = std::make_unique<Reflector<ConfigMap>>(io_.get_executor(), *client_, ns,
                                                        std::move(selectors),
                                                        std::make_shared<Store<ConfigMap>>());
    reflector_->on_change([this](const ConfigMap* before, const ConfigMap* after) {
      const ConfigMap& object = after != nullptr ? *after : *before;
      if (object.meta.name == kRootCa) return;
      const char* kind = before == nullptr ? "+" : after == nullptr ? "-" : "~";
      std::lock_guard lock(mutex_);
      changes_.push_back(kind + object.meta.name);
      arrivals_.emplace_back(object.meta.name, std::chrono::steady_clock::now());
    });
    return *reflector_;
  }

  // Runs `make()` (an awaitable) on the io_context and waits for its result.
  template <typename T>
  T await(std::function<asio::awaitable<T>()> make) {
    std::promise<T> promise;
    asio::co_spawn(io_, make(), [&](const std::exception_ptr& error, T value) {
      if (error) {
        promise.set_exception(error);
      } else {
        promise.set_value(std::move(value));
      }
    });
    return promise.get_future().get();
  }

  void stop(Reflector<ConfigMap>& reflector) {
    std::promise<void> done;
    asio::co_spawn(io_, reflector.stop(),
                   [&](const std::exception_ptr& /*error*/) { done.set_value(); });
    done.get_future().get();
  }

  void create(const std::string& ns, const std::string& name, const std::string& labels = "") {
    std::vector<std::string> args{"create", "configmap", name, "-n", ns, "--from-literal=k=v"};
    kubectl_.must(args);
    if (!labels.empty()) kubectl_.must({"label", "configmap", name, "-n", ns, labels});
  }

  static std::set<std::string> names(const Store<ConfigMap>& store) {
    std::set<std::string> out;
    for (const auto& object : store.list()) {
      if (object->meta.name != kRootCa) out.insert(object->meta.name);
    }
    return out;
  }

  std::vector<std::string> changes() {
    std::lock_guard lock(mutex_);
    return changes_;
  }

  // When the change handler saw `name` first, if it did.
  std::optional<std::chrono::steady_clock::time_point> arrival(const std::string& name) {
    std::lock_guard lock(mutex_);
    for (const auto& [seen, at] : arrivals_) {
      if (seen == name) return at;
    }
    return std::nullopt;
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::thread io_thread_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<Reflector<ConfigMap>> reflector_;

  bool api_server_stopped_ = false;

  std::mutex mutex_;
  std::vector<std::string> changes_;  // guarded by mutex_
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>>
      arrivals_;  // guarded by mutex_
};

TEST_F(ReflectorIntegrationTest, InitialListFillsTheStoreAndSyncs) {
  TestNamespace ns(kubectl_, "itest-reflect-list");
  for (const char* name : {"one", "two", "three"}) create(ns.name(), name);
  Reflector<ConfigMap>& reflector = make_reflector(ns.name());
  EXPECT_FALSE(reflector.synced());
  reflector.start();
  EXPECT_TRUE(await<bool>([&] { return reflector.wait_synced(30s); }));
  EXPECT_TRUE(reflector.synced());
  EXPECT_TRUE(reflector.store()->has_synced());
  EXPECT_EQ(names(*reflector.store()), (std::set<std::string>{"one", "three", "two"}));
  auto two = reflector.store()->get(ns.name() + "/two");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->data.at("k"), "v");
  EXPECT_EQ(reflector.relists(), 0U);
}

TEST_F(ReflectorIntegrationTest, ChangesAfterStartReachTheStoreAndHandlersInOrder) {
  TestNamespace ns(kubectl_, "itest-reflect-watch");
  Reflector<ConfigMap>& reflector = make_reflector(ns.name());
  reflector.start();
  ASSERT_TRUE(await<bool>([&] { return reflector.wait_synced(30s); }));
  const auto& store = *reflector.store();
  const std::string key = ns.name() + "/w";

  create(ns.name(), "w");
  ASSERT_TRUE(wait_until("w in the store", 30s, [&] { return store.get(key) != nullptr; }));
  kubectl_.must({"patch", "configmap", "w", "-n", ns.name(), "--type=merge", "-p",
                 R"({"data":{"k":"changed"}})"});
  ASSERT_TRUE(wait_until("w modified in the store", 30s, [&] {
    auto w = store.get(key);
    return w != nullptr && w->data.at("k") == "changed";
  }));
  kubectl_.must({"delete", "configmap", "w", "-n", ns.name()});
  ASSERT_TRUE(
      wait_until("w deleted from the store", 30s, [&] { return store.get(key) == nullptr; }));
  EXPECT_EQ(changes(), (std::vector<std::string>{"+w", "~w", "-w"}));
}

TEST_F(ReflectorIntegrationTest, LabelSelectedReflectorSeesOnlyMatchingObjects) {
  TestNamespace ns(kubectl_, "itest-reflect-label");
  create(ns.name(), "red-1", "color=red");
  create(ns.name(), "blue-1", "color=blue");
  Reflector<ConfigMap>& reflector = make_reflector(ns.name(), {.label_selector = "color=red"});
  reflector.start();
  ASSERT_TRUE(await<bool>([&] { return reflector.wait_synced(30s); }));
  const auto& store = *reflector.store();
  EXPECT_EQ(names(store), (std::set<std::string>{"red-1"}));

  create(ns.name(), "blue-2", "color=blue");
  create(ns.name(), "red-2", "color=red");
  // red-2 was created after blue-2, so once it arrived blue-2 would have too.
  ASSERT_TRUE(wait_until("red-2 in the store", 30s,
                         [&] { return store.get(ns.name() + "/red-2") != nullptr; }));
  EXPECT_EQ(names(store), (std::set<std::string>{"red-1", "red-2"}));
  // Relabelling red-1 out of the selection deletes it from the store.
  kubectl_.must({"label", "configmap", "red-1", "-n", ns.name(), "color=blue", "--overwrite"});
  ASSERT_TRUE(wait_until("red-1 gone from the store", 30s,
                         [&] { return store.get(ns.name() + "/red-1") == nullptr; }));
  EXPECT_EQ(changes(), (std::vector<std::string>{"+red-1", "+red-2", "-red-1"}));
}

// Restarts the shared API server: keep these two last.
TEST_F(ReflectorIntegrationTest, SurvivesAnApiServerRestartWithoutLosingEvents) {
  TestNamespace ns(kubectl_, "itest-reflect-restart");
  Reflector<ConfigMap>& reflector = make_reflector(ns.name());
  reflector.start();
  ASSERT_TRUE(await<bool>([&] { return reflector.wait_synced(30s); }));
  const auto& store = *reflector.store();

  create(ns.name(), "before");
  will_stop_api_server();
  const e2e::ProcessResult restart = e2e::run_process({restart_script(), "kube-apiserver"});
  ASSERT_TRUE(restart.ok()) << restart.err;
  const auto ready = std::chrono::steady_clock::now();
  create(ns.name(), "after");

  ASSERT_TRUE(wait_until("after in the store", 60s,
                         [&] { return store.get(ns.name() + "/after") != nullptr; }));
  EXPECT_NE(store.get(ns.name() + "/before"), nullptr);
  EXPECT_EQ(names(store), (std::set<std::string>{"after", "before"}));
  EXPECT_GE(reflector.watch_restarts(), 1U);
  const auto delivered = arrival("after");
  ASSERT_TRUE(delivered.has_value());
  const auto latency = std::chrono::duration_cast<std::chrono::milliseconds>(*delivered - ready);
  std::cout << "[ reflector ] 'after' delivered " << latency.count()
            << " ms after the API server was ready again (watch restarts: "
            << reflector.watch_restarts() << ", relists: " << reflector.relists() << ")\n";
  RecordProperty("delivery_after_restart_ms", std::to_string(latency.count()));
}

// The issue's requirement: a reflector whose next watch starts from a version etcd has
// compacted away gets 410 Gone (Expired) and relists, and its store ends up exactly right.
// ConfigMap watches bypass the API server's watch cache (--watch-cache-sizes=configmaps#0 in
// hack/cluster-up.sh), so the 410 comes from etcd itself.
TEST_F(ReflectorIntegrationTest, RelistsWhenItsWatchVersionWasCompactedAway) {
  TestNamespace ns(kubectl_, "itest-reflect-410");
  for (const char* name : {"keep", "modify-me", "delete-me"}) create(ns.name(), name);
  Reflector<ConfigMap>& reflector = make_reflector(ns.name());
  reflector.start();
  ASSERT_TRUE(await<bool>([&] { return reflector.wait_synced(30s); }));
  const auto& store = *reflector.store();
  // One object through the watch, so the version the reflector would resume from is the
  // watch's own, not just the list's.
  create(ns.name(), "watched");
  ASSERT_TRUE(wait_until("watched in the store", 30s,
                         [&] { return store.get(ns.name() + "/watched") != nullptr; }));
  ASSERT_EQ(reflector.relists(), 0U);

  {
    // With the API server down, the reflector's last version V is at most etcd's revision R.
    // Two writes outside /registry/ take etcd to R + 2, and compacting there removes every
    // revision below it. A watch from V asks etcd for revisions from V + 1 <= R + 1 < R + 2,
    // so once the API server is back it can only answer 410.
    will_stop_api_server();
    StoppedApiServer down;
    ASSERT_TRUE(down.stopped());
    ASSERT_TRUE(e2e::put_etcd_key("/nmo-test/revision-bump", "1").has_value());
    const std::optional<std::int64_t> revision = e2e::put_etcd_key("/nmo-test/revision-bump", "2");
    ASSERT_TRUE(revision.has_value());
    ASSERT_TRUE(e2e::compact_etcd());
    std::cout << "[ reflector ] etcd compacted at revision " << *revision
              << " or later while the API server was down\n";
    ASSERT_TRUE(down.start());
  }

  // Changes the reflector sees either in its relist or in the watch that follows it.
  kubectl_.must({"patch", "configmap", "modify-me", "-n", ns.name(), "--type=merge", "-p",
                 R"({"data":{"k":"changed"}})"});
  kubectl_.must({"delete", "configmap", "delete-me", "-n", ns.name()});
  create(ns.name(), "added-after");

  // The reflector backs off while the API server is down (0.8 s doubling, full jitter), so its
  // next watch may come some seconds after the server is ready.
  ASSERT_TRUE(wait_until(
      "the reflector relisted", 90s, [&] { return reflector.relists() >= 1; },
      [&] {
        return "relists " + std::to_string(reflector.relists()) + ", watch restarts " +
               std::to_string(reflector.watch_restarts());
      }));
  const std::set<std::string> expected{"added-after", "keep", "modify-me", "watched"};
  ASSERT_TRUE(wait_until(
      "the store holds exactly the ConfigMaps of the namespace", 60s,
      [&] {
        auto modified = store.get(ns.name() + "/modify-me");
        return names(store) == expected && modified != nullptr && modified->data.contains("k") &&
               modified->data.at("k") == "changed";
      },
      [&] {
        std::string seen;
        for (const std::string& name : names(store)) seen += name + " ";
        return "store: " + seen;
      }));
  // Each change reached the handlers exactly once: nothing lost, nothing doubled by the relist.
  std::vector<std::string> seen = changes();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"+added-after", "+delete-me", "+keep", "+modify-me",
                                            "+watched", "-delete-me", "~modify-me"}));
  // The store agrees with the API server's own list.
  const std::optional<boost::json::value> listed =
      kubectl_.get_json({"configmaps", "-n", ns.name()});
  ASSERT_TRUE(listed.has_value());
  std::set<std::string> on_server;
  for (const boost::json::value& item : listed->at("items").as_array()) {
    const std::string name = e2e::string_at(item, "/metadata/name");
    if (name != kRootCa) on_server.insert(name);
  }
  EXPECT_EQ(on_server, expected);
  std::cout << "[ reflector ] relists: " << reflector.relists()
            << ", watch restarts: " << reflector.watch_restarts() << "\n";
}

}  // namespace
}  // namespace nmo::runtime
