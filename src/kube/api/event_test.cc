#include "kube/api/event.h"

#include <chrono>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

// An Event the operator wrote about a cluster-scoped NodeMaintenance (namespace default).
constexpr const char* kOperatorWarning = R"json({
  "apiVersion": "v1", "kind": "Event",
  "metadata": {"name": "nm-worker-01.1871a", "namespace": "default", "resourceVersion": "812"},
  "type": "Warning", "reason": "FailedUncordon",
  "message": "could not uncordon node worker-01: the server is currently unable to handle it",
  "count": 3,
  "involvedObject": {"apiVersion": "nodemaintenance.medik8s.io/v1beta1",
                     "kind": "NodeMaintenance", "name": "nm-worker-01", "uid": "u-1"},
  "source": {"component": "node-maintenance-operator", "host": "nmo-7c9d"},
  "firstTimestamp": "2026-12-06T10:00:00Z", "lastTimestamp": "2026-12-06T10:02:00Z"
})json";

TEST(DecodeEventTest, OperatorWarningAboutAClusterScopedObject) {
  ASSERT_OK_AND_ASSIGN(const Event event, decode_event(boost::json::parse(kOperatorWarning)));
  EXPECT_EQ(event.meta.namespace_, "default");
  EXPECT_EQ(event.type, "Warning");
  EXPECT_EQ(event.reason, "FailedUncordon");
  EXPECT_EQ(event.count, 3);
  EXPECT_EQ(event.involved.kind, "NodeMaintenance");
  EXPECT_EQ(event.involved.name, "nm-worker-01");
  EXPECT_EQ(event.involved.namespace_, "");
  EXPECT_EQ(event.component, "node-maintenance-operator");
  ASSERT_OK_AND_ASSIGN(const Time last, parse_time("2026-12-06T10:02:00Z"));
  EXPECT_EQ(event.last_seen, last);
}

TEST(DecodeEventTest, EventsApiFieldsStandInForTheCoreOnes) {
  // Written through events.k8s.io/v1: reportingComponent, eventTime and a series, no
  // source.component and no lastTimestamp.
  ASSERT_OK_AND_ASSIGN(const Event event, decode_event(boost::json::parse(R"json({
    "metadata": {"name": "e", "namespace": "default"}, "type": "Normal", "reason": "Started",
    "reportingComponent": "kubelet", "eventTime": "2026-12-06T10:00:00.000001Z",
    "series": {"count": 2, "lastObservedTime": "2026-12-06T10:05:00.000000Z"}})json")));
  EXPECT_EQ(event.component, "kubelet");
  ASSERT_OK_AND_ASSIGN(const Time last, parse_time("2026-12-06T10:05:00Z"));
  EXPECT_EQ(event.last_seen, last);
}

TEST(DecodeEventTest, NoTimeAtAllIsNoLastSeen) {
  ASSERT_OK_AND_ASSIGN(const Event event,
                       decode_event(boost::json::parse(R"json({"metadata": {"name": "e"}})json")));
  EXPECT_FALSE(event.last_seen.has_value());
}

TEST(DecodeEventTest, AWronglyTypedFieldIsNamed) {
  const auto event = decode_event(
      boost::json::parse(R"json({"metadata": {"name": "e"}, "involvedObject": {"name": 7}})json"));
  ASSERT_FALSE(event.has_value());
  EXPECT_EQ(event.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(event.error().message, "involvedObject.name: expected a string, got number");
}

TEST(DecodeEventTest, AnotherKindIsRefused) {
  EXPECT_FALSE(decode_event(boost::json::parse(R"json({"kind": "Pod"})json")).has_value());
}

}  // namespace
}  // namespace nmo::kube
