// Fuzz target: the node side of a maintenance on nodes as anyone with node write access could
// leave them. The prior-state annotation (nodemaintenance.medik8s.io/prior-state) is plain text
// on the Node, so it is untrusted input. The first byte picks the input:
//   even: the annotation's value -> decode_prior_state(); whatever decodes must survive
//         encode_prior_state() -> decode_prior_state() unchanged;
//   odd:  a Node object (JSON) -> maintenance_patch(), check_maintenance(), restore_patch() for
//         a CR uid, and the same with the uid found in its annotation. Patches are JSON arrays
//         of operations; a node that needs no patch reports no drift.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/monotonic_resource.hpp>

#include "base/check.h"
#include "kube/api/internal/json_parse.h"
#include "kube/api/node.h"
#include "operator/node/node_patch.h"

namespace {

void check_prior_state(std::string_view text) {
  const nmo::Result<nmo::op::PriorState> state = nmo::op::decode_prior_state(text);
  if (!state.has_value()) {
    NMO_CHECK(state.error().code == nmo::ErrorCode::kInvalid, state.error().describe());
    return;
  }
  const std::string encoded = nmo::op::encode_prior_state(*state);
  const nmo::Result<nmo::op::PriorState> again = nmo::op::decode_prior_state(encoded);
  NMO_CHECK(again.has_value() && *again == *state, "prior-state round trip failed: " + encoded);
}

void check_node_for(const nmo::kube::Node& node, std::string_view cr_uid) {
  const std::optional<boost::json::array> patch = nmo::op::maintenance_patch(node, "nm", cr_uid);
  const nmo::op::MaintenanceDrift drift = nmo::op::check_maintenance(node, cr_uid);
  if (patch.has_value()) {
    NMO_CHECK(!patch->empty(), "a maintenance patch has operations");
  }
  (void)drift.tampered();
  const nmo::op::RestorePlan plan = nmo::op::restore_patch(node, cr_uid);
  if (plan.kind == nmo::op::RestoreKind::kNotOurs) {
    NMO_CHECK(!plan.patch.has_value(), "a node that is not ours is left alone");
  }
  if (plan.patch.has_value()) {
    NMO_CHECK(!plan.patch->empty(), "a restore patch has operations");
  }
}

void check_node(std::string_view text) {
  boost::json::monotonic_resource arena;
  const nmo::Result<boost::json::value> json =
      nmo::kube::internal::parse_json(text, boost::json::storage_ptr(&arena));
  if (!json.has_value()) {
    return;
  }
  const nmo::Result<nmo::kube::Node> node = nmo::kube::decode_node(*json);
  if (!node.has_value()) {
    return;
  }
  check_node_for(*node, "uid-1");
  if (const std::optional<nmo::op::PriorState> state = nmo::op::prior_state_of(*node)) {
    check_node_for(*node, state->cr_uid);
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    check_prior_state(rest);
  } else {
    check_node(rest);
  }
  return 0;
}
