#include "kube/client/eviction.h"

#include <gtest/gtest.h>

#include "kube/api/status.h"

namespace nmo::kube {
namespace {

EvictionOutcome classify(int status, std::string_view body) {
  return classify_eviction_error(error_from_response(status, body, std::nullopt));
}

TEST(EvictionTest, PdbRefusalIsBlockedByPdb) {
  EXPECT_EQ(classify(429, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
      "message":"Cannot evict pod as it would violate the pod's disruption budget.",
      "reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget",
      "message":"The disruption budget db-pdb needs 2 healthy pods and has 2 currently"}]},
      "code":429})"),
            EvictionOutcome::kBlockedByPdb);
}

TEST(EvictionTest, WebhookRefusalIsDeferred) {
  EXPECT_EQ(classify(429, R"({"kind":"Status","status":"Failure","reason":"TooManyRequests",
      "message":"admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied the request: Eviction triggered evacuation of VMI","code":429})"),
            EvictionOutcome::kDeferred);
}

TEST(EvictionTest, PriorityAndFairnessIsThrottled) {
  EXPECT_EQ(classify(429, R"({"kind":"Status","status":"Failure","reason":"TooManyRequests",
      "message":"Too many requests, please try again later.","details":{"retryAfterSeconds":1},
      "code":429})"),
            EvictionOutcome::kThrottled);
}

TEST(EvictionTest, OtherOutcomes) {
  EXPECT_EQ(classify(500, R"({"kind":"Status","status":"Failure","reason":"InternalError",
      "message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.","code":500})"),
            EvictionOutcome::kMultiplePdbs);
  EXPECT_EQ(
      classify(
          404,
          R"({"kind":"Status","reason":"NotFound","message":"pods \"x\" not found","code":404})"),
      EvictionOutcome::kNotFound);
  EXPECT_EQ(
      classify(
          403,
          R"({"kind":"Status","reason":"Forbidden","message":"pods \"x\" is forbidden: unable to create new content in namespace ns because it is being terminated","code":403})"),
      EvictionOutcome::kNamespaceTerminating);
  EXPECT_EQ(
      classify(403,
               R"({"kind":"Status","reason":"Forbidden","message":"RBAC says no","code":403})"),
      EvictionOutcome::kRefused);
  EXPECT_EQ(to_string(EvictionOutcome::kBlockedByPdb), "BlockedByPDB");
}

}  // namespace
}  // namespace nmo::kube
