// AdmissionHandler: the webhook's HTTP endpoint. POST
// /validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance with an AdmissionReview gets the
// Validator's verdict as an AdmissionReview (HTTP 200, application/json). What is not a review
// gets a plain-text answer saying why: 404 for another path, 405 for another method, 400 for a
// body that does not decode. Every decision is logged (denials at info, admissions at -v=1).
//
// Threading: handle() may be awaited concurrently from coroutines on any executor.
#pragma once

#include "base/log.h"
#include "http/asio.h"
#include "http/message.h"
#include "operator/webhook/validator.h"

namespace nmo::op::webhook {

class AdmissionHandler {
 public:
  // `validator` must outlive the handler.
  explicit AdmissionHandler(Validator& validator);

  // The answer to one HTTP request (see the file comment). Never throws for bad input.
  asio::awaitable<http::Response> handle(http::Request request);

 private:
  Validator& validator_;
  const log::Logger logger_;
};

}  // namespace nmo::op::webhook
