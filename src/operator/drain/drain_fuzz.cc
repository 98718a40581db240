// Fuzz target: the drain's decisions on what the API server hands it, which any pod owner or a
// misbehaving server controls. The first byte picks the input:
//   even: a Pod object (JSON) -> classify_pod(), terminating_since(), termination_message() at
//         several instants (grace periods and timestamps are attacker-chosen int64 values);
//   odd:  an eviction answer, "<status>[ <retry-after seconds>]\n<body>", with the second byte
//         as the pod's previous refusal count -> classify_eviction_error(), decide_eviction().
// Must never crash, throw, leak or overflow (UBSan). Invariants: a retry waits between 1 s and
// kMaxRetryAfter; a refusal counts up from the previous count; a throttled answer does not.
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <boost/json/monotonic_resource.hpp>

#include "base/check.h"
#include "kube/api/internal/json_parse.h"
#include "kube/api/pod.h"
#include "kube/api/status.h"
#include "kube/client/eviction.h"
#include "operator/drain/eviction_policy.h"
#include "operator/drain/pod_policy.h"

namespace {

using std::chrono::seconds;

void check_pod(std::string_view text) {
  boost::json::monotonic_resource arena;
  const nmo::Result<boost::json::value> json =
      nmo::kube::internal::parse_json(text, boost::json::storage_ptr(&arena));
  if (!json.has_value()) {
    return;
  }
  const nmo::Result<nmo::kube::Pod> pod = nmo::kube::decode_pod(*json);
  if (!pod.has_value()) {
    return;
  }
  (void)nmo::op::classify_pod(*pod, true);
  (void)nmo::op::classify_pod(*pod, false);
  (void)nmo::op::has_finished(*pod);
  const std::optional<nmo::kube::Time> since = nmo::op::terminating_since(*pod);
  NMO_CHECK(since.has_value() == nmo::op::is_terminating(*pod),
            "a terminating pod has a start of termination");
  const nmo::kube::Time fixed{seconds{1'800'000'000}};
  for (const nmo::kube::Time now :
       {fixed, nmo::kube::Time{}, pod->meta.deletion_timestamp.value_or(fixed),
        since.value_or(fixed)}) {
    const std::string message = nmo::op::termination_message(*pod, now);
    NMO_CHECK(!message.empty(), "a waiting pod is always explained");
  }
}

void check_eviction_answer(int previous_refusals, std::string_view input) {
  const std::size_t newline = input.find('\n');
  const std::string_view head = input.substr(0, newline);
  const std::string_view body =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  int status = 429;
  std::optional<seconds> retry_after;
  const char* const end = head.data() + head.size();
  const auto [after_status, status_error] = std::from_chars(head.data(), end, status);
  if (status_error == std::errc()) {
    std::int64_t value = 0;
    if (after_status != end && *after_status == ' ' &&
        std::from_chars(after_status + 1, end, value).ec == std::errc() && value >= 0) {
      retry_after = seconds{value};
    }
  } else {
    status = 429;
  }

  nmo::kube::EvictionResult result;
  result.status = nmo::kube::error_from_response(status, body, retry_after);
  result.outcome = nmo::kube::classify_eviction_error(result.status);
  const nmo::op::EvictionDecision decision = nmo::op::decide_eviction(
      result, std::span<const nmo::kube::PodDisruptionBudget>(), previous_refusals);
  if (decision.next != nmo::op::EvictionNext::kRetry) {
    return;
  }
  NMO_CHECK(decision.retry_after >= nmo::op::kDefaultThrottleDelay &&
                decision.retry_after <= nmo::op::kMaxRetryAfter,
            "a retry waits between 1 s and kMaxRetryAfter");
  const int previous = previous_refusals < 0 ? 0 : previous_refusals;
  if (result.outcome == nmo::kube::EvictionOutcome::kThrottled) {
    NMO_CHECK(decision.refusals == previous && !decision.drain_error,
              "throttling is not a refusal");
  } else {
    NMO_CHECK(decision.refusals == previous + 1 && decision.drain_error,
              "a refusal counts and is reported");
    NMO_CHECK(!decision.api_message.empty(), "a refusal quotes the API");
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) {
    return 0;
  }
  if (data[0] % 2 == 0) {
    check_pod(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  } else {
    check_eviction_answer(static_cast<std::int8_t>(data[1]),
                          std::string_view(reinterpret_cast<const char*>(data + 2), size - 2));
  }
  return 0;
}
