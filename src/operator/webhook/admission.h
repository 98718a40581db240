// The admission.k8s.io/v1 AdmissionReview as the NodeMaintenance webhook sees it: decoding the
// API server's request into the few fields the rules need, and encoding the answer.
//
// Decoding is strict about the envelope (apiVersion, kind, request.uid, request.operation, the
// objects an operation must carry) and lenient about everything else: the objects keep only
// metadata.name, metadata.deletionTimestamp and spec.nodeName, and fields the rules never read
// are ignored, so a NodeMaintenance with a status this version does not know is still admitted
// on its merits. Errors are ErrorCode::kInvalid naming the field
// ("request.object.spec.nodeName: expected a string, got number").
//
// Threading: plain value types and pure functions; safe to use from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace nmo::op::webhook {

// The webhook's name and path (docs/design.md §4; the path is controller-runtime's naming scheme,
// as in upstream NMO).
inline constexpr std::string_view kWebhookName = "nodemaintenance-validation.medik8s.io";
inline constexpr std::string_view kValidatePath =
    "/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance";

// The AdmissionReview versions understood (the answer echoes the request's). The manifests ask
// for v1 only; v1beta1 has the same shape.
inline constexpr std::string_view kAdmissionV1 = "admission.k8s.io/v1";
inline constexpr std::string_view kAdmissionV1beta1 = "admission.k8s.io/v1beta1";

// request.operation.
enum class Operation { kCreate, kUpdate, kDelete, kConnect };

// "CREATE", "UPDATE", "DELETE", "CONNECT".
[[nodiscard]] std::string_view to_string(Operation operation) noexcept;

// What the rules read of a NodeMaintenance carried by a review.
struct ReviewedObject {
  std::string name;       // metadata.name ("" when absent)
  std::string node_name;  // spec.nodeName ("" when absent)
  bool deleting = false;  // metadata.deletionTimestamp is set

  friend bool operator==(const ReviewedObject&, const ReviewedObject&) = default;
};

// The request part of an AdmissionReview.
struct AdmissionRequest {
  std::string api_version;  // the review's apiVersion, echoed in the answer
  std::string uid;          // request.uid, echoed as response.uid
  Operation operation = Operation::kCreate;
  std::string name;      // request.name ("" when the API server left it out)
  bool dry_run = false;  // request.dryRun: nothing will be stored
  std::string username;  // request.userInfo.username: logs, and whose reservation (validator.h)
  std::string user_uid;  // request.userInfo.uid ("" for users without one, e.g. certificates)
  // request.object: set for CREATE and UPDATE (required there).
  std::optional<ReviewedObject> object;
  // request.oldObject: set for UPDATE (required there) and DELETE (when sent).
  std::optional<ReviewedObject> old_object;

  // The name of the object under review: object's, else oldObject's, else request.name.
  [[nodiscard]] std::string object_name() const;

  friend bool operator==(const AdmissionRequest&, const AdmissionRequest&) = default;
};

// Decodes the body of the API server's POST. Fails with kInvalid:
//   "malformed JSON: syntax error at byte 12"
//   `apiVersion: expected "admission.k8s.io/v1", got "v1"`
//   `kind: expected "AdmissionReview", got "Pod"`
//   "request: missing", "request.uid: missing"
//   `request.operation: unknown operation "PATCH" (expected CREATE, UPDATE, DELETE or CONNECT)`
//   `request.kind: expected nodemaintenance.medik8s.io NodeMaintenance, got apps Deployment`
//   "request.object: missing for CREATE", "request.oldObject: missing for UPDATE"
// and type errors naming the field.
[[nodiscard]] Result<AdmissionRequest> decode_admission_review(std::string_view body);

// The webhook's answer to one review.
struct AdmissionVerdict {
  bool allowed = true;
  // When not allowed: the Status the API server turns into its error. 403 / "Forbidden" for a
  // rule's denial (kubectl then prints "Error from server (Forbidden): admission webhook ...
  // denied the request: <message>").
  int code = 0;
  std::string reason;
  std::string message;

  // Admitted.
  [[nodiscard]] static AdmissionVerdict allow() { return {}; }
  // Denied by a rule: 403 Forbidden with `message`.
  [[nodiscard]] static AdmissionVerdict deny(std::string message) {
    return {.allowed = false, .code = 403, .reason = "Forbidden", .message = std::move(message)};
  }
  // Not decided because a lookup failed: 500 InternalError with `message`. The API server
  // refuses the request (failurePolicy Fail applies to errors, and a denial says why).
  [[nodiscard]] static AdmissionVerdict internal_error(std::string message) {
    return {
        .allowed = false, .code = 500, .reason = "InternalError", .message = std::move(message)};
  }

  friend bool operator==(const AdmissionVerdict&, const AdmissionVerdict&) = default;
};

// The AdmissionReview answering `request`:
//   {"apiVersion": <request.api_version>, "kind": "AdmissionReview",
//    "response": {"uid": <request.uid>, "allowed": true}}
// and when denied, "allowed": false plus
//   "status": {"status": "Failure", "code": 403, "reason": "Forbidden", "message": "..."}.
[[nodiscard]] std::string encode_admission_review(const AdmissionRequest& request,
                                                  const AdmissionVerdict& verdict);

}  // namespace nmo::op::webhook
