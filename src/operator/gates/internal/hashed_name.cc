#include "operator/gates/internal/hashed_name.h"

#include "base/check.h"

namespace nmo::op::internal {

std::string fit_name(std::string_view prefix, std::string_view name, std::size_t max_length) {
  constexpr std::size_t kHashDigits = 16;
  NMO_CHECK(max_length > prefix.size() + kHashDigits + 1, "name limit too small for a hash");
  if (prefix.size() + name.size() <= max_length) {
    std::string fitted(prefix);
    fitted += name;
    return fitted;
  }
  std::string_view kept = name.substr(0, max_length - prefix.size() - kHashDigits - 1);
  while (!kept.empty() && (kept.back() == '-' || kept.back() == '.')) kept.remove_suffix(1);
  std::string fitted(prefix);
  fitted += kept;
  if (!kept.empty()) fitted += '-';
  fitted += fnv1a64_hex(name);
  return fitted;
}

}  // namespace nmo::op::internal
