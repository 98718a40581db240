#include "kube/api/pod_disruption_budget.h"

#include <string>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

// A minAvailable budget that currently allows no disruption (the eviction 429 case).
constexpr const char* kBlockingPdb = R"json({
  "apiVersion": "policy/v1",
  "kind": "PodDisruptionBudget",
  "metadata": {"creationTimestamp": "2026-11-30T09:00:00Z", "generation": 3, "name": "db-pdb",
               "namespace": "shop", "resourceVersion": "77001",
               "uid": "12345678-9abc-4def-8123-456789abcdef"},
  "spec": {
    "minAvailable": 2,
    "selector": {"matchLabels": {"app": "db"},
                 "matchExpressions": [{"key": "tier", "operator": "In",
                                       "values": ["primary", "replica"]}]},
    "unhealthyPodEvictionPolicy": "AlwaysAllow"
  },
  "status": {
    "conditions": [{"lastTransitionTime": "2026-11-30T09:00:05Z", "message": "",
                    "observedGeneration": 3, "reason": "InsufficientPods", "status": "False",
                    "type": "DisruptionAllowed"}],
    "currentHealthy": 2, "desiredHealthy": 2, "disruptionsAllowed": 0, "expectedPods": 2,
    "observedGeneration": 3
  }
})json";

std::string decode_error(const char* json) {
  const Result<PodDisruptionBudget> pdb = decode_pod_disruption_budget(boost::json::parse(json));
  if (pdb.has_value()) {
    return "decoded";
  }
  EXPECT_EQ(pdb.error().code, ErrorCode::kInvalid);
  return pdb.error().message;
}

TEST(DecodePdbTest, BlockingBudget) {
  ASSERT_OK_AND_ASSIGN(const PodDisruptionBudget pdb,
                       decode_pod_disruption_budget(boost::json::parse(kBlockingPdb)));
  EXPECT_EQ(pdb.meta.name, "db-pdb");
  EXPECT_EQ(pdb.meta.generation, 3);
  ASSERT_TRUE(pdb.selector.has_value());
  EXPECT_EQ(pdb.selector->to_query(), "app=db,tier in (primary,replica)");
  EXPECT_EQ(pdb.min_available, IntOrString::from_int(2));
  EXPECT_EQ(pdb.max_unavailable, std::nullopt);
  EXPECT_EQ(pdb.unhealthy_pod_eviction_policy, "AlwaysAllow");
  EXPECT_EQ(pdb.disruptions_allowed, 0);
  EXPECT_EQ(pdb.current_healthy, 2);
  EXPECT_EQ(pdb.desired_healthy, 2);
  EXPECT_EQ(pdb.expected_pods, 2);
  EXPECT_EQ(pdb.observed_generation, 3);
  EXPECT_TRUE(pdb.selects(Labels{{"app", "db"}, {"tier", "replica"}}));
  EXPECT_FALSE(pdb.selects(Labels{{"app", "db"}, {"tier", "cache"}}));
  EXPECT_FALSE(pdb.selects(Labels{{"app", "web"}, {"tier", "primary"}}));
}

TEST(DecodePdbTest, PercentageMaxUnavailable) {
  ASSERT_OK_AND_ASSIGN(const PodDisruptionBudget pdb,
                       decode_pod_disruption_budget(boost::json::parse(
                           R"({"spec": {"maxUnavailable": "50%", "selector": {}}})")));
  EXPECT_EQ(pdb.max_unavailable, IntOrString::from_string("50%"));
  EXPECT_EQ(pdb.max_unavailable->to_string(), "50%");
  EXPECT_EQ(pdb.min_available, std::nullopt);
  EXPECT_EQ(pdb.unhealthy_pod_eviction_policy, "");
}

TEST(DecodePdbTest, EmptySelectorSelectsEveryPodAbsentSelectsNone) {
  ASSERT_OK_AND_ASSIGN(const PodDisruptionBudget empty,
                       decode_pod_disruption_budget(
                           boost::json::parse(R"({"spec": {"minAvailable": 1, "selector": {}}})")));
  ASSERT_TRUE(empty.selector.has_value());
  EXPECT_TRUE(empty.selector->empty());
  EXPECT_TRUE(empty.selects(Labels{{"anything", "x"}}));
  EXPECT_TRUE(empty.selects(Labels{}));

  for (const char* json :
       {R"({"spec": {"minAvailable": 1}})", R"({"spec": {"minAvailable": 1, "selector": null}})"}) {
    ASSERT_OK_AND_ASSIGN(const PodDisruptionBudget absent,
                         decode_pod_disruption_budget(boost::json::parse(json)));
    EXPECT_FALSE(absent.selector.has_value()) << json;
    EXPECT_FALSE(absent.selects(Labels{{"anything", "x"}})) << json;
    EXPECT_FALSE(absent.selects(Labels{})) << json;
  }
}

TEST(DecodePdbTest, Errors) {
  EXPECT_EQ(decode_error(R"({"spec": {"minAvailable": true}})"),
            "spec.minAvailable: expected an integer or a string, got bool");
  EXPECT_EQ(decode_error(R"({"spec": {"maxUnavailable": 1.5}})"),
            "spec.maxUnavailable: expected an integer, got number");
  EXPECT_EQ(decode_error(R"({"spec": {"selector": {"matchExpressions": [
                              {"key": "a", "operator": "Maybe", "values": ["x"]}]}}})"),
            R"(spec.selector.matchExpressions[0].operator: unknown selector operator "Maybe")");
  EXPECT_EQ(decode_error(R"({"status": {"disruptionsAllowed": 4294967296}})"),
            "status.disruptionsAllowed: 4294967296 out of range for int32");
  EXPECT_EQ(decode_error(R"({"kind": "Lease"})"),
            R"(expected kind "PodDisruptionBudget", got "Lease")");
  EXPECT_EQ(decode_error(R"({"status": {"disruptedPods": []}})"),
            "status.disruptedPods: expected an object, got array");
  EXPECT_EQ(decode_error(R"({"status": {"disruptedPods": {"web-0": "yesterday"}}})").substr(0, 33),
            "status.disruptedPods.web-0: inval");
}

// The eviction handler's grant, written before the pod is deleted (an aborted request leaves it
// until the disruption controller drops it two minutes later).
TEST(DecodePdbTest, DisruptedPodsAndWhetherADisruptionIsAllowedNow) {
  const Result<PodDisruptionBudget> pdb = decode_pod_disruption_budget(boost::json::parse(R"json({
    "kind": "PodDisruptionBudget", "metadata": {"name": "web", "generation": 2},
    "status": {"disruptionsAllowed": 1, "observedGeneration": 1,
               "disruptedPods": {"web-0": "2026-12-06T10:00:00Z", "web-1": null}}})json"));
  ASSERT_OK(pdb);
  ASSERT_EQ(pdb->disrupted_pods.size(), 1U);
  EXPECT_EQ(format_time(pdb->disrupted_pods.at("web-0")), "2026-12-06T10:00:00Z");
  EXPECT_FALSE(pdb->allows_disruption()) << "the status is of an older spec";
  PodDisruptionBudget current = *pdb;
  current.observed_generation = 2;
  EXPECT_TRUE(current.allows_disruption());
  current.disruptions_allowed = 0;
  EXPECT_FALSE(current.allows_disruption());
}

TEST(PdbResourceTest, Paths) {
  static_assert(Resource<PodDisruptionBudget>);
  EXPECT_EQ(api_version<PodDisruptionBudget>(), "policy/v1");
  EXPECT_EQ(collection_path<PodDisruptionBudget>("shop"),
            "/apis/policy/v1/namespaces/shop/poddisruptionbudgets");
}

}  // namespace
}  // namespace nmo::kube
