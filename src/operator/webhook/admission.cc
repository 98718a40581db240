#include "operator/webhook/admission.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/json_fields.h"
#include "kube/api/internal/json_parse.h"
#include "operator/api/node_maintenance.h"

namespace nmo::op::webhook {
namespace {

using kube::internal::field_error;
using kube::internal::FieldPath;
using kube::internal::find_field;
using kube::internal::get_bool;
using kube::internal::get_object;
using kube::internal::get_string;
using kube::internal::type_error;

Result<Operation> parse_operation(std::string_view text, const FieldPath& path) {
  if (text == "CREATE") return Operation::kCreate;
  if (text == "UPDATE") return Operation::kUpdate;
  if (text == "DELETE") return Operation::kDelete;
  if (text == "CONNECT") return Operation::kConnect;
  if (text.empty()) return field_error(path, "missing");
  return field_error(path, "unknown operation \"" + std::string(text) +
                               "\" (expected CREATE, UPDATE, DELETE or CONNECT)");
}

// request.object / request.oldObject: absent (or null) gives std::nullopt.
Result<std::optional<ReviewedObject>> decode_object(const boost::json::object& request,
                                                    std::string_view key,
                                                    const FieldPath& request_path) {
  NMO_TRY_ASSIGN(const boost::json::object* object, get_object(request, key, request_path));
  if (object == nullptr) {
    return std::optional<ReviewedObject>();
  }
  const FieldPath path = request_path.field(key);
  ReviewedObject reviewed;
  NMO_TRY_ASSIGN(const boost::json::object* metadata, get_object(*object, "metadata", path));
  if (metadata != nullptr) {
    const FieldPath metadata_path = path.field("metadata");
    NMO_TRY_ASSIGN(reviewed.name, get_string(*metadata, "name", metadata_path));
    // Only whether it is set matters; its format is the API server's business.
    reviewed.deleting = find_field(*metadata, "deletionTimestamp") != nullptr;
  }
  NMO_TRY_ASSIGN(const boost::json::object* spec, get_object(*object, "spec", path));
  if (spec != nullptr) {
    NMO_TRY_ASSIGN(reviewed.node_name, get_string(*spec, "nodeName", path.field("spec")));
  }
  return std::optional<ReviewedObject>(std::move(reviewed));
}

// request.kind, when present, must be NodeMaintenance of our group: a webhook configuration
// that routes other resources here is a mistake the answer should make visible.
Result<void> check_kind(const boost::json::object& request, const FieldPath& request_path) {
  NMO_TRY_ASSIGN(const boost::json::object* kind, get_object(request, "kind", request_path));
  if (kind == nullptr) {
    return {};
  }
  const FieldPath path = request_path.field("kind");
  NMO_TRY_ASSIGN(const std::string group, get_string(*kind, "group", path));
  NMO_TRY_ASSIGN(const std::string name, get_string(*kind, "kind", path));
  if (group != kGroup || name != kKind) {
    return field_error(path, "expected " + std::string(kGroup) + " " + std::string(kKind) +
                                 ", got " + (group.empty() ? "core" : group) + " " + name);
  }
  return {};
}

}  // namespace

std::string_view to_string(Operation operation) noexcept {
  switch (operation) {
    case Operation::kCreate:
      return "CREATE";
    case Operation::kUpdate:
      return "UPDATE";
    case Operation::kDelete:
      return "DELETE";
    case Operation::kConnect:
      return "CONNECT";
  }
  return "UNKNOWN";
}

std::string AdmissionRequest::object_name() const {
  if (object && !object->name.empty()) return object->name;
  if (old_object && !old_object->name.empty()) return old_object->name;
  return name;
}

Result<AdmissionRequest> decode_admission_review(std::string_view body) {
  Result<boost::json::value> parsed = kube::internal::parse_json(body, {});
  if (!parsed) {
    return Error(ErrorCode::kInvalid, "malformed JSON: " + parsed.error().message);
  }
  const FieldPath root;
  const boost::json::object* review = parsed->if_object();
  if (review == nullptr) {
    return type_error(root, "an object", *parsed);
  }
  AdmissionRequest request;
  NMO_TRY_ASSIGN(request.api_version, get_string(*review, "apiVersion", root));
  if (request.api_version != kAdmissionV1 && request.api_version != kAdmissionV1beta1) {
    return field_error(root.field("apiVersion"), "expected \"" + std::string(kAdmissionV1) +
                                                     "\", got \"" + request.api_version + "\"");
  }
  NMO_TRY_ASSIGN(const std::string kind, get_string(*review, "kind", root));
  if (kind != "AdmissionReview") {
    return field_error(root.field("kind"), "expected \"AdmissionReview\", got \"" + kind + "\"");
  }
  NMO_TRY_ASSIGN(const boost::json::object* body_request, get_object(*review, "request", root));
  const FieldPath path = root.field("request");
  if (body_request == nullptr) {
    return field_error(path, "missing");
  }
  NMO_TRY_ASSIGN(request.uid, get_string(*body_request, "uid", path));
  if (request.uid.empty()) {
    return field_error(path.field("uid"), "missing");
  }
  NMO_TRY_ASSIGN(const std::string operation, get_string(*body_request, "operation", path));
  NMO_TRY_ASSIGN(request.operation, parse_operation(operation, path.field("operation")));
  NMO_TRY(check_kind(*body_request, path));
  NMO_TRY_ASSIGN(request.name, get_string(*body_request, "name", path));
  NMO_TRY_ASSIGN(request.dry_run, get_bool(*body_request, "dryRun", path));
  NMO_TRY_ASSIGN(const boost::json::object* user, get_object(*body_request, "userInfo", path));
  if (user != nullptr) {
    NMO_TRY_ASSIGN(request.username, get_string(*user, "username", path.field("userInfo")));
    NMO_TRY_ASSIGN(request.user_uid, get_string(*user, "uid", path.field("userInfo")));
  }
  NMO_TRY_ASSIGN(request.object, decode_object(*body_request, "object", path));
  NMO_TRY_ASSIGN(request.old_object, decode_object(*body_request, "oldObject", path));
  const bool needs_object =
      request.operation == Operation::kCreate || request.operation == Operation::kUpdate;
  if (needs_object && !request.object) {
    return field_error(path.field("object"), "missing for " + operation);
  }
  if (request.operation == Operation::kUpdate && !request.old_object) {
    return field_error(path.field("oldObject"), "missing for UPDATE");
  }
  return request;
}

std::string encode_admission_review(const AdmissionRequest& request,
                                    const AdmissionVerdict& verdict) {
  boost::json::object response;
  response["uid"] = request.uid;
  response["allowed"] = verdict.allowed;
  if (!verdict.allowed) {
    boost::json::object status;
    status["status"] = "Failure";
    status["code"] = verdict.code;
    status["reason"] = verdict.reason;
    status["message"] = verdict.message;
    response["status"] = std::move(status);
  }
  boost::json::object review;
  review["apiVersion"] =
      request.api_version.empty() ? std::string(kAdmissionV1) : request.api_version;
  review["kind"] = "AdmissionReview";
  review["response"] = std::move(response);
  return boost::json::serialize(review);
}

}  // namespace nmo::op::webhook
