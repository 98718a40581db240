#include "runtime/cache.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "http/testing/run.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/client/testing/fake_api_server.h"

namespace nmo::runtime {
namespace {

using kube::testing::FakeApiServer;
using namespace std::chrono_literals;

constexpr const char* kNodes = "/api/v1/nodes";
constexpr const char* kPods = "/api/v1/pods";

boost::json::value node(const std::string& name) {
  return boost::json::parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
                            R"("}})");
}

boost::json::value pod(const std::string& name, const std::string& node_name) {
  return boost::json::parse(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"ns","name":")" + name +
      R"("},"spec":{"nodeName":")" + node_name + R"(","containers":[{"name":"c","image":"i"}]}})");
}

class CacheTest : public ::testing::Test {
 protected:
  void TearDown() override {
    http::test::run(io_, [this]() -> asio::awaitable<bool> {
      co_await cache_.stop();
      co_return true;
    }());
  }

  // Runs the io_context until `condition` holds; fails the test after 10 s.
  void run_until(const std::function<bool()>& condition) {
    ASSERT_TRUE(http::test::run_until(io_, condition, 10s)) << "condition not reached in 10 s";
  }

  Result<void> start_and_sync(std::vector<const internal::ReflectorLoop*> informers,
                              std::chrono::milliseconds timeout = 5s) {
    return http::test::run(io_, [&]() -> asio::awaitable<Result<void>> {
      NMO_CO_TRY(co_await cache_.start());
      co_return co_await cache_.wait_synced(informers, timeout);
    }());
  }

  asio::io_context io_;
  FakeApiServer server_{io_.get_executor()};
  Cache cache_{io_.get_executor(), server_, CacheOptions{.linger = 200ms}};
};

// Two controllers declaring the same collection share one informer: one list, one watch, one
// store, and both are told of each change.
TEST_F(CacheTest, ACollectionDeclaredTwiceIsListedAndWatchedOnce) {
  server_.put(node("w1"));
  auto& first = cache_.informer<kube::Node>("the node cache");
  auto& second = cache_.informer<kube::Node>("another name for it");
  EXPECT_EQ(&first, &second);
  int told_first = 0;
  int told_second = 0;
  first.on_change([&](const kube::Node*, const kube::Node*) { ++told_first; });
  second.on_change([&](const kube::Node*, const kube::Node*) { ++told_second; });
  ASSERT_TRUE(start_and_sync({&first}).has_value());
  server_.put(node("w2"));
  run_until([&] { return first.store()->size() == 2; });
  EXPECT_EQ(told_first, 2);
  EXPECT_EQ(told_second, 2);
  EXPECT_EQ(server_.count("list", kNodes), 1U);
  EXPECT_EQ(server_.open_watches(kNodes), 1U);
  EXPECT_EQ(cache_.informers(), 1U);
}

// Other selectors are another collection.
TEST_F(CacheTest, OtherSelectorsAreAnotherInformer) {
  auto& all = cache_.informer<kube::Node>("all nodes");
  auto& labelled =
      cache_.informer<kube::Node>("control-plane nodes", "", {.label_selector = "node-role"});
  EXPECT_NE(&all, &labelled);
  ASSERT_TRUE(start_and_sync({&all, &labelled}).has_value());
  EXPECT_EQ(server_.open_watches(kNodes), 2U);
}

// An index registered by two users of a store is registered once.
TEST_F(CacheTest, AnIndexNamedTwiceIsRegisteredOnce) {
  auto& nodes = cache_.informer<kube::Node>("the node cache");
  Cache::add_index(nodes, "name", [](const kube::Node& n) { return std::vector{n.meta.name}; });
  Cache::add_index(nodes, "name", [](const kube::Node&) { return std::vector<std::string>{"x"}; });
  server_.put(node("w1"));
  ASSERT_TRUE(start_and_sync({&nodes}).has_value());
  EXPECT_EQ(nodes.store()->by_index("name", "w1").size(), 1U);
  EXPECT_TRUE(nodes.store()->by_index("name", "x").empty());
}

// wait_synced names the informer that did not sync; one declared after start starts at once.
TEST_F(CacheTest, WaitSyncedNamesTheInformerThatDidNotSync) {
  auto& nodes = cache_.informer<kube::Node>("the node cache");
  ASSERT_TRUE(start_and_sync({&nodes}).has_value());
  server_.forbid("list", kPods);
  auto& pods = cache_.informer<kube::Pod>("the pod cache");
  const Result<void> synced = start_and_sync({&nodes, &pods}, 100ms);
  ASSERT_FALSE(synced.has_value());
  EXPECT_EQ(synced.error().code, ErrorCode::kTimeout);
  EXPECT_EQ(synced.error().message, "the pod cache did not sync");
  server_.allow("list", kPods);
  EXPECT_TRUE(start_and_sync({&pods}).has_value());
}

// A scoped informer is shared by its holders, each told of changes while it holds it, and
// stops only `linger` after the last holder let go; taken again within the linger it is not
// listed again.
TEST_F(CacheTest, AScopedInformerIsSharedAndLingersAfterItsLastHolder) {
  ASSERT_TRUE(start_and_sync({}).has_value());
  server_.put(pod("p1", "w1"));
  server_.put(pod("p2", "w2"));
  const kube::ListOptions on_w1{.field_selector = "spec.nodeName=w1"};
  int told_a = 0;
  int told_b = 0;
  auto a = cache_.acquire<kube::Pod>("the pods of w1", "", on_w1,
                                     [&](const kube::Pod*, const kube::Pod*) { ++told_a; });
  auto b = cache_.acquire<kube::Pod>("the pods of w1", "", on_w1,
                                     [&](const kube::Pod*, const kube::Pod*) { ++told_b; });
  EXPECT_TRUE(http::test::run(io_, a.wait_synced(5s)));
  ASSERT_EQ(a.store().list().size(), 1U);
  EXPECT_EQ(a.store().list()[0]->meta.name, "p1");
  EXPECT_EQ(&a.store(), &b.store());
  EXPECT_EQ(cache_.scoped_informers(), 1U);
  EXPECT_EQ(told_a, 1);
  EXPECT_EQ(told_b, 1);
  b.release();
  server_.put(pod("p3", "w1"));
  run_until([&] { return a.store().size() == 2; });
  EXPECT_EQ(told_a, 2);
  EXPECT_EQ(told_b, 1);  // let go: no longer told
  a.release();
  // Taken again within the linger: the same informer, no new list.
  auto again = cache_.acquire<kube::Pod>("the pods of w1", "", on_w1);
  EXPECT_TRUE(again.synced());
  EXPECT_EQ(server_.count("list", kPods), 1U);
  again.release();
  run_until([&] { return cache_.scoped_informers() == 0; });
  run_until([&] { return server_.open_watches(kPods) == 0; });
  auto fresh = cache_.acquire<kube::Pod>("the pods of w1", "", on_w1);
  EXPECT_TRUE(http::test::run(io_, fresh.wait_synced(5s)));
  EXPECT_EQ(server_.count("list", kPods), 2U);
}

// After stop() nothing is lent any more, and a handle still held is let go without harm.
TEST_F(CacheTest, AfterStopNothingIsLent) {
  ASSERT_TRUE(start_and_sync({}).has_value());
  auto held =
      cache_.acquire<kube::Pod>("the pods of w1", "", {.field_selector = "spec.nodeName=w1"});
  EXPECT_TRUE(held);
  http::test::run(io_, [this]() -> asio::awaitable<bool> {
    co_await cache_.stop();
    co_return true;
  }());
  EXPECT_EQ(server_.open_watches(kPods), 0U);
  EXPECT_FALSE(cache_.acquire<kube::Pod>("the pods of w2", "", {}));
  held.release();
}

}  // namespace
}  // namespace nmo::runtime
