// Fuzz target: parse_selector on arbitrary bytes. A selector that parses must print (to_query)
// a string that parses back to an equal selector, and matching must not crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "kube/api/label_selector.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nmo::Result<nmo::kube::LabelSelector> selector = nmo::kube::parse_selector(text);
  if (!selector.has_value()) {
    NMO_CHECK(selector.error().code == nmo::ErrorCode::kInvalid, selector.error().describe());
    return 0;
  }
  const std::string query = selector->to_query();
  const nmo::Result<nmo::kube::LabelSelector> again = nmo::kube::parse_selector(query);
  NMO_CHECK(again.has_value(), "to_query() output does not parse: " + query);
  NMO_CHECK(*again == *selector, "to_query() round trip changed the selector: " + query);
  // Match against labels built from the selector itself, so matching paths get exercised.
  nmo::kube::Labels labels = selector->match_labels;
  for (const nmo::kube::LabelSelectorRequirement& requirement : selector->match_expressions) {
    labels.set(requirement.key, requirement.values.empty() ? "" : requirement.values.front());
  }
  (void)selector->matches(labels);
  (void)selector->matches(nmo::kube::Labels{});
  return 0;
}
