// Fuzz target: an eviction answer (HTTP status, Retry-After, body) through error_from_response
// and classify_eviction_error, as the drain engine receives every refused eviction.
// Input: a first line "<status>[ <retry-after seconds>]" (digits; anything else gives 429 and no
// header), then the body. Besides never crashing, the classification must follow the HTTP status:
//   404 NotFound; 429 BlockedByPDB exactly when a DisruptionBudget cause is present, else
//   Deferred or Throttled; 500 MultiplePDBs or Refused; 403 NamespaceTerminating or Refused;
//   every other status Refused. The Status's retry_after is kept for the caller.
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/check.h"
#include "kube/api/status.h"
#include "kube/client/eviction.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using nmo::kube::EvictionOutcome;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  const std::string_view head = input.substr(0, newline);
  const std::string_view body =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  int status = 429;
  std::optional<std::chrono::seconds> retry_after;
  const char* const end = head.data() + head.size();
  int parsed_status = 0;
  const auto [after_status, status_error] = std::from_chars(head.data(), end, parsed_status);
  if (status_error == std::errc()) {
    status = parsed_status;
    std::int64_t seconds = 0;
    if (after_status != end && *after_status == ' ' &&
        std::from_chars(after_status + 1, end, seconds).ec == std::errc() && seconds >= 0) {
      retry_after = std::chrono::seconds{seconds};
    }
  }

  const nmo::kube::EvictionResult result{
      .outcome = EvictionOutcome::kRefused,
      .status = nmo::kube::error_from_response(status, body, retry_after)};
  const EvictionOutcome outcome = nmo::kube::classify_eviction_error(result.status);
  NMO_CHECK(!nmo::kube::to_string(outcome).empty(), "every outcome has a name");
  NMO_CHECK(retry_after.has_value() <= result.retry_after().has_value(),
            "Retry-After must reach the caller");
  const bool pdb_cause = nmo::kube::find_cause(result.status, "DisruptionBudget").has_value();
  switch (status) {
    case 404:
      NMO_CHECK(outcome == EvictionOutcome::kNotFound, "404 is NotFound");
      break;
    case 429:
      NMO_CHECK((outcome == EvictionOutcome::kBlockedByPdb) == pdb_cause,
                "429 is BlockedByPDB exactly when a DisruptionBudget cause is present");
      NMO_CHECK(outcome == EvictionOutcome::kBlockedByPdb ||
                    outcome == EvictionOutcome::kDeferred || outcome == EvictionOutcome::kThrottled,
                "429 is a PDB, a webhook or throttling");
      break;
    case 500:
      NMO_CHECK(outcome == EvictionOutcome::kMultiplePdbs || outcome == EvictionOutcome::kRefused,
                "500 is MultiplePDBs or Refused");
      break;
    case 403:
      NMO_CHECK(
          outcome == EvictionOutcome::kNamespaceTerminating || outcome == EvictionOutcome::kRefused,
          "403 is NamespaceTerminating or Refused");
      break;
    default:
      NMO_CHECK(outcome == EvictionOutcome::kRefused, "other statuses are Refused");
      break;
  }
  return 0;
}
