// The event recorder against the real local API server: repeats aggregate into one Event with
// a count, a new reason makes a new Event, events about a cluster-scoped Node land in `default`
// and show in `kubectl describe node`, and record()/stop() stay prompt when the API server is
// unreachable.
#include "runtime/event_recorder.h"

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "http/asio.h"
#include "kube/client/client.h"
#include "kube/config/kubeconfig_loader.h"
#include "test/e2e/support/cluster.h"

namespace nmo::runtime {
namespace {

namespace json = boost::json;
using e2e::ClusterTest;
using e2e::TestNamespace;
using namespace std::chrono_literals;

class EventRecorderIntegrationTest : public ClusterTest {
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
    if (client_) client_->shutdown();
    work_.reset();
    if (io_thread_.joinable()) io_thread_.join();
  }

  // Runs `task` on the io_context thread and waits (at most 60 s) for it to finish.
  void await(asio::awaitable<void> task) {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> finished = done->get_future();
    asio::co_spawn(io_, std::move(task), [done](const std::exception_ptr& e) {
      if (e) {
        done->set_exception(e);
      } else {
        done->set_value();
      }
    });
    ASSERT_EQ(finished.wait_for(60s), std::future_status::ready);
    finished.get();
  }

  // The Events of namespace `ns` about the object named `name`.
  std::vector<json::value> events_about(const std::string& ns, const std::string& name) {
    std::vector<json::value> out;
    const std::string list =
        kubectl_.must({"get", "events", "-n", ns, "--field-selector", "involvedObject.name=" + name,
                       "--sort-by=.lastTimestamp", "-o", "json"});
    const json::value parsed = json::parse(list);
    for (const json::value& item : parsed.at("items").as_array()) out.push_back(item);
    return out;
  }

  std::string uid_of(const std::vector<std::string>& args) {
    auto object = kubectl_.get_json(args);
    return object ? e2e::string_at(*object, "/metadata/uid") : std::string();
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  std::unique_ptr<kube::Client> client_;
  std::thread io_thread_;
};

TEST_F(EventRecorderIntegrationTest, RepeatsAggregateAndNewReasonsMakeNewEvents) {
  TestNamespace ns(kubectl_, "itest-events");
  kubectl_.must({"create", "configmap", "settings", "-n", ns.name(), "--from-literal=k=v"});
  const std::string uid = uid_of({"configmap", "settings", "-n", ns.name()});
  ASSERT_FALSE(uid.empty());
  const ObjectRef cm{"v1", "ConfigMap", ns.name(), "settings", uid};

  EventRecorder recorder(io_.get_executor(), *client_, "nmo-itest", "itest-host");
  recorder.start();
  // From two threads at once: record() is safe from any thread.
  std::thread other([&] {
    for (int i = 0; i < 5; ++i)
      recorder.record(cm, {EventType::kNormal, "Synced", "config synced", {}});
  });
  for (int i = 0; i < 5; ++i)
    recorder.record(cm, {EventType::kNormal, "Synced", "config synced", {}});
  other.join();
  await(recorder.flush());

  std::vector<json::value> events = events_about(ns.name(), "settings");
  ASSERT_EQ(events.size(), 1U) << json::serialize(json::value_from(events));
  const json::value& synced = events[0];
  EXPECT_EQ(e2e::int_at(synced, "/count"), 10);
  EXPECT_EQ(e2e::string_at(synced, "/reason"), "Synced");
  EXPECT_EQ(e2e::string_at(synced, "/type"), "Normal");
  EXPECT_EQ(e2e::string_at(synced, "/message"), "config synced");
  EXPECT_EQ(e2e::string_at(synced, "/involvedObject/kind"), "ConfigMap");
  EXPECT_EQ(e2e::string_at(synced, "/involvedObject/uid"), uid);
  EXPECT_EQ(e2e::string_at(synced, "/involvedObject/namespace"), ns.name());
  EXPECT_EQ(e2e::string_at(synced, "/source/component"), "nmo-itest");
  EXPECT_EQ(e2e::string_at(synced, "/source/host"), "itest-host");
  EXPECT_EQ(e2e::string_at(synced, "/reportingComponent"), "nmo-itest");
  const std::string first = e2e::string_at(synced, "/firstTimestamp");
  const std::string last = e2e::string_at(synced, "/lastTimestamp");
  ASSERT_EQ(first.size(), 20U) << first;  // 2026-11-30T10:00:00Z
  EXPECT_LE(first, last);                 // same fixed-width format: text order is time order

  recorder.record(cm, {EventType::kWarning, "SyncFailed", "config invalid", {}});
  await(recorder.flush());
  events = events_about(ns.name(), "settings");
  ASSERT_EQ(events.size(), 2U);
  // Both may carry the same second, so --sort-by does not order them: find them by reason.
  const bool failed_second = e2e::string_at(events[1], "/reason") == "SyncFailed";
  const json::value& failed = failed_second ? events[1] : events[0];
  const json::value& still_synced = failed_second ? events[0] : events[1];
  EXPECT_EQ(e2e::string_at(failed, "/reason"), "SyncFailed");
  EXPECT_EQ(e2e::string_at(failed, "/type"), "Warning");
  EXPECT_EQ(e2e::int_at(failed, "/count"), 1);
  EXPECT_EQ(e2e::string_at(still_synced, "/reason"), "Synced");
  EXPECT_EQ(e2e::int_at(still_synced, "/count"), 10);
  EXPECT_NE(e2e::string_at(failed, "/metadata/name"),
            e2e::string_at(still_synced, "/metadata/name"));

  await(recorder.stop(5s));
}

TEST_F(EventRecorderIntegrationTest, ClusterScopedNodeEventGoesToDefault) {
  const std::string node = e2e::unique_name("itest-events-node");
  // Tainted so no other test's pods land on it while it exists.
  const json::value manifest{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", node}, {"labels", {{"kubernetes.io/hostname", node}}}}},
      {"spec",
       {{"taints", json::array{{{"key", "test.node-maintenance/event-recorder"},
                                {"effect", "NoSchedule"}}}}}},
  };
  kubectl_.apply(json::serialize(manifest));
  struct Cleanup {
    const e2e::Kubectl& kubectl;
    std::string node;
    ~Cleanup() {
      (void)kubectl.run({"delete", "node", node, "--wait=false"});
      (void)kubectl.run(
          {"delete", "events", "-n", "default", "--field-selector", "involvedObject.name=" + node});
    }
  } cleanup{kubectl_, node};
  const std::string uid = uid_of({"node", node});
  ASSERT_FALSE(uid.empty());

  EventRecorder recorder(io_.get_executor(), *client_, "nmo-itest");
  recorder.start();
  const std::string message = "maintenance of " + node + " began";
  recorder.record({"v1", "Node", "", node, uid},
                  {EventType::kNormal, "BeginMaintenance", message, {}});
  await(recorder.flush());
  await(recorder.stop(5s));

  // Only ours: kube-controller-manager announces a new node too (RegisteredNode).
  std::vector<json::value> events = events_about("default", node);
  std::erase_if(events, [](const json::value& e) {
    return e2e::string_at(e, "/reason") != "BeginMaintenance";
  });
  ASSERT_EQ(events.size(), 1U) << json::serialize(json::value_from(events));
  EXPECT_EQ(e2e::string_at(events[0], "/metadata/namespace"), "default");
  EXPECT_EQ(e2e::string_at(events[0], "/involvedObject/namespace"), "");
  EXPECT_EQ(e2e::string_at(events[0], "/involvedObject/kind"), "Node");
  EXPECT_EQ(e2e::int_at(events[0], "/count"), 1);

  const std::string described = kubectl_.must({"describe", "node", node});
  EXPECT_NE(described.find("BeginMaintenance"), std::string::npos) << described;
  EXPECT_NE(described.find(message), std::string::npos) << described;
}

TEST_F(EventRecorderIntegrationTest, UnreachableServerNeverBlocksRecordAndStopMeetsDeadline) {
  kube::RestConfig config;
  config.server = "http://127.0.0.1:1";
  config.scheme = "http";
  config.host = "127.0.0.1";
  config.port = "1";
  auto unreachable = kube::Client::create(io_.get_executor(), config, {.request_timeout = 2s});
  ASSERT_TRUE(unreachable) << unreachable.error().describe();

  EventRecorder recorder(io_.get_executor(), **unreachable, "nmo-itest");
  recorder.start();
  const ObjectRef node{"v1", "Node", "", "nowhere", "uid-nowhere"};
  // 200 distinct events: at the client's 20 qps the writer needs seconds for them, so stop()
  // can only meet its deadline by dropping the rest.
  const auto record_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    recorder.record(node, {EventType::kNormal, "Reason" + std::to_string(i), "unreachable", {}});
  }
  const auto record_time = std::chrono::steady_clock::now() - record_start;
  EXPECT_LT(record_time, 500ms);

  const auto stop_start = std::chrono::steady_clock::now();
  await(recorder.stop(1s));
  const auto stop_time = std::chrono::steady_clock::now() - stop_start;
  EXPECT_GE(stop_time, 900ms);  // the queue could not drain before the deadline
  EXPECT_LT(stop_time, 3s);     // deadline + one cancelled (or timed-out) request at most
  (*unreachable)->shutdown();
}

}  // namespace
}  // namespace nmo::runtime
