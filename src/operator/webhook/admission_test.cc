// The AdmissionReview codec: what is decoded from the API server's request, the errors for what
// is not a review, and the exact shape of the answer.
#include "operator/webhook/admission.h"

#include <string>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::op::webhook {
namespace {

// A review as the API server sends it for `kubectl create` of a NodeMaintenance.
const char* const kCreateReview = R"({
  "apiVersion": "admission.k8s.io/v1",
  "kind": "AdmissionReview",
  "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "nodemaintenance.medik8s.io", "version": "v1beta1", "kind": "NodeMaintenance"},
    "resource": {"group": "nodemaintenance.medik8s.io", "version": "v1beta1", "resource": "nodemaintenances"},
    "requestKind": {"group": "nodemaintenance.medik8s.io", "version": "v1beta1", "kind": "NodeMaintenance"},
    "name": "maintenance-worker-01",
    "operation": "CREATE",
    "userInfo": {"username": "amin", "uid": "u-1", "groups": ["system:masters"]},
    "object": {
      "apiVersion": "nodemaintenance.medik8s.io/v1beta1",
      "kind": "NodeMaintenance",
      "metadata": {"name": "maintenance-worker-01", "uid": "u1", "creationTimestamp": "2026-11-30T10:00:00Z"},
      "spec": {"nodeName": "node-worker-01", "reason": "Hardware memory upgrade"}
    },
    "oldObject": null,
    "dryRun": false,
    "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
  }
})";

std::string review_with_request(const std::string& request) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":)" + request +
         "}";
}

Error invalid(const std::string& message) { return Error(ErrorCode::kInvalid, message); }

TEST(DecodeAdmissionReview, CreateCarriesTheObject) {
  ASSERT_OK_AND_ASSIGN(const AdmissionRequest request, decode_admission_review(kCreateReview));
  EXPECT_EQ(request.api_version, "admission.k8s.io/v1");
  EXPECT_EQ(request.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(request.operation, Operation::kCreate);
  EXPECT_EQ(request.name, "maintenance-worker-01");
  EXPECT_FALSE(request.dry_run);
  EXPECT_EQ(request.username, "amin");
  EXPECT_EQ(request.user_uid, "u-1");
  EXPECT_EQ(request.object, (ReviewedObject{.name = "maintenance-worker-01",
                                            .node_name = "node-worker-01",
                                            .deleting = false}));
  EXPECT_EQ(request.old_object, std::nullopt);
  EXPECT_EQ(request.object_name(), "maintenance-worker-01");
}

TEST(DecodeAdmissionReview, UpdateCarriesBothObjectsAndTheDeletionMark) {
  ASSERT_OK_AND_ASSIGN(const AdmissionRequest request,
                       decode_admission_review(review_with_request(R"({
        "uid": "u2", "operation": "UPDATE", "name": "m", "dryRun": true,
        "object": {"metadata": {"name": "m", "deletionTimestamp": "2026-11-30T10:05:00Z"},
                   "spec": {"nodeName": "node-worker-07"},
                   "status": {"phase": "SomethingNew", "totalPods": "eight"}},
        "oldObject": {"metadata": {"name": "m"}, "spec": {"nodeName": "node-worker-01"}}})")));
  EXPECT_EQ(request.operation, Operation::kUpdate);
  EXPECT_TRUE(request.dry_run);
  EXPECT_EQ(request.object,
            (ReviewedObject{.name = "m", .node_name = "node-worker-07", .deleting = true}));
  EXPECT_EQ(request.old_object,
            (ReviewedObject{.name = "m", .node_name = "node-worker-01", .deleting = false}));
}

TEST(DecodeAdmissionReview, DeleteAndV1beta1AreAccepted) {
  ASSERT_OK_AND_ASSIGN(
      const AdmissionRequest request,
      decode_admission_review(R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview",
        "request":{"uid":"u3","operation":"DELETE","name":"gone"}})"));
  EXPECT_EQ(request.api_version, "admission.k8s.io/v1beta1");
  EXPECT_EQ(request.operation, Operation::kDelete);
  EXPECT_EQ(request.object, std::nullopt);
  EXPECT_EQ(request.object_name(), "gone");
}

TEST(DecodeAdmissionReview, RejectsWhatIsNotAReview) {
  EXPECT_EQ(decode_admission_review("").error(),
            invalid("malformed JSON: incomplete JSON at byte 0"));
  EXPECT_EQ(decode_admission_review("{\"apiVersion\":").error(),
            invalid("malformed JSON: incomplete JSON at byte 14"));
  EXPECT_EQ(decode_admission_review("[]").error(), invalid("expected an object, got array"));
  EXPECT_EQ(decode_admission_review(R"({"apiVersion":"v1","kind":"AdmissionReview"})").error(),
            invalid(R"(apiVersion: expected "admission.k8s.io/v1", got "v1")"));
  EXPECT_EQ(decode_admission_review(R"({"apiVersion":"admission.k8s.io/v1","kind":"Pod"})").error(),
            invalid(R"(kind: expected "AdmissionReview", got "Pod")"));
  EXPECT_EQ(
      decode_admission_review(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})")
          .error(),
      invalid("request: missing"));
  EXPECT_EQ(decode_admission_review(review_with_request(R"({"operation":"CREATE"})")).error(),
            invalid("request.uid: missing"));
  EXPECT_EQ(decode_admission_review(review_with_request(R"({"uid":"u"})")).error(),
            invalid("request.operation: missing"));
  EXPECT_EQ(
      decode_admission_review(review_with_request(R"({"uid":"u","operation":"PATCH"})")).error(),
      invalid(
          R"(request.operation: unknown operation "PATCH" (expected CREATE, UPDATE, DELETE or CONNECT))"));
  EXPECT_EQ(
      decode_admission_review(review_with_request(R"({"uid":"u","operation":"CREATE"})")).error(),
      invalid("request.object: missing for CREATE"));
  EXPECT_EQ(decode_admission_review(
                review_with_request(R"({"uid":"u","operation":"UPDATE","object":{}})"))
                .error(),
            invalid("request.oldObject: missing for UPDATE"));
}

TEST(DecodeAdmissionReview, NamesTheFieldOfAWrongType) {
  EXPECT_EQ(decode_admission_review(
                review_with_request(
                    R"({"uid":"u","operation":"CREATE","object":{"spec":{"nodeName":7}}})"))
                .error(),
            invalid("request.object.spec.nodeName: expected a string, got number"));
  EXPECT_EQ(
      decode_admission_review(review_with_request(R"({"uid":42,"operation":"CREATE"})")).error(),
      invalid("request.uid: expected a string, got number"));
  EXPECT_EQ(
      decode_admission_review(
          review_with_request(R"({"uid":"u","operation":"CREATE","dryRun":"yes","object":{}})"))
          .error(),
      invalid("request.dryRun: expected a bool, got string"));
}

TEST(DecodeAdmissionReview, RefusesReviewsOfOtherKinds) {
  EXPECT_EQ(
      decode_admission_review(
          review_with_request(
              R"({"uid":"u","operation":"CREATE","kind":{"group":"apps","version":"v1","kind":"Deployment"},"object":{}})"))
          .error(),
      invalid("request.kind: expected nodemaintenance.medik8s.io NodeMaintenance, got apps "
              "Deployment"));
}

TEST(EncodeAdmissionReview, AllowedEchoesVersionAndUid) {
  const AdmissionRequest request{.api_version = "admission.k8s.io/v1", .uid = "abc"};
  EXPECT_EQ(encode_admission_review(request, AdmissionVerdict::allow()),
            R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
            R"("response":{"uid":"abc","allowed":true}})");
}

TEST(EncodeAdmissionReview, DenialCarriesA403ForbiddenStatus) {
  const AdmissionRequest request{.api_version = "admission.k8s.io/v1beta1", .uid = "abc"};
  EXPECT_EQ(
      encode_admission_review(
          request,
          AdmissionVerdict::deny("nodeName is immutable and cannot be changed after creation")),
      R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview",)"
      R"("response":{"uid":"abc","allowed":false,"status":{"status":"Failure","code":403,)"
      R"("reason":"Forbidden","message":"nodeName is immutable and cannot be changed after creation"}}})");
}

TEST(EncodeAdmissionReview, InternalErrorIsA500Refusal) {
  const AdmissionRequest request{.api_version = "admission.k8s.io/v1", .uid = "abc"};
  const boost::json::value answer = boost::json::parse(
      encode_admission_review(request, AdmissionVerdict::internal_error("cannot list")));
  EXPECT_EQ(answer.at_pointer("/response/allowed"), false);
  EXPECT_EQ(answer.at_pointer("/response/status/code"), 500);
  EXPECT_EQ(answer.at_pointer("/response/status/reason"), "InternalError");
}

}  // namespace
}  // namespace nmo::op::webhook
