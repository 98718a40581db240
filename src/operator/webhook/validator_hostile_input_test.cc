// AdmissionReviews of NodeMaintenances with absurd values (docs/reliability.md, "Hostile input"),
// from the raw body through decode_admission_review() and the Validator, as the webhook handler
// runs them. The webhook reads only metadata.name, spec.nodeName and the deletion mark; everything
// else (reason, drainTimeout, gracePeriodSeconds, status) is the schema's and the controller's
// business and is admitted on purpose (see operator/api/node_maintenance_hostile_test.cc).
#include <string>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "operator/webhook/validator.h"

namespace nmo::op::webhook {
namespace {

// One node, no maintenances; counts the node lookups.
class OneNodeCluster final : public ClusterLookup {
 public:
  asio::awaitable<Result<bool>> node_exists(std::string node) override {
    ++node_lookups;
    co_return node == "node-worker-01";
  }
  asio::awaitable<Result<std::vector<ExistingMaintenance>>> maintenances_for_node(
      std::string /*node*/) override {
    co_return std::vector<ExistingMaintenance>{};
  }
  asio::awaitable<Result<bool>> etcd_quorum_safe(std::string /*node*/) override { co_return true; }
  int node_lookups = 0;
};

// A CREATE review of a NodeMaintenance whose spec is `spec_json`.
std::string create_review(const std::string& spec_json) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{)"
         R"("uid":"u1","operation":"CREATE","name":"m",)"
         R"("kind":{"group":"nodemaintenance.medik8s.io","version":"v1beta1","kind":"NodeMaintenance"},)"
         R"("object":{"apiVersion":"nodemaintenance.medik8s.io/v1beta1","kind":"NodeMaintenance",)"
         R"("metadata":{"name":"m"},"spec":)" +
         spec_json + "}}}";
}

class HostileReviewTest : public ::testing::Test {
 protected:
  AdmissionVerdict review(const std::string& body) {
    Result<AdmissionRequest> request = decode_admission_review(body);
    EXPECT_TRUE(request.has_value()) << request.error().describe();
    if (!request.has_value()) return AdmissionVerdict::deny("<not decoded>");
    return http::test::run(context_, validator_.validate(*std::move(request)));
  }

  asio::io_context context_;
  OneNodeCluster cluster_;
  FakeClock clock_;
  Validator validator_{cluster_, {.clock = &clock_}};
};

TEST_F(HostileReviewTest, TenThousandCharacterReasonIsAdmitted) {
  const std::string spec =
      R"({"nodeName":"node-worker-01","reason":")" + std::string(10'000, 'r') + R"("})";
  EXPECT_EQ(review(create_review(spec)), AdmissionVerdict::allow());
}

TEST_F(HostileReviewTest, UnicodeNodeNameIsDeniedWithoutALookup) {
  const std::string name =
      "n\xc3\xb6"
      "de-01";
  EXPECT_EQ(review(create_review(R"({"nodeName":")" + name + R"("})")),
            AdmissionVerdict::deny(unknown_node_message(name)));
  EXPECT_EQ(cluster_.node_lookups, 0);
}

TEST_F(HostileReviewTest, OverlongNodeNameIsDeniedWithoutALookup) {
  // 254 characters: one more than a DNS subdomain may have.
  const std::string name(254, 'n');
  EXPECT_EQ(review(create_review(R"({"nodeName":")" + name + R"("})")),
            AdmissionVerdict::deny(unknown_node_message(name)));
  EXPECT_EQ(cluster_.node_lookups, 0);
}

TEST_F(HostileReviewTest, NodeNameOfTheWrongTypeIsNotAReview) {
  const Result<AdmissionRequest> request =
      decode_admission_review(create_review(R"({"nodeName":7})"));
  ASSERT_FALSE(request.has_value());
  EXPECT_EQ(request.error().message, "request.object.spec.nodeName: expected a string, got number");
}

TEST_F(HostileReviewTest, AbsurdDurationsAndCountersAreLeftToTheController) {
  EXPECT_EQ(review(create_review(R"({"nodeName":"node-worker-01","drainTimeout":"-90m",)"
                                 R"("gracePeriodSeconds":-9223372036854775808})")),
            AdmissionVerdict::allow());
}

}  // namespace
}  // namespace nmo::op::webhook
