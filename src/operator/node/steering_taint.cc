#include "operator/node/steering_taint.h"

#include <string>
#include <utility>
#include <vector>

#include "operator/node/internal/taint_patch.h"
#include "operator/node/node_patch.h"

namespace nmo::op {

bool has_steering_taint(const kube::Node& node) noexcept {
  return has_taint(node, kSteeringTaintKey, kPreferNoScheduleEffect);
}

std::optional<boost::json::array> steering_patch(const kube::Node& node, bool wanted) {
  if (has_steering_taint(node) == wanted) return std::nullopt;
  std::vector<kube::Taint> taints = node.taints;
  if (wanted) {
    taints.push_back({.key = std::string(kSteeringTaintKey),
                      .value = {},
                      .effect = std::string(kPreferNoScheduleEffect),
                      .time_added = std::nullopt});
  } else {
    std::erase_if(taints, [](const kube::Taint& taint) {
      return taint.key == kSteeringTaintKey && taint.effect == kPreferNoScheduleEffect;
    });
  }
  boost::json::array patch;
  internal::add_test(node, patch);
  internal::set_taints(node, taints, patch);
  return internal::unless_empty(std::move(patch));
}

}  // namespace nmo::op
