#include "operator/drain/pending_reason.h"

#include <array>
#include <utility>

namespace nmo::op {
namespace {

constexpr std::array<std::pair<PendingReason, std::string_view>, 7> kSpellings{{
    {PendingReason::kEvicting, "Evicting"},
    {PendingReason::kWaitingForTermination, "WaitingForTermination"},
    {PendingReason::kBlockedByPdb, "BlockedByPDB"},
    {PendingReason::kMultiplePdbs, "MultiplePDBs"},
    {PendingReason::kEvictionDeferred, "EvictionDeferred"},
    {PendingReason::kNamespaceTerminating, "NamespaceTerminating"},
    {PendingReason::kError, "Error"},
}};

}  // namespace

std::string_view to_string(PendingReason reason) noexcept {
  for (const auto& [value, text] : kSpellings) {
    if (value == reason) return text;
  }
  return "Error";
}

std::optional<PendingReason> parse_pending_reason(std::string_view text) noexcept {
  for (const auto& [value, spelling] : kSpellings) {
    if (spelling == text) return value;
  }
  return std::nullopt;
}

}  // namespace nmo::op
