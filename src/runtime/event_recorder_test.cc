#include "runtime/event_recorder.h"

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "kube/api/time.h"
#include "kube/client/testing/fake_api_server.h"
#include "runtime/internal/event_recorder_correlator.h"
#include "runtime/internal/event_recorder_json.h"

namespace nmo::runtime {
namespace {

namespace json = boost::json;
using internal::aggregation_key;
using internal::EventSource;
using internal::LruCache;
using internal::spam_key;
using internal::SpamFilter;
using namespace std::chrono_literals;

const EventSource kSource{"node-maintenance-operator", "nmo-7d9f-abcde"};

ObjectRef node_ref() { return {"v1", "Node", "", "node-worker-01", "9a1c-uid"}; }
ObjectRef pod_ref() { return {"v1", "Pod", "shop", "web-0", "pod-uid"}; }

EventOptions cordoned() { return {EventType::kNormal, "Cordoned", "node cordoned", std::nullopt}; }

kube::Time at(int seconds) {
  return kube::Time(std::chrono::sys_days(std::chrono::year(2026) / 11 / 30)) +
         std::chrono::hours(10) + std::chrono::seconds(seconds) + std::chrono::microseconds(250);
}

// ---- aggregation and spam keys ----

TEST(AggregationKey, LengthPrefixesEveryField) {
  EXPECT_EQ(aggregation_key(kSource, node_ref(), cordoned()),
            "25:node-maintenance-operator14:nmo-7d9f-abcde2:v14:Node0:14:node-worker-018:9a1c-uid"
            "6:Normal8:Cordoned13:node cordoned");
}

TEST(AggregationKey, DiffersInEveryField) {
  const std::string base = aggregation_key(kSource, node_ref(), cordoned());
  EventOptions other_message = cordoned();
  other_message.message = "node cordoned again";
  EventOptions other_reason = cordoned();
  other_reason.reason = "Drained";
  EventOptions other_type = cordoned();
  other_type.type = EventType::kWarning;
  ObjectRef other_uid = node_ref();
  other_uid.uid = "another-uid";
  ObjectRef other_kind = node_ref();
  other_kind.kind = "Machine";
  EXPECT_NE(aggregation_key(kSource, node_ref(), other_message), base);
  EXPECT_NE(aggregation_key(kSource, node_ref(), other_reason), base);
  EXPECT_NE(aggregation_key(kSource, node_ref(), other_type), base);
  EXPECT_NE(aggregation_key(kSource, other_uid, cordoned()), base);
  EXPECT_NE(aggregation_key(kSource, other_kind, cordoned()), base);
  EXPECT_NE(aggregation_key({"other", kSource.host}, node_ref(), cordoned()), base);
  // The related object does not make an event different (client-go ignores it too).
  EventOptions with_related = cordoned();
  with_related.related = pod_ref();
  EXPECT_EQ(aggregation_key(kSource, node_ref(), with_related), base);
}

TEST(AggregationKey, FieldBoundariesCannotCollide) {
  EventOptions a{EventType::kNormal, "ab", "c", std::nullopt};
  EventOptions b{EventType::kNormal, "a", "bc", std::nullopt};
  EXPECT_NE(aggregation_key(kSource, node_ref(), a), aggregation_key(kSource, node_ref(), b));
}

TEST(SpamKey, IgnoresTheMessageButNotTheReason) {
  EventOptions other_message = cordoned();
  other_message.message = "something else";
  EventOptions other_reason = cordoned();
  other_reason.reason = "Drained";
  EXPECT_EQ(spam_key(kSource, node_ref(), other_message),
            spam_key(kSource, node_ref(), cordoned()));
  EXPECT_NE(spam_key(kSource, node_ref(), other_reason), spam_key(kSource, node_ref(), cordoned()));
}

// ---- JSON ----

TEST(BuildEvent, ClusterScopedObjectGoesToDefaultWithExactFields) {
  const json::value event = internal::build_event("node-worker-01.00000000000000ff", kSource,
                                                  node_ref(), cordoned(), at(5));
  const json::value expected = json::parse(R"({
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "node-worker-01.00000000000000ff", "namespace": "default"},
    "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "node-worker-01",
                       "uid": "9a1c-uid"},
    "type": "Normal",
    "reason": "Cordoned",
    "message": "node cordoned",
    "source": {"component": "node-maintenance-operator", "host": "nmo-7d9f-abcde"},
    "firstTimestamp": "2026-11-30T10:00:05Z",
    "lastTimestamp": "2026-11-30T10:00:05Z",
    "count": 1,
    "reportingComponent": "node-maintenance-operator",
    "reportingInstance": "nmo-7d9f-abcde"
  })");
  EXPECT_EQ(event, expected) << json::serialize(event);
}

TEST(BuildEvent, NamespacedObjectWithRelatedAndNoHost) {
  EventOptions evicted{EventType::kWarning, "EvictionFailed", "PDB blocks it", pod_ref()};
  ObjectRef nm{"nmo.medik8s.io/v1beta1", "NodeMaintenance", "ops", "nm-1", "nm-uid"};
  const json::value event = internal::build_event("nm-1.1", {"nmo", ""}, nm, evicted, at(0));
  EXPECT_EQ(event.at("metadata").at("namespace"), "ops");
  EXPECT_EQ(event.at("involvedObject"), json::parse(R"({"apiVersion": "nmo.medik8s.io/v1beta1",
      "kind": "NodeMaintenance", "name": "nm-1", "uid": "nm-uid", "namespace": "ops"})"));
  EXPECT_EQ(event.at("related"), json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "name": "web-0", "uid": "pod-uid", "namespace": "shop"})"));
  EXPECT_EQ(event.at("source"), json::parse(R"({"component": "nmo"})"));
  EXPECT_EQ(event.at("type"), "Warning");
}

TEST(BuildCountPatch, CarriesCountTimeAndMessage) {
  EXPECT_EQ(
      internal::build_count_patch(7, "node \"a\" cordoned", at(61)),
      R"({"count":7,"lastTimestamp":"2026-11-30T10:01:01Z","message":"node \"a\" cordoned"})");
}

// ---- LRU ----

TEST(LruCache, EvictsTheLeastRecentlyUsed) {
  LruCache<int> cache(2);
  cache.put("a", 1);
  cache.put("b", 2);
  ASSERT_NE(cache.get("a"), nullptr);  // "a" is now the most recently used
  cache.put("c", 3);                   // evicts "b"
  EXPECT_EQ(cache.size(), 2U);
  EXPECT_EQ(cache.get("b"), nullptr);
  ASSERT_NE(cache.get("a"), nullptr);
  EXPECT_EQ(*cache.get("a"), 1);
  ASSERT_NE(cache.get("c"), nullptr);
  EXPECT_EQ(*cache.get("c"), 3);
}

TEST(LruCache, PutReplacesAndEraseRemoves) {
  LruCache<int> cache(2);
  cache.put("a", 1);
  cache.put("a", 5);
  EXPECT_EQ(cache.size(), 1U);
  EXPECT_EQ(*cache.get("a"), 5);
  cache.erase("a");
  cache.erase("missing");
  EXPECT_EQ(cache.size(), 0U);
  EXPECT_EQ(cache.get("a"), nullptr);
}

// ---- spam filter ----

TEST(SpamFilter, BurstThenOnePerRefill) {
  FakeClock clock;
  SpamFilter filter(25, 5min, 16, clock);
  for (int i = 0; i < 25; ++i) EXPECT_TRUE(filter.allow("k")) << i;
  EXPECT_FALSE(filter.allow("k"));
  EXPECT_TRUE(filter.allow("other"));  // budgets are per key
  clock.advance(5min - 1ns);
  EXPECT_FALSE(filter.allow("k"));
  clock.advance(1ns);
  EXPECT_TRUE(filter.allow("k"));
  EXPECT_FALSE(filter.allow("k"));
}

TEST(SpamFilter, RefusalsDoNotBorrowAndTokensCapAtBurst) {
  FakeClock clock;
  SpamFilter filter(2, 1min, 16, clock);
  EXPECT_TRUE(filter.allow("k"));
  EXPECT_TRUE(filter.allow("k"));
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(filter.allow("k"));
  clock.advance(1min);
  EXPECT_TRUE(filter.allow("k"));  // 100 refusals took nothing from the future
  clock.advance(1h);               // refills to the burst of 2, not 60
  EXPECT_TRUE(filter.allow("k"));
  EXPECT_TRUE(filter.allow("k"));
  EXPECT_FALSE(filter.allow("k"));
}

// ---- the recorder against the in-memory API server ----

class EventRecorderTest : public ::testing::Test {
 protected:
  // The recorder only creates and patches Events.
  void TearDown() override {
    for (const kube::testing::FakeRequest& request : server_.requests()) {
      EXPECT_TRUE((request.verb == "create" || request.verb == "patch") &&
                  request.path.find("/events") != std::string::npos)
          << "unexpected " << request.verb << " " << request.path;
    }
  }

  // Runs `task` on the test's io_context until it completes (everything the fake does
  // completes at once, so polling drains all ready work).
  void await(asio::awaitable<void> task) {
    bool done = false;
    std::exception_ptr error;
    asio::co_spawn(io_, std::move(task), [&](std::exception_ptr e) {
      error = e;
      done = true;
    });
    io_.restart();
    io_.poll();
    ASSERT_TRUE(done);
    if (error) std::rethrow_exception(error);
  }

  // The writes the recorder sent (every call is one: it never reads).
  const std::vector<kube::testing::FakeRequest>& calls() const { return server_.requests(); }

  // The Event as the API server holds it now.
  std::optional<json::value> stored(const std::string& ns, const json::value& call_body) const {
    return server_.object("/api/v1/namespaces/" + ns + "/events/" +
                          std::string(call_body.at("metadata").at("name").as_string()));
  }

  asio::io_context io_;
  kube::testing::FakeApiServer server_{io_.get_executor()};
  FakeClock clock_;
};

TEST_F(EventRecorderTest, RepeatsPatchTheFirstEvent) {
  EventRecorder recorder(io_.get_executor(), server_, "nmo", "host-1", clock_);
  recorder.start();
  for (int i = 0; i < 3; ++i) recorder.record(pod_ref(), cordoned());
  await(recorder.flush());
  ASSERT_EQ(calls().size(), 3U);
  EXPECT_EQ(calls()[0].verb, "create");
  EXPECT_EQ(calls()[0].path, "/api/v1/namespaces/shop/events");
  const std::string name(calls()[0].body.at("metadata").at("name").as_string());
  EXPECT_THAT(name, ::testing::MatchesRegex("web-0\\.[0-9a-f]{16}"));
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(calls()[i].verb, "patch");
    EXPECT_EQ(calls()[i].path, "/api/v1/namespaces/shop/events/" + name);
    EXPECT_EQ(calls()[i].patch_type, kube::PatchType::kMergePatch);
    EXPECT_EQ(calls()[i].body.at("count"), static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(calls()[i].body.at("message"), "node cordoned");
  }
  // The API server holds one Event, counted three times.
  const std::optional<json::value> event = stored("shop", calls()[0].body);
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->at("count"), 3);
  EXPECT_EQ(server_.objects("/api/v1/namespaces/shop/events").size(), 1U);
  await(recorder.stop(1s));
}

TEST_F(EventRecorderTest, VanishedEventIsCreatedAgain) {
  EventRecorder recorder(io_.get_executor(), server_, "nmo", "", clock_);
  recorder.start();
  recorder.record(node_ref(), cordoned());
  await(recorder.flush());
  // The Event vanishes (its TTL ran out): the next patch finds nothing.
  ASSERT_TRUE(server_.erase("/api/v1/namespaces/default/events/" +
                            std::string(calls()[0].body.at("metadata").at("name").as_string())));
  recorder.record(node_ref(), cordoned());
  await(recorder.flush());
  ASSERT_EQ(calls().size(), 3U);
  EXPECT_EQ(calls()[1].verb, "patch");
  EXPECT_EQ(calls()[1].patch_type, kube::PatchType::kMergePatch);
  EXPECT_EQ(calls()[2].verb, "create");
  EXPECT_EQ(calls()[2].path, "/api/v1/namespaces/default/events");
  EXPECT_EQ(calls()[2].body.at("count"), 1);
  EXPECT_NE(calls()[2].body.at("metadata").at("name"), calls()[0].body.at("metadata").at("name"));
  ASSERT_TRUE(stored("default", calls()[2].body).has_value());
  await(recorder.stop(1s));
}

TEST_F(EventRecorderTest, SpamFilterDropsBeyondTheBurst) {
  EventRecorder recorder(io_.get_executor(), server_, "nmo", "", clock_,
                         {.spam_burst = 2, .spam_refill = 1min});
  recorder.start();
  for (int i = 0; i < 5; ++i) {
    recorder.record(node_ref(),
                    {EventType::kNormal, "Tick", "tick " + std::to_string(i), std::nullopt});
  }
  await(recorder.flush());
  ASSERT_EQ(calls().size(), 2U);
  EXPECT_EQ(calls()[1].body.at("message"), "tick 1");
  clock_.advance(1min);
  recorder.record(node_ref(), {EventType::kNormal, "Tick", "tick 5", std::nullopt});
  await(recorder.flush());
  ASSERT_EQ(calls().size(), 3U);
  EXPECT_EQ(calls()[2].body.at("message"), "tick 5");
  await(recorder.stop(1s));
}

TEST_F(EventRecorderTest, FullQueueDrops) {
  EventRecorder recorder(io_.get_executor(), server_, "nmo", "", clock_, {.queue_capacity = 2});
  for (int i = 0; i < 4; ++i) {
    recorder.record(node_ref(), {EventType::kNormal, "R" + std::to_string(i), "m", std::nullopt});
  }
  recorder.start();  // events recorded before start() are written once it runs
  await(recorder.flush());
  ASSERT_EQ(calls().size(), 2U);
  EXPECT_EQ(calls()[0].body.at("reason"), "R0");
  EXPECT_EQ(calls()[1].body.at("reason"), "R1");
  await(recorder.stop(1s));
}

TEST_F(EventRecorderTest, FailedCreateIsNotCachedAndStopRefusesLaterEvents) {
  server_.fail_next("create", "", Error(ErrorCode::kUnavailable, "connection refused"),
                    kube::testing::FakeApiServer::kEveryCall);
  EventRecorder recorder(io_.get_executor(), server_, "nmo", "", clock_);
  recorder.start();
  recorder.record(node_ref(), cordoned());
  recorder.record(node_ref(), cordoned());
  await(recorder.stop(1s));
  ASSERT_EQ(calls().size(), 2U);
  EXPECT_EQ(calls()[1].verb, "create");  // nothing was cached, so no patch
  recorder.record(node_ref(), cordoned());
  await(recorder.flush());
  EXPECT_EQ(calls().size(), 2U);
}

TEST_F(EventRecorderTest, ForbiddenWritesAreSaidOncePerNamespaceAndStillTried) {
  std::vector<std::string> lines;
  log::set_writer([&lines](std::string_view line) { lines.emplace_back(line); });
  server_.forbid("create", "");
  EventRecorder recorder(io_.get_executor(), server_, "nmo", "", clock_);
  recorder.start();
  recorder.record(node_ref(), cordoned());
  recorder.record(node_ref(), {EventType::kNormal, "Other", "m", std::nullopt});
  recorder.record(pod_ref(), cordoned());
  await(recorder.flush());
  // Each is still tried (a Role granted later takes effect at once), none is cached.
  ASSERT_EQ(calls().size(), 3U);
  EXPECT_EQ(calls()[1].verb, "create");
  std::vector<std::string> warnings;
  for (const std::string& line : lines) {
    if (line.find("writing Events is forbidden") != std::string::npos) warnings.push_back(line);
  }
  ASSERT_EQ(warnings.size(), 2U);  // default, then shop
  EXPECT_THAT(warnings[0], ::testing::HasSubstr("namespace=default"));
  EXPECT_THAT(warnings[1], ::testing::HasSubstr("namespace=shop"));
  server_.allow("create", "");
  recorder.record(node_ref(), cordoned());
  await(recorder.flush());
  ASSERT_EQ(calls().size(), 4U);
  EXPECT_EQ(calls()[3].verb, "create");
  await(recorder.stop(1s));
  log::set_writer({});
}

}  // namespace
}  // namespace nmo::runtime
