// Fuzz target: a NodeMaintenance object as the API server (or anyone able to write the CR) could
// send it, through decode_node_maintenance() and the helpers the controller applies to it.
// Must never crash, throw or leak. Invariants checked on whatever decodes:
//   - spec.drainTimeout is either a positive duration up to kMaxDrainTimeout with no error, or
//     unset with an error that validation_error() reports; format_duration() of it parses back
//     to the same value;
//   - spec.gracePeriodSeconds is either >= 1 with no error, or unset;
//   - validation_error() is empty exactly when nodeName is set and both fields are usable;
//   - the status survives encode_status() -> decode_node_maintenance() unchanged (times cut to
//     whole seconds, the precision encode_status() writes), and status_merge_patch() names every
//     status field.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/check.h"
#include "kube/api/internal/json_parse.h"
#include "operator/api/node_maintenance.h"

namespace {

using nmo::op::NodeMaintenanceSpec;
using nmo::op::NodeMaintenanceStatus;

void check_spec(const NodeMaintenanceSpec& spec) {
  if (spec.drain_timeout.has_value()) {
    NMO_CHECK(spec.drain_timeout_error.empty(), "a parsed drainTimeout carries no error");
    NMO_CHECK(*spec.drain_timeout > nmo::op::Duration::zero() &&
                  *spec.drain_timeout <= nmo::op::kMaxDrainTimeout,
              "drainTimeout must be positive and at most kMaxDrainTimeout");
    const std::string text = nmo::op::format_duration(*spec.drain_timeout);
    const nmo::Result<nmo::op::Duration> again = nmo::op::parse_duration(text);
    NMO_CHECK(again.has_value() && *again == *spec.drain_timeout,
              "format_duration() does not parse back: " + text);
  } else {
    NMO_CHECK(spec.drain_timeout_text.empty() || !spec.drain_timeout_error.empty(),
              "a drainTimeout that was written but not parsed must be explained");
  }
  if (spec.grace_period_seconds.has_value()) {
    NMO_CHECK(*spec.grace_period_seconds >= 1, "gracePeriodSeconds must be at least 1");
    NMO_CHECK(spec.grace_period_seconds_error.empty(), "a usable gracePeriodSeconds has no error");
  }
  if (!spec.vm_eviction_policy_error.empty()) {
    NMO_CHECK(spec.vm_eviction_policy == nmo::op::VmEvictionPolicy::kLiveMigrate,
              "an unusable vmEvictionPolicy must leave the protective default");
  }
  const bool usable = !spec.node_name.empty() && spec.drain_timeout_error.empty() &&
                      spec.grace_period_seconds_error.empty() &&
                      spec.vm_eviction_policy_error.empty();
  NMO_CHECK(spec.validation_error().empty() == usable,
            "validation_error() disagrees with the spec: " + spec.validation_error());
}

// The status as encode_status() can represent it: times in whole seconds.
NodeMaintenanceStatus whole_seconds(NodeMaintenanceStatus status) {
  if (status.last_update.has_value()) {
    status.last_update = std::chrono::floor<std::chrono::seconds>(*status.last_update);
  }
  for (nmo::op::Condition& condition : status.conditions) {
    condition.last_transition_time =
        std::chrono::floor<std::chrono::seconds>(condition.last_transition_time);
  }
  return status;
}

void check_status_round_trip(const NodeMaintenanceStatus& decoded) {
  const NodeMaintenanceStatus status = whole_seconds(decoded);
  const boost::json::value object =
      boost::json::object{{"kind", nmo::op::kKind}, {"status", nmo::op::encode_status(status)}};
  const nmo::Result<nmo::op::NodeMaintenance> again = nmo::op::decode_node_maintenance(object);
  NMO_CHECK(again.has_value(), "encode_status() output does not decode: " +
                                   (again.has_value() ? std::string() : again.error().describe()));
  NMO_CHECK(again->status == status, "encode_status() round trip changed the status");

  const boost::json::object patch = nmo::op::status_merge_patch(status);
  const boost::json::value* fields = patch.if_contains("status");
  NMO_CHECK(fields != nullptr && fields->is_object() && fields->get_object().size() == 11,
            "status_merge_patch() must set or clear every status field");
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::json::monotonic_resource arena;
  const nmo::Result<boost::json::value> json =
      nmo::kube::internal::parse_json(text, boost::json::storage_ptr(&arena));
  if (!json.has_value()) {
    return 0;
  }
  const nmo::Result<nmo::op::NodeMaintenance> maintenance = nmo::op::decode_node_maintenance(*json);
  if (!maintenance.has_value()) {
    NMO_CHECK(maintenance.error().code == nmo::ErrorCode::kInvalid,
              "decode errors are kInvalid: " + maintenance.error().describe());
    NMO_CHECK(!maintenance.error().message.empty(), "a decode error explains itself");
    return 0;
  }
  check_spec(maintenance->spec);
  check_status_round_trip(maintenance->status);
  return 0;
}
