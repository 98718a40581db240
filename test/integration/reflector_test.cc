// The Reflector and Store against the real local API server: the initial list, changes after
// start in order, a label-selected reflector, and recovery from an API-server restart without
// losing an event (last: it restarts the shared API server).
#include "runtime/reflector.h"

#include <chrono>
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

// Keep last: restarts the shared API server.
TEST_F(ReflectorIntegrationTest, SurvivesAnApiServerRestartWithoutLosingEvents) {
  TestNamespace ns(kubectl_, "itest-reflect-restart");
  Reflector<ConfigMap>& reflector = make_reflector(ns.name());
  reflector.start();
  ASSERT_TRUE(await<bool>([&] { return reflector.wait_synced(30s); }));
  const auto& store = *reflector.store();

  create(ns.name(), "before");
  // hack/ of this checkout, found from this file's path (test/integration/reflector_test.cc).
  const std::string script =
      (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "hack" /
       "cluster-restart.sh")
          .string();
  const e2e::ProcessResult restart = e2e::run_process({script, "kube-apiserver"});
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

}  // namespace
}  // namespace nmo::runtime
