// The webhook's HTTP endpoint: routing, the AdmissionReview answer, and plain-text refusals for
// what is not a review.
#include "operator/webhook/handler.h"

#include <string>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "http/testing/run.h"
#include "operator/webhook/validator.h"

namespace nmo::op::webhook {
namespace {

using ::testing::StartsWith;

class OneNodeLookup final : public ClusterLookup {
 public:
  asio::awaitable<Result<bool>> node_exists(std::string node) override {
    co_return node == "node-worker-04";
  }
  asio::awaitable<Result<std::vector<ExistingMaintenance>>> maintenances_for_node(
      std::string /*node*/) override {
    co_return std::vector<ExistingMaintenance>{};
  }
};

std::string create_review(const std::string& node) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-1",)"
         R"("operation":"CREATE","name":"m","object":{"metadata":{"name":"m"},"spec":{"nodeName":")" +
         node + R"("}}}})";
}

class AdmissionHandlerTest : public ::testing::Test {
 protected:
  http::Response handle(http::Method method, std::string target, std::string body) {
    return http::test::run(context_, handler_.handle({.method = method,
                                                      .target = std::move(target),
                                                      .headers = {},
                                                      .body = std::move(body),
                                                      .timeout = std::nullopt}));
  }

  asio::io_context context_;
  OneNodeLookup lookup_;
  Validator validator_{lookup_, {}};
  AdmissionHandler handler_{validator_};
};

TEST_F(AdmissionHandlerTest, AdmittedReviewIsAnsweredWithJson) {
  const http::Response response =
      handle(http::Method::kPost, std::string(kValidatePath) + "?timeout=15s",
             create_review("node-worker-04"));
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(response.header("Content-Type"), "application/json");
  EXPECT_EQ(response.body, R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                           R"("response":{"uid":"uid-1","allowed":true}})");
}

TEST_F(AdmissionHandlerTest, DenialIsAnAnswerNotAnHttpError) {
  const http::Response response = handle(http::Method::kPost, std::string(kValidatePath),
                                         create_review("node-that-does-not-exist"));
  EXPECT_EQ(response.status, 200U);
  const boost::json::value answer = boost::json::parse(response.body);
  EXPECT_EQ(answer.at_pointer("/response/uid"), "uid-1");
  EXPECT_EQ(answer.at_pointer("/response/allowed"), false);
  EXPECT_EQ(answer.at_pointer("/response/status/code"), 403);
  EXPECT_EQ(answer.at_pointer("/response/status/reason"), "Forbidden");
  EXPECT_EQ(answer.at_pointer("/response/status/message"),
            boost::json::value(unknown_node_message("node-that-does-not-exist")));
}

TEST_F(AdmissionHandlerTest, MalformedJsonGets400) {
  const http::Response response =
      handle(http::Method::kPost, std::string(kValidatePath), "{\"apiVersion\": oops");
  EXPECT_EQ(response.status, 400U);
  EXPECT_EQ(response.header("Content-Type"), "text/plain; charset=utf-8");
  EXPECT_EQ(response.body, "malformed AdmissionReview: malformed JSON: syntax error at byte 15\n");
}

TEST_F(AdmissionHandlerTest, ReviewWithoutRequestGets400) {
  const http::Response response =
      handle(http::Method::kPost, std::string(kValidatePath),
             R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})");
  EXPECT_EQ(response.status, 400U);
  EXPECT_EQ(response.body, "malformed AdmissionReview: request: missing\n");
}

TEST_F(AdmissionHandlerTest, UnknownPathGets404) {
  const http::Response response = handle(http::Method::kPost, "/validate-pods", "{}");
  EXPECT_EQ(response.status, 404U);
  EXPECT_THAT(response.body, StartsWith("not found: /validate-pods (the webhook serves "
                                        "/validate-nodemaintenance-medik8s-io-v1beta1-"
                                        "nodemaintenance)"));
}

TEST_F(AdmissionHandlerTest, OtherMethodsGet405) {
  const http::Response response = handle(http::Method::kGet, std::string(kValidatePath), "");
  EXPECT_EQ(response.status, 405U);
  EXPECT_EQ(response.header("Allow"), "POST");
}

}  // namespace
}  // namespace nmo::op::webhook
