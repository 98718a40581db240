// Fuzz target: decode_admission_review on arbitrary bytes (the body of any POST that reaches the
// webhook's port). Must never crash or throw; a decoded review must have a uid and the objects
// its operation needs, and its answer must decode as JSON echoing that uid.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "base/check.h"
#include "operator/webhook/admission.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using nmo::op::webhook::AdmissionVerdict;
  using nmo::op::webhook::Operation;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const nmo::Result<nmo::op::webhook::AdmissionRequest> review =
      nmo::op::webhook::decode_admission_review(input);
  if (!review) {
    NMO_CHECK(review.error().code == nmo::ErrorCode::kInvalid, "decode errors are kInvalid");
    NMO_CHECK(!review.error().message.empty(), "a decode error explains itself");
    return 0;
  }
  NMO_CHECK(!review->uid.empty(), "a decoded review has a uid");
  if (review->operation == Operation::kCreate || review->operation == Operation::kUpdate) {
    NMO_CHECK(review->object.has_value(), "CREATE and UPDATE carry the object");
  }
  if (review->operation == Operation::kUpdate) {
    NMO_CHECK(review->old_object.has_value(), "UPDATE carries the old object");
  }
  (void)review->object_name();
  for (const AdmissionVerdict& verdict :
       {AdmissionVerdict::allow(), AdmissionVerdict::deny(review->object_name())}) {
    const std::string answer = nmo::op::webhook::encode_admission_review(*review, verdict);
    boost::system::error_code error;
    const boost::json::value decoded = boost::json::parse(answer, error);
    NMO_CHECK(!error, "the answer is JSON");
    const boost::json::value* uid = decoded.find_pointer("/response/uid", error);
    NMO_CHECK(uid != nullptr && uid->is_string() && uid->get_string() == review->uid,
              "the answer echoes the uid");
  }
  return 0;
}
