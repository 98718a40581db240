#include "operator/webhook/handler.h"

#include <string>
#include <string_view>
#include <utility>

namespace nmo::op::webhook {
namespace {

http::Response text_response(unsigned status, std::string text) {
  return {.status = status,
          .headers = {{"Content-Type", "text/plain; charset=utf-8"}},
          .body = std::move(text) + "\n"};
}

}  // namespace

AdmissionHandler::AdmissionHandler(Validator& validator)
    : validator_(validator), logger_(log::root().with({{"webhook", kWebhookName}})) {}

asio::awaitable<http::Response> AdmissionHandler::handle(http::Request request) {
  // The API server appends ?timeout=<n>s to the configured URL.
  const std::string_view target = request.target;
  const std::string_view path = target.substr(0, target.find('?'));
  if (path != kValidatePath) {
    co_return text_response(404, "not found: " + std::string(path) + " (the webhook serves " +
                                     std::string(kValidatePath) + ")");
  }
  if (request.method != http::Method::kPost) {
    http::Response response =
        text_response(405, "method " + std::string(http::to_string(request.method)) +
                               " is not allowed; POST an AdmissionReview");
    response.headers.emplace_back("Allow", "POST");
    co_return response;
  }
  Result<AdmissionRequest> review = decode_admission_review(request.body);
  if (!review) {
    logger_.warn("malformed AdmissionReview", {{"error", review.error().message}});
    co_return text_response(400, "malformed AdmissionReview: " + review.error().message);
  }
  const std::string name = review->object_name();
  const std::string node = review->object       ? review->object->node_name
                           : review->old_object ? review->old_object->node_name
                                                : std::string();
  AdmissionRequest decided = *review;
  AdmissionVerdict verdict = co_await validator_.validate(std::move(decided));
  const std::string operation(to_string(review->operation));
  if (!verdict.allowed) {
    logger_.info("admission denied", {{"operation", operation},
                                      {"nodemaintenance", name},
                                      {"node", node},
                                      {"user", review->username},
                                      {"dry_run", review->dry_run},
                                      {"code", verdict.code},
                                      {"message", verdict.message}});
  } else {
    logger_.debug(1, "admission allowed",
                  {{"operation", operation},
                   {"nodemaintenance", name},
                   {"node", node},
                   {"user", review->username},
                   {"dry_run", review->dry_run}});
  }
  co_return http::Response{.status = 200,
                           .headers = {{"Content-Type", "application/json"}},
                           .body = encode_admission_review(*review, verdict)};
}

}  // namespace nmo::op::webhook
