#include "kube/api/watch.h"

#include <string>
#include <utility>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"

namespace nmo::kube {
namespace {

std::string decode_error(std::string_view line) {
  const Result<WatchEvent> event = decode_watch_event(line);
  if (event.has_value()) {
    return "decoded";
  }
  EXPECT_EQ(event.error().code, ErrorCode::kInvalid);
  return event.error().message;
}

TEST(DecodeWatchEventTest, ModifiedPod) {
  ASSERT_OK_AND_ASSIGN(
      const WatchEvent event,
      decode_watch_event(
          R"({"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0","namespace":"shop","uid":"u-1","resourceVersion":"20400"},"spec":{"nodeName":"node-worker-03"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}})"
          "\n"));
  EXPECT_EQ(event.type, WatchEventType::kModified);
  ASSERT_TRUE(event.object.is_object());
  // The object lives in the event's own arena (a shared monotonic resource), not in the default
  // resource.
  EXPECT_TRUE(event.object.storage().is_shared());
  EXPECT_TRUE(event.object.storage().is_deallocate_trivial());
  EXPECT_EQ(resource_version_of(event.object), "20400");
  ASSERT_OK_AND_ASSIGN(const Pod pod, ResourceInfo<Pod>::decode(event.object));
  EXPECT_EQ(pod.meta.name, "web-0");
  EXPECT_EQ(pod.node_name, "node-worker-03");
  EXPECT_TRUE(pod.is_ready());
}

TEST(DecodeWatchEventTest, EveryType) {
  for (const auto& [text, type] : {std::pair{"ADDED", WatchEventType::kAdded},
                                   std::pair{"MODIFIED", WatchEventType::kModified},
                                   std::pair{"DELETED", WatchEventType::kDeleted},
                                   std::pair{"BOOKMARK", WatchEventType::kBookmark},
                                   std::pair{"ERROR", WatchEventType::kError}}) {
    ASSERT_OK_AND_ASSIGN(const WatchEvent event, decode_watch_event(std::string(R"({"type":")") +
                                                                    text + R"(","object":{}})"));
    EXPECT_EQ(event.type, type);
    EXPECT_EQ(to_string(type), text);
  }
}

TEST(DecodeWatchEventTest, Bookmark) {
  ASSERT_OK_AND_ASSIGN(
      const WatchEvent event,
      decode_watch_event(
          R"({"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"99321","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}}})"));
  EXPECT_EQ(event.type, WatchEventType::kBookmark);
  EXPECT_EQ(resource_version_of(event.object), "99321");
  ASSERT_OK_AND_ASSIGN(const Node node, decode_node(event.object));
  EXPECT_EQ(node.meta.resource_version, "99321");
}

TEST(DecodeWatchEventTest, ExpiredErrorMeansRelist) {
  ASSERT_OK_AND_ASSIGN(
      const WatchEvent event,
      decode_watch_event(
          R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1000 (20391)","reason":"Expired","code":410}})json"));
  EXPECT_EQ(error_from_watch_error(event),
            Error(ErrorCode::kExpired, "too old resource version: 1000 (20391)", 410));
}

TEST(DecodeWatchEventTest, GoneErrorAlsoMeansRelist) {
  ASSERT_OK_AND_ASSIGN(
      const WatchEvent event,
      decode_watch_event(
          R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The resourceVersion for the provided watch is too old.","reason":"Gone","code":410}})"));
  EXPECT_EQ(error_from_watch_error(event).code, ErrorCode::kExpired);
}

TEST(DecodeWatchEventTest, OtherErrorsKeepTheirCode) {
  ASSERT_OK_AND_ASSIGN(
      const WatchEvent event,
      decode_watch_event(
          R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"an error on the server (\"unable to decode an event from the watch stream\") has prevented the request from succeeding","reason":"InternalError","code":500}})"));
  const Error error = error_from_watch_error(event);
  EXPECT_EQ(error.code, ErrorCode::kInternal);
  EXPECT_EQ(error.http_status, 500);
}

TEST(DecodeWatchEventTest, ErrorFromNonErrorEvent) {
  ASSERT_OK_AND_ASSIGN(const WatchEvent event,
                       decode_watch_event(R"({"type":"ADDED","object":{}})"));
  EXPECT_EQ(error_from_watch_error(event),
            Error(ErrorCode::kInternal, "not an ERROR watch event: ADDED"));
}

TEST(DecodeWatchEventTest, Errors) {
  EXPECT_EQ(decode_error(R"({"type":ADDED,"object":{}})"),
            R"(malformed watch event (syntax error at byte 8): {"type":ADDED,"object":{}})");
  EXPECT_EQ(
      decode_error(R"({"type":"ADDED","object":{"kind":"Pod")"),
      R"(malformed watch event (incomplete JSON at byte 38): {"type":"ADDED","object":{"kind":"Pod")");
  EXPECT_EQ(decode_error(""), "malformed watch event (incomplete JSON at byte 0): ");
  EXPECT_EQ(decode_error("[1]"), "watch event is not a JSON object: [1]");
  EXPECT_EQ(decode_error(R"({"object":{}})"),
            R"(watch event without a "type" string: {"object":{}})");
  EXPECT_EQ(decode_error(R"({"type":7,"object":{}})"),
            R"(watch event without a "type" string: {"type":7,"object":{}})");
  EXPECT_EQ(decode_error(R"({"type":"RESYNC","object":{}})"),
            R"(unknown watch event type "RESYNC": {"type":"RESYNC","object":{}})");
  EXPECT_EQ(decode_error(R"({"type":"added","object":{}})"),
            R"(unknown watch event type "added": {"type":"added","object":{}})");
  EXPECT_EQ(decode_error(R"({"type":"ADDED"})"),
            R"(watch event without an "object" object: {"type":"ADDED"})");
  EXPECT_EQ(decode_error(R"({"type":"ADDED","object":null})"),
            R"(watch event without an "object" object: {"type":"ADDED","object":null})");
}

TEST(DecodeWatchEventTest, ErrorQuotesOnlyThePrintableStartOfTheLine) {
  const std::string line = "{\"type\":\"ADDED\",\"object\":{\"x\":\"\x01" + std::string(300, 'y');
  EXPECT_EQ(decode_error(line),
            "malformed watch event (syntax error at byte 31): "
            "{\"type\":\"ADDED\",\"object\":{\"x\":\"?" +
                std::string(168, 'y') + "...");
}

TEST(ResourceVersionOfTest, MissingOrWrongType) {
  EXPECT_EQ(resource_version_of(boost::json::value(nullptr)), "");
  EXPECT_EQ(resource_version_of(boost::json::parse(R"({"metadata":{}})")), "");
  EXPECT_EQ(resource_version_of(boost::json::parse(R"({"metadata":{"resourceVersion":5}})")), "");
  EXPECT_EQ(resource_version_of(boost::json::parse(R"({"metadata":[]})")), "");
}

}  // namespace
}  // namespace nmo::kube
