#include "runtime/reflector.h"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/redirect_error.hpp>
#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/watch_set.h"

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
using testing::ElementsAre;
using namespace std::chrono_literals;

// One step of a scripted watch: an event line, an error, or (neither) the server's normal end.
struct Step {
  std::optional<std::string> line;
  std::optional<Error> error;
};

// A watch that plays its steps, then waits until cancelled.
class FakeWatch final : public kube::WatchStream {
 public:
  explicit FakeWatch(std::vector<Step> steps) : steps_(steps.begin(), steps.end()) {}

  asio::awaitable<Result<std::optional<kube::WatchEvent>>> next() override {
    if (!cancelled_ && !steps_.empty()) {
      Step step = std::move(steps_.front());
      steps_.pop_front();
      if (step.error) co_return *step.error;
      if (!step.line) co_return std::optional<kube::WatchEvent>();
      auto event = kube::decode_watch_event(*step.line);
      if (!event) co_return event.error();
      co_return std::optional<kube::WatchEvent>(std::move(*event));
    }
    if (!cancelled_) {
      asio::steady_timer timer(co_await asio::this_coro::executor,
                               asio::steady_timer::time_point::max());
      blocked_ = &timer;
      boost::system::error_code ignored;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      blocked_ = nullptr;
    }
    co_return Error(ErrorCode::kCancelled, "watch cancelled");
  }

  void cancel() override {
    cancelled_ = true;
    if (blocked_ != nullptr) blocked_->cancel();
  }

 private:
  std::deque<Step> steps_;
  bool cancelled_ = false;
  asio::steady_timer* blocked_ = nullptr;
};

// A client that answers lists and watches from scripts and records what it was asked.
class FakeClient final : public kube::Client {
 public:
  const kube::RestConfig& config() const override { return config_; }
  asio::awaitable<Result<boost::json::value>> get_json(std::string /*path*/) override {
    co_return unsupported();
  }
  asio::awaitable<Result<boost::json::value>> create(std::string /*path*/,
                                                     boost::json::value /*object*/,
                                                     kube::WriteOptions /*options*/) override {
    co_return unsupported();
  }
  asio::awaitable<Result<boost::json::value>> update(std::string /*path*/,
                                                     boost::json::value /*object*/,
                                                     kube::WriteOptions /*options*/) override {
    co_return unsupported();
  }
  asio::awaitable<Result<boost::json::value>> patch(std::string /*path*/, kube::PatchType /*type*/,
                                                    std::string /*body*/,
                                                    kube::WriteOptions /*options*/) override {
    co_return unsupported();
  }
  asio::awaitable<Result<void>> remove(std::string /*path*/,
                                       kube::DeleteOptions /*options*/) override {
    co_return unsupported();
  }
  asio::awaitable<Result<kube::EvictionResult>> evict(std::string /*namespace_*/,
                                                      std::string /*name*/,
                                                      kube::EvictOptions /*options*/) override {
    co_return unsupported();
  }
  void shutdown() override {}

  asio::awaitable<Result<std::string>> list_raw(std::string path,
                                                kube::ListOptions options) override {
    list_paths.push_back(std::move(path));
    list_calls.push_back(std::move(options));
    if (lists.empty()) co_return Error(ErrorCode::kUnavailable, "no list scripted");
    Result<std::string> body = std::move(lists.front());
    lists.pop_front();
    co_return body;
  }

  asio::awaitable<Result<std::unique_ptr<kube::WatchStream>>> watch(
      std::string path, kube::WatchOptions options) override {
    watch_paths.push_back(std::move(path));
    watch_calls.push_back(std::move(options));
    if (watches.empty()) co_return std::make_unique<FakeWatch>(std::vector<Step>{});
    Result<std::vector<Step>> script = std::move(watches.front());
    watches.pop_front();
    if (!script) co_return script.error();
    co_return std::make_unique<FakeWatch>(std::move(*script));
  }

  std::deque<Result<std::string>> lists;
  std::deque<Result<std::vector<Step>>> watches;
  std::vector<std::string> list_paths;
  std::vector<kube::ListOptions> list_calls;
  std::vector<std::string> watch_paths;
  std::vector<kube::WatchOptions> watch_calls;

 private:
  static Error unsupported() { return {ErrorCode::kInternal, "not used by the reflector"}; }

  kube::RestConfig config_;
};

std::string object(const std::string& name, const std::string& version) {
  return R"({"metadata":{"namespace":"ns","name":")" + name + R"(","resourceVersion":")" + version +
         R"("}})";
}

std::string list_body(const std::string& version, const std::vector<std::string>& items) {
  std::string out =
      R"({"kind":"ItemList","metadata":{"resourceVersion":")" + version + R"("},"items":[)";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : ",") + items[i];
  return out + "]}";
}

Step event(const std::string& type, const std::string& object_json) {
  return {R"({"type":")" + type + R"(","object":)" + object_json + "}", std::nullopt};
}

Step bookmark(const std::string& version) {
  return event("BOOKMARK", R"({"metadata":{"resourceVersion":")" + version + R"("}})");
}

Step failure(ErrorCode code, const std::string& message) {
  return {std::nullopt, Error(code, message)};
}

Step server_end() { return {}; }

class ReflectorTest : public testing::Test {
 protected:
  // Stops the reflector even when a test returned early, so it is never destroyed running.
  void TearDown() override {
    if (reflector_ != nullptr) stop(*reflector_);
  }

  // A reflector of namespace "ns" filling store_, owned by the fixture.
  Reflector<Item>& make_reflector(kube::ListOptions selectors = {}) {
    reflector_ = std::make_unique<Reflector<Item>>(io_.get_executor(), client_, "ns",
                                                   std::move(selectors), store_);
    return *reflector_;
  }

  // Runs the io_context until `condition` holds; fails the test after 10 s.
  void run_until(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!condition()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "condition not reached in 10 s";
      if (io_.stopped()) io_.restart();
      io_.run_one_for(50ms);
    }
  }

  template <typename T>
  T await(asio::awaitable<T> awaitable) {
    std::optional<T> out;
    asio::co_spawn(io_, std::move(awaitable), [&](const std::exception_ptr& error, T value) {
      if (error) std::rethrow_exception(error);
      out = std::move(value);
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

  std::vector<std::string> watched_versions() const {
    std::vector<std::string> out;
    for (const auto& call : client_.watch_calls) out.push_back(call.resource_version);
    return out;
  }

  asio::io_context io_;
  FakeClient client_;
  std::shared_ptr<Store<Item>> store_ = std::make_shared<Store<Item>>();
  std::vector<std::string> changes_;
  std::unique_ptr<Reflector<Item>> reflector_;  // last: destroyed before what it uses
};

TEST_F(ReflectorTest, ListsThenWatchesFromTheListedVersion) {
  client_.lists.emplace_back(list_body("10", {object("a", "5"), object("b", "6")}));
  client_.watches.emplace_back(std::vector<Step>{
      event("ADDED", object("c", "11")),
      event("MODIFIED", object("a", "12")),
      event("DELETED", object("b", "13")),
  });
  Reflector<Item>& reflector =
      make_reflector({.label_selector = "app=x", .field_selector = "f=y", .limit = 7});
  record_changes(reflector);
  EXPECT_FALSE(reflector.synced());
  reflector.start();
  EXPECT_TRUE(await(reflector.wait_synced(5s)));
  run_until([&] { return changes_.size() == 5; });
  EXPECT_THAT(changes_, ElementsAre("+a@5", "+b@6", "+c@11", "~a@5->12", "-b@6"));
  EXPECT_TRUE(reflector.synced());
  EXPECT_TRUE(store_->has_synced());
  EXPECT_EQ(store_->size(), 2U);
  EXPECT_EQ(store_->get("ns/a")->meta.resource_version, "12");
  EXPECT_EQ(store_->get("ns/b"), nullptr);

  ASSERT_EQ(client_.list_calls.size(), 1U);
  EXPECT_EQ(client_.list_paths[0], "/api/v1/namespaces/ns/items");
  EXPECT_EQ(client_.list_calls[0].label_selector, "app=x");
  EXPECT_EQ(client_.list_calls[0].field_selector, "f=y");
  EXPECT_EQ(client_.list_calls[0].limit, 500);
  ASSERT_EQ(client_.watch_calls.size(), 1U);
  EXPECT_EQ(client_.watch_paths[0], "/api/v1/namespaces/ns/items");
  const kube::WatchOptions& watch = client_.watch_calls[0];
  EXPECT_EQ(watch.resource_version, "10");
  EXPECT_EQ(watch.label_selector, "app=x");
  EXPECT_EQ(watch.field_selector, "f=y");
  EXPECT_TRUE(watch.allow_bookmarks);
  EXPECT_EQ(watch.timeout, 290s);
  EXPECT_EQ(watch.idle_timeout, 295s);

  stop(reflector);
  EXPECT_EQ(reflector.watch_restarts(), 0U);
  EXPECT_EQ(reflector.relists(), 0U);
}

TEST_F(ReflectorTest, WatchClosedByTheServerResumesFromTheLastVersionIncludingBookmarks) {
  client_.lists.emplace_back(list_body("10", {}));
  client_.watches.emplace_back(
      std::vector<Step>{event("ADDED", object("a", "11")), bookmark("20"), server_end()});
  client_.watches.emplace_back(std::vector<Step>{event("ADDED", object("b", "21"))});
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  run_until([&] { return store_->size() == 2; });
  EXPECT_THAT(watched_versions(), ElementsAre("10", "20"));
  EXPECT_EQ(client_.list_calls.size(), 1U);
  EXPECT_EQ(reflector.watch_restarts(), 1U);
  EXPECT_EQ(reflector.relists(), 0U);
  stop(reflector);
}

TEST_F(ReflectorTest, ExpiredWatchRelistsAndReportsTheDifferences) {
  client_.lists.emplace_back(list_body("10", {object("a", "5"), object("b", "6")}));
  client_.watches.emplace_back(std::vector<Step>{event(
      "ERROR",
      R"({"kind":"Status","status":"Failure","reason":"Expired","code":410,"message":"too old"})")});
  client_.lists.emplace_back(list_body("30", {object("a", "7"), object("c", "8")}));
  client_.watches.emplace_back(std::vector<Step>{});
  Reflector<Item>& reflector = make_reflector();
  record_changes(reflector);
  reflector.start();
  run_until([&] { return client_.watch_calls.size() == 2; });
  EXPECT_THAT(changes_, ElementsAre("+a@5", "+b@6", "~a@5->7", "+c@8", "-b@6"));
  EXPECT_THAT(watched_versions(), ElementsAre("10", "30"));
  EXPECT_EQ(reflector.relists(), 1U);
  EXPECT_EQ(reflector.watch_restarts(), 1U);
  EXPECT_EQ(store_->size(), 2U);
  stop(reflector);
}

TEST_F(ReflectorTest, RefusedWatchWithGoneRelists) {
  client_.lists.emplace_back(list_body("10", {}));
  client_.watches.emplace_back(Error(ErrorCode::kGone, "gone", 410));
  client_.lists.emplace_back(list_body("40", {object("a", "39")}));
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  run_until([&] { return client_.watch_calls.size() == 2; });
  EXPECT_THAT(watched_versions(), ElementsAre("10", "40"));
  EXPECT_EQ(reflector.relists(), 1U);
  EXPECT_NE(store_->get("ns/a"), nullptr);
  stop(reflector);
}

TEST_F(ReflectorTest, OtherErrorsBackOffAndResumeFromTheLastVersionWithoutRelisting) {
  client_.lists.emplace_back(list_body("10", {}));
  client_.watches.emplace_back(std::vector<Step>{event("ADDED", object("a", "11")),
                                                 failure(ErrorCode::kUnavailable, "reset")});
  client_.watches.emplace_back(Error(ErrorCode::kInternal, "boom", 500));
  client_.watches.emplace_back(std::vector<Step>{event("ADDED", object("b", "12"))});
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  run_until([&] { return store_->size() == 2; });
  EXPECT_THAT(watched_versions(), ElementsAre("10", "11", "11"));
  EXPECT_EQ(client_.list_calls.size(), 1U);
  EXPECT_EQ(reflector.watch_restarts(), 2U);
  EXPECT_EQ(reflector.relists(), 0U);
  stop(reflector);
}

TEST_F(ReflectorTest, ObjectsThatDoNotDecodeAreSkipped) {
  client_.lists.emplace_back(list_body("10", {}));
  client_.watches.emplace_back(std::vector<Step>{
      event("ADDED", R"({"metadata":{"namespace":"ns","name":5,"resourceVersion":"11"}})"),
      event("ADDED", object("a", "12")),
  });
  Reflector<Item>& reflector = make_reflector();
  record_changes(reflector);
  reflector.start();
  run_until([&] { return !changes_.empty(); });
  EXPECT_THAT(changes_, ElementsAre("+a@12"));
  EXPECT_EQ(store_->size(), 1U);
  EXPECT_EQ(reflector.watch_restarts(), 0U);
  stop(reflector);
}

TEST_F(ReflectorTest, FailedListIsRetriedUntilItSucceeds) {
  client_.lists.emplace_back(Error(ErrorCode::kForbidden, "no", 403));
  client_.lists.emplace_back(list_body("10", {object("a", "1")}));
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  EXPECT_TRUE(await(reflector.wait_synced(5s)));
  EXPECT_EQ(client_.list_calls.size(), 2U);
  EXPECT_EQ(reflector.relists(), 0U);
  EXPECT_EQ(store_->size(), 1U);
  EXPECT_THAT(watched_versions(), ElementsAre("10"));
  stop(reflector);
}

TEST_F(ReflectorTest, WaitSyncedTimesOutWhileListsFail) {
  // No list is scripted: every list fails.
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  EXPECT_FALSE(await(reflector.wait_synced(20ms)));
  EXPECT_FALSE(reflector.synced());
  EXPECT_FALSE(store_->has_synced());
  EXPECT_GE(client_.list_calls.size(), 1U);
  EXPECT_TRUE(client_.watch_calls.empty());
  stop(reflector);
}

// A WatchSet starts what it holds (one added later at once), waits for each and names the one
// that did not sync.
TEST_F(ReflectorTest, WatchSetWaitsForEachAndNamesTheOneThatDidNotSync) {
  client_.lists.emplace_back(list_body("10", {object("a", "1")}));
  WatchSet watches;
  Reflector<Item>& first = watches.add(
      "the first cache", std::make_unique<Reflector<Item>>(io_.get_executor(), client_, "ns",
                                                           kube::ListOptions{}, store_));
  watches.start();
  EXPECT_TRUE(await(watches.wait_synced(5s)).has_value());
  EXPECT_TRUE(first.synced());
  // No list is scripted for the second one: it never syncs.
  watches.add("the second cache", std::make_unique<Reflector<Item>>(
                                      io_.get_executor(), client_, "ns", kube::ListOptions{},
                                      std::make_shared<Store<Item>>()));
  const Result<void> synced = await(watches.wait_synced(50ms));
  ASSERT_FALSE(synced.has_value());
  EXPECT_EQ(synced.error().code, ErrorCode::kTimeout);
  EXPECT_EQ(synced.error().message, "the second cache did not sync");
  bool stopped = false;
  asio::co_spawn(io_, watches.stop(), [&](const std::exception_ptr& error) {
    if (error) std::rethrow_exception(error);
    stopped = true;
  });
  run_until([&] { return stopped; });
}

TEST_F(ReflectorTest, StopBeforeStartPreventsTheLoopAndIsIdempotent) {
  Reflector<Item>& reflector = make_reflector();
  stop(reflector);
  reflector.start();
  stop(reflector);
  EXPECT_FALSE(await(reflector.wait_synced(5s)));
  EXPECT_TRUE(client_.list_calls.empty());
}

TEST_F(ReflectorTest, StopWakesSyncWaiters) {
  client_.lists.emplace_back(Error(ErrorCode::kForbidden, "no", 403));
  Reflector<Item>& reflector = make_reflector();
  reflector.start();
  std::optional<bool> synced;
  asio::co_spawn(io_, reflector.wait_synced(60s),
                 [&](const std::exception_ptr& /*error*/, bool value) { synced = value; });
  run_until([&] { return client_.list_calls.size() == 1; });
  stop(reflector);
  run_until([&] { return synced.has_value(); });
  EXPECT_EQ(synced, false);
}

}  // namespace
}  // namespace nmo::runtime
