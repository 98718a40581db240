#include "runtime/reflector.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "http/testing/run.h"
#include "kube/client/testing/fake_api_server.h"

namespace nmo::kube {

// A small namespaced projection for the tests.
struct Item {
  ObjectMeta meta;
};

template <>
struct ResourceInfo<Item> {
  static constexpr std::string_view kGroup = "";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "items";
  static constexpr std::string_view kKind = "Item";
  static constexpr bool kNamespaced = true;
  static Result<Item> decode(const boost::json::value& object) {
    auto meta = decode_meta(object);
    if (!meta) return meta.error();
    return Item{std::move(*meta)};
  }
};

}  // namespace nmo::kube

namespace nmo::runtime {
namespace {

using kube::Item;
using kube::testing::FakeApiServer;
using ::testing::ElementsAre;
using namespace std::chrono_literals;

constexpr const char* kItems = "/api/v1/namespaces/ns/items";

// An Item of namespace "ns", with `labels` (a JSON object).
boost::json::value item(const std::string& name, const std::string& labels = "{}") {
  return boost::json::parse(R"({"apiVersion":"v1","kind":"Item","metadata":{"namespace":"ns",)"
                            R"("name":")" +
                            name + R"(","labels":)" + labels + "}}");
}

class ReflectorTest : public ::testing::Test {
 protected:
  // Stops the reflector even when a test returned early, so it is never destroyed running.
  // Also checks that the reflector only listed and watched its collection.
  void TearDown() override {
    if (reflector_ != nullptr) stop(*reflector_);
    for (const kube::testing::FakeRequest& request : server_.requests()) {
      EXPECT_TRUE((request.verb == "list" || request.verb == "watch") && request.path == kItems)
          << "unexpected " << request.verb << " " << request.path;
    }
  }

  // A reflector of namespace "ns" filling store_, owned by the fixture.
  Reflector<Item>& make_reflector(kube::ListOptions selectors = {}) {
    reflector_ = std::make_unique<Reflector<Item>>(io_.get_executor(), server_, "ns",
                                                   std::move(selectors), store_);
    return *reflector_;
  }

  // Runs the io_context until `condition` holds; fails the test after 10 s.
  void run_until(const std::function<bool()>& condition) {
    ASSERT_TRUE(http::test::run_until(io_, condition, 10s)) << "condition not reached in 10 s";
  }

  template <typename T>
  T await(asio::awaitable<T> awaitable) {
    std::optional<T> out;
    asio::co_spawn(io_, std::move(awaitable), [&](const std::exception_ptr& error, T value) {
      if (error) std::rethrow_exception(error);
      out.emplace(std::move(value));
    });
    run_until([&] { return out.has_value(); });
    return out.value_or(T{});
  }

  void stop(Reflector<Item>& reflector) {
    bool stopped = false;
    asio::co_spawn(io_, reflector.stop(), [&](const std::exception_ptr& error) {
      if (error) std::rethrow_exception(error);
      stopped = true;
    });
    run_until([&] { return stopped; });
  }

  // Records every change as "+name@v", "~name@v1->v2" or "-name@v".
  void record_changes(Reflector<Item>& reflector) {
    reflector.on_change([this](const Item* before, const Item* after) {
      if (before == nullptr) {
        changes_.push_back("+" + after->meta.name + "@" + after->meta.resource_version);
      } else if (after == nullptr) {
        changes_.push_back("-" + before->meta.name + "@" + before->meta.resource_version);
      } else {
        changes_.push_back("~" + after->meta.name + "@" + before->meta.resource_version + "->" +
                           after->meta.resource_version);
      }
    });
  }

  // The resourceVersion each watch started from, in order.
  std::vector<std::string> watched_versions() const {
    std::vector<std::string> out;
    for (const kube::testing::FakeRequest& request : server_.requests()) {
      if (request.verb == "watch") out.push_back(request.watch_options->resource_version);
    }
    return out;
  }

  // The requests of one verb.
  std::vector<kube::testing::FakeRequest> requests(const std::string& verb) const {
    std::vector<kube::testing::FakeRequest> out;
    for (const kube::testing::FakeRequest& request : server_.requests()) {
      if (request.verb == verb) out.push_back(request);
    }
    return out;
  }

  asio::io_context io_;
  FakeApiServer server_{io_.get_executor()};
  std::shared_ptr<Store<Item>> store_ = std::make_shared<Store<Item>>();
  std::vector<std::string> changes_;
  std::unique_ptr<Reflector<Item>> reflector_;  // last: destroyed before what it uses
};

TEST_F(ReflectorTest, ListsThenWatchesFromTheListedVersion) {
  server_.put(item("a", R"({"app":"x"})"));     // version 2
  server_.put(item("b", R"({"app":"x"})"));     // 3
  server_.put(item("other"));                   // 4: not selected by its labels
  server_.put(item("skip", R"({"app":"x"})"));  // 5: not selected by its name
  Reflector<Item>& reflector = make_reflector(
      {.label_selector = "app=x", .field_selector = "metadata.name!=skip", .limit = 7});
  record_changes(reflector);
  EXPECT_FALSE(reflector.synced());
  reflector.start();
  EXPECT_TRUE(await(reflector.wait_synced(5s)));
  run_until([&] { return server_.open_watches() == 1; });
  server_.put(item("c", R"({"app":"x"})"));                  // 6
  server_.put(item("a", R"({"app":"x","more":"labels"})"));  // 7
  server_.put(item("other", R"({"still":"unselected"})"));   // 8
  ASSERT_TRUE(server_.erase(std::string(kItems) + "/b"));    // 9
  run_until([&] { return changes_.size() == 5; });
  EXPECT_THAT(changes_, ElementsAre("+a@2", "+b@3", "+c@6", "~a@2->7", "-b@3"));
  EXPECT_TRUE(reflector.synced());
  EXPECT_TRUE(store_->has_synced());
  EXPECT_EQ(store_->size(), 2U);
  EXPECT_EQ(store_->get("ns/a")->meta.resource_version, "7");
  EXPECT_EQ(store_->get("ns/b"), nullptr);

  const std::vector<kube::testing::FakeRequest> lists = requests("list");
  ASSERT_EQ(lists.size(), 1U);
  EXPECT_EQ(lists[0].path, kItems);
  EXPECT_EQ(lists[0].list_options->label_selector, "app=x");
  EXPECT_EQ(lists[0].list_options->field_selector, "metadata.name!=skip");
  EXPECT_EQ(lists[0].list_options->limit, 500);
  const std::vector<kube::testing::FakeRequest> watches = requests("watch");
  ASSERT_EQ(watches.size(), 1U);
  EXPECT_EQ(watches[0].path, kItems);
  const kube::WatchOptions& watch = *watches[0].watch_options;
  EXPECT_EQ(watch.resource_version, "5");
  EXPECT_EQ(watch.label_selector, "app=x");
  EXPECT_EQ(watch.field_selector, "metadata.name!=skip");
  EXPECT_TRUE(watch.allow_bookmarks);
  EXPECT_EQ(watch.timeout, 290s);
  EXPECT_EQ(watch.idle_timeout, 295s);

  stop(reflector);
  EXPECT_EQ(server_.open_watches(), 0U);
  EXPECT_EQ(reflector.watch_restarts(), 0U);
  EXPECT_EQ(reflector.relists(), 0U);
}

TEST_F(ReflectorTest, WatchClosedByTheServerResumesFromTheLastVersionIncludingBookmarks) {
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  run_until([&] { return server_.open_watches() == 1; });  // listed at version 1
  server_.put(item("a"));                                  // 2
  run_until([&] { return store_->size() == 1; });
  boost::json::value elsewhere = item("x");
  elsewhere.as_object()["metadata"].as_object()["namespace"] = "other";
  server_.put(elsewhere);  // 3: only a bookmark carries this version to the watch of "ns"
  server_.send_bookmarks();
  server_.end_watches();
  run_until([&] { return server_.open_watches() == 1; });
  server_.put(item("b"));  // 4
  run_until([&] { return store_->size() == 2; });
  EXPECT_THAT(watched_versions(), ElementsAre("1", "3"));
  EXPECT_EQ(server_.count("list"), 1U);
  EXPECT_EQ(reflector.watch_restarts(), 1U);
  EXPECT_EQ(reflector.relists(), 0U);
  stop(reflector);
}

TEST_F(ReflectorTest, ExpiredWatchRelistsAndReportsTheDifferences) {
  server_.put(item("a"));  // 2
  server_.put(item("b"));  // 3
  Reflector<Item>& reflector = make_reflector();
  record_changes(reflector);
  reflector.start();
  run_until([&] { return server_.open_watches() == 1; });
  server_.expire_watches();
  // Changes the expired watch never delivers: only the relist finds them.
  server_.put(item("a", R"({"changed":"yes"})"));          // 4
  ASSERT_TRUE(server_.erase(std::string(kItems) + "/b"));  // 5
  server_.put(item("c"));                                  // 6
  run_until([&] { return server_.count("watch") == 2; });
  EXPECT_THAT(changes_, ElementsAre("+a@2", "+b@3", "~a@2->4", "+c@6", "-b@3"));
  EXPECT_THAT(watched_versions(), ElementsAre("3", "6"));
  EXPECT_EQ(reflector.relists(), 1U);
  EXPECT_EQ(reflector.watch_restarts(), 1U);
  EXPECT_EQ(store_->size(), 2U);
  stop(reflector);
}

TEST_F(ReflectorTest, RefusedWatchWithGoneRelists) {
  server_.fail_next("watch", kItems, Error(ErrorCode::kGone, "gone", 410));
  // Written between the list and the refused watch: only a relist finds it.
  server_.before_next("watch", kItems, [this] { server_.put(item("a")); });  // 2
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  run_until([&] { return server_.count("watch") == 2; });
  EXPECT_THAT(watched_versions(), ElementsAre("1", "2"));
  EXPECT_EQ(reflector.relists(), 1U);
  EXPECT_NE(store_->get("ns/a"), nullptr);
  stop(reflector);
}

TEST_F(ReflectorTest, OtherErrorsBackOffAndResumeFromTheLastVersionWithoutRelisting) {
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  run_until([&] { return server_.open_watches() == 1; });  // listed at version 1
  server_.put(item("a"));                                  // 2
  run_until([&] { return store_->size() == 1; });
  server_.break_watches(Error(ErrorCode::kUnavailable, "reset"));
  server_.fail_next("watch", kItems, Error(ErrorCode::kInternal, "boom", 500));
  server_.put(item("b"));  // 3: after the broken watch; the third watch replays it
  run_until([&] { return store_->size() == 2; });
  EXPECT_THAT(watched_versions(), ElementsAre("1", "2", "2"));
  EXPECT_EQ(server_.count("list"), 1U);
  EXPECT_EQ(reflector.watch_restarts(), 2U);
  EXPECT_EQ(reflector.relists(), 0U);
  stop(reflector);
}

TEST_F(ReflectorTest, ObjectsThatDoNotDecodeAreSkipped) {
  Reflector<Item>& reflector = make_reflector();
  record_changes(reflector);
  reflector.start();
  run_until([&] { return server_.open_watches() == 1; });
  server_.put(item("bad", R"({"app":5})"));  // 2: metadata.labels.app is not a string
  server_.put(item("a"));                    // 3
  run_until([&] { return !changes_.empty(); });
  EXPECT_THAT(changes_, ElementsAre("+a@3"));
  EXPECT_EQ(store_->size(), 1U);
  EXPECT_EQ(reflector.watch_restarts(), 0U);
  stop(reflector);
}

TEST_F(ReflectorTest, FailedListIsRetriedUntilItSucceeds) {
  server_.fail_next("list", kItems, Error(ErrorCode::kForbidden, "no", 403));
  server_.put(item("a"));  // 2
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  EXPECT_TRUE(await(reflector.wait_synced(5s)));
  EXPECT_EQ(server_.count("list"), 2U);
  EXPECT_EQ(reflector.relists(), 0U);
  EXPECT_EQ(store_->size(), 1U);
  run_until([&] { return server_.open_watches() == 1; });
  EXPECT_THAT(watched_versions(), ElementsAre("2"));
  stop(reflector);
}

TEST_F(ReflectorTest, WaitSyncedTimesOutWhileListsFail) {
  server_.forbid("list", kItems);
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  EXPECT_FALSE(await(reflector.wait_synced(20ms)));
  EXPECT_FALSE(reflector.synced());
  EXPECT_FALSE(store_->has_synced());
  EXPECT_GE(server_.count("list"), 1U);
  EXPECT_EQ(server_.count("watch"), 0U);
  stop(reflector);
}

TEST_F(ReflectorTest, StopBeforeStartPreventsTheLoopAndIsIdempotent) {
  Reflector<Item>& reflector = make_reflector();
  stop(reflector);
  reflector.start();
  stop(reflector);
  EXPECT_FALSE(await(reflector.wait_synced(5s)));
  EXPECT_EQ(server_.count("list"), 0U);
}

TEST_F(ReflectorTest, StopWakesSyncWaiters) {
  server_.forbid("list", kItems);
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  std::optional<bool> synced;
  asio::co_spawn(io_, reflector.wait_synced(60s),
                 [&](const std::exception_ptr& /*error*/, bool value) { synced = value; });
  run_until([&] { return server_.count("list") == 1; });
  stop(reflector);
  run_until([&] { return synced.has_value(); });
  EXPECT_EQ(synced, false);
}

}  // namespace
}  // namespace nmo::runtime
