#include "operator/api/node_maintenance.h"

#include <array>
#include <cstddef>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

// The typed field access and the quoting of untrusted bytes that every projection uses. They are
// kube/api's internals; NodeMaintenance is the one projection that lives above that layer.
#include "base/strings.h"
#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"
#include "operator/api/internal/enum_names.h"

namespace nmo::op {
namespace {

using internal::kQuoteLimit;
using internal::parse_enum;
using kube::internal::FieldPath;

constexpr std::array<std::string_view, 4> kPhaseNames = {"Pending", "Running", "Succeeded",
                                                         "Failed"};
constexpr std::array<std::string_view, 11> kPendingPodReasonNames = {
    "Evicting",         "WaitingForTermination", "BlockedByPDB", "MultiplePDBs",
    "EvictionDeferred", "NamespaceTerminating",  "Error",        "MigratingVM",
    "VMWouldShutDown",  "VMNotMigratable",       "Held"};

// ---- decoding --------------------------------------------------------------------------------

// spec.drainTimeout into `spec`; never fails (see the header's file comment).
void decode_drain_timeout(const boost::json::object& object, const FieldPath& path,
                          NodeMaintenanceSpec& spec) {
  const boost::json::value* field = kube::internal::find_field(object, "drainTimeout");
  if (field == nullptr) {
    return;
  }
  const FieldPath here = path.field("drainTimeout");
  const boost::json::string* text = field->if_string();
  if (text == nullptr) {
    spec.drain_timeout_text = printable_prefix(boost::json::serialize(*field), kQuoteLimit);
    spec.drain_timeout_error =
        kube::internal::type_error(here, "a duration string like \"90m\"", *field).message;
    return;
  }
  spec.drain_timeout_text.assign(text->data(), text->size());
  Result<Duration> duration = parse_duration(spec.drain_timeout_text);
  if (!duration.has_value()) {
    spec.drain_timeout_error = kube::internal::field_error(here, duration.error().message).message;
    return;
  }
  if (*duration <= Duration::zero()) {
    spec.drain_timeout_error =
        kube::internal::field_error(
            here, "must be longer than zero, got " + quoted(spec.drain_timeout_text, kQuoteLimit))
            .message;
    return;
  }
  if (*duration > kMaxDrainTimeout) {
    spec.drain_timeout_error =
        kube::internal::field_error(here, "must be at most " + format_duration(kMaxDrainTimeout) +
                                              " (10 years), got " +
                                              quoted(spec.drain_timeout_text, kQuoteLimit))
            .message;
    return;
  }
  spec.drain_timeout = *duration;
}

// spec.gracePeriodSeconds into `spec`; never fails (see the header's file comment).
void decode_grace_period(const boost::json::object& object, const FieldPath& path,
                         NodeMaintenanceSpec& spec) {
  const boost::json::value* field = kube::internal::find_field(object, "gracePeriodSeconds");
  if (field == nullptr) {
    return;
  }
  const FieldPath here = path.field("gracePeriodSeconds");
  Result<std::int64_t> seconds = kube::internal::to_int64(*field, here);
  if (!seconds.has_value()) {
    spec.grace_period_seconds_error = std::move(seconds).error().message;
    return;
  }
  if (*seconds < 1) {
    spec.grace_period_seconds_error =
        kube::internal::field_error(
            here, "must be at least 1 (0 would force-delete pods), got " + std::to_string(*seconds))
            .message;
    return;
  }
  spec.grace_period_seconds = *seconds;
}

// spec.vmEvictionPolicy into `spec`; never fails (see the header's file comment).
void decode_vm_eviction_policy(const boost::json::object& object, const FieldPath& path,
                               NodeMaintenanceSpec& spec) {
  const boost::json::value* field = kube::internal::find_field(object, "vmEvictionPolicy");
  if (field == nullptr) return;
  const FieldPath here = path.field("vmEvictionPolicy");
  if (field->is_string() && field->get_string() == "LiveMigrate") return;
  if (field->is_string() && field->get_string() == "AllowShutdown") {
    spec.vm_eviction_policy = VmEvictionPolicy::kAllowShutdown;
    return;
  }
  spec.vm_eviction_policy_error =
      kube::internal::field_error(here,
                                  "must be LiveMigrate or AllowShutdown, got " +
                                      quoted(field->is_string() ? std::string(field->get_string())
                                                                : boost::json::serialize(*field),
                                             kQuoteLimit))
          .message;
}

Result<NodeMaintenanceSpec> decode_spec(const boost::json::object& object, const FieldPath& path) {
  NodeMaintenanceSpec spec;
  NMO_TRY_ASSIGN(spec.node_name, kube::internal::get_string(object, "nodeName", path));
  NMO_TRY_ASSIGN(spec.reason, kube::internal::get_string(object, "reason", path));
  decode_drain_timeout(object, path, spec);
  decode_grace_period(object, path, spec);
  decode_vm_eviction_policy(object, path, spec);
  return spec;
}

// A string field holding one of an enum's names; std::nullopt when absent, null or "".
template <typename Enum>
Result<std::optional<Enum>> get_optional_enum(const boost::json::object& object,
                                              std::string_view key, const FieldPath& path,
                                              Result<Enum> (*parse)(std::string_view)) {
  NMO_TRY_ASSIGN(const std::string text, kube::internal::get_string(object, key, path));
  if (text.empty()) {
    return std::optional<Enum>();
  }
  Result<Enum> value = parse(text);
  if (!value.has_value()) {
    return kube::internal::field_error(path.field(key), value.error().message);
  }
  return std::optional<Enum>(*value);
}

Result<PendingPodRef> decode_pending_pod_ref(const boost::json::value& value,
                                             const FieldPath& path) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return kube::internal::type_error(path, "an object", value);
  }
  PendingPodRef ref;
  NMO_TRY_ASSIGN(ref.namespace_, kube::internal::get_string(*object, "namespace", path));
  NMO_TRY_ASSIGN(ref.name, kube::internal::get_string(*object, "name", path));
  NMO_TRY_ASSIGN(ref.reason, get_optional_enum<PendingPodReason>(*object, "reason", path,
                                                                 &parse_pending_pod_reason));
  NMO_TRY_ASSIGN(ref.message, kube::internal::get_string(*object, "message", path));
  return ref;
}

Result<Condition> decode_condition(const boost::json::value& value, const FieldPath& path) {
  return kube::internal::decode_condition_at(value, path);
}

// Decodes every element of the array field `key` with `decode`; empty when absent or null.
template <typename T>
Result<std::vector<T>> decode_array(const boost::json::object& object, std::string_view key,
                                    const FieldPath& path,
                                    Result<T> (*decode)(const boost::json::value&,
                                                        const FieldPath&)) {
  NMO_TRY_ASSIGN(const boost::json::array* array, kube::internal::get_array(object, key, path));
  std::vector<T> out;
  if (array == nullptr) {
    return out;
  }
  const FieldPath here = path.field(key);
  out.reserve(array->size());
  for (std::size_t i = 0; i < array->size(); ++i) {
    NMO_TRY_ASSIGN(T item, decode((*array)[i], here.element(i)));
    out.push_back(std::move(item));
  }
  return out;
}

Result<NodeMaintenanceStatus> decode_status(const boost::json::object& object,
                                            const FieldPath& path) {
  NodeMaintenanceStatus status;
  NMO_TRY_ASSIGN(status.phase, get_optional_enum<Phase>(object, "phase", path, &parse_phase));
  NMO_TRY_ASSIGN(status.total_pods,
                 kube::internal::get_int<std::int64_t>(object, "totalPods", path));
  NMO_TRY_ASSIGN(status.eviction_pods,
                 kube::internal::get_int<std::int64_t>(object, "evictionPods", path));
  NMO_TRY_ASSIGN(status.pending_pods, kube::internal::get_string_list(object, "pendingPods", path));
  NMO_TRY_ASSIGN(
      status.pending_pods_refs,
      decode_array<PendingPodRef>(object, "pendingPodsRefs", path, &decode_pending_pod_ref));
  NMO_TRY_ASSIGN(status.drain_progress,
                 kube::internal::get_int<std::int64_t>(object, "drainProgress", path));
  NMO_TRY_ASSIGN(status.totalpods,
                 kube::internal::get_int<std::int64_t>(object, "totalpods", path));
  NMO_TRY_ASSIGN(status.last_error, kube::internal::get_string(object, "lastError", path));
  NMO_TRY_ASSIGN(status.last_update, kube::internal::get_optional_time(object, "lastUpdate", path));
  NMO_TRY_ASSIGN(status.error_on_lease_count,
                 kube::internal::get_int<std::int64_t>(object, "errorOnLeaseCount", path));
  NMO_TRY_ASSIGN(status.conditions,
                 decode_array<Condition>(object, "conditions", path, &decode_condition));
  return status;
}

// ---- encoding --------------------------------------------------------------------------------

boost::json::object encode_pending_pod_ref(const PendingPodRef& ref) {
  boost::json::object out{{"namespace", ref.namespace_}, {"name", ref.name}};
  if (ref.reason.has_value()) {
    out["reason"] = to_string(*ref.reason);
  }
  if (!ref.message.empty()) {
    out["message"] = ref.message;
  }
  return out;
}

// Every field encode_status() may write, for status_merge_patch()'s nulls.
constexpr std::array<std::string_view, 11> kStatusFields = {
    "phase",         "totalPods", "evictionPods", "pendingPods",       "pendingPodsRefs",
    "drainProgress", "totalpods", "lastError",    "errorOnLeaseCount", "lastUpdate",
    "conditions"};

}  // namespace

std::string_view to_string(Phase phase) noexcept {
  return kPhaseNames[static_cast<std::size_t>(phase)];
}

Result<Phase> parse_phase(std::string_view text) {
  return parse_enum<Phase>(text, kPhaseNames, "phase");
}

std::string_view to_string(PendingPodReason reason) noexcept {
  return kPendingPodReasonNames[static_cast<std::size_t>(reason)];
}

Result<PendingPodReason> parse_pending_pod_reason(std::string_view text) {
  return parse_enum<PendingPodReason>(text, kPendingPodReasonNames, "pending pod reason");
}

std::string NodeMaintenanceSpec::validation_error() const {
  if (node_name.empty()) {
    return "spec.nodeName: must not be empty";
  }
  if (!drain_timeout_error.empty()) {
    return drain_timeout_error;
  }
  if (!grace_period_seconds_error.empty()) {
    return grace_period_seconds_error;
  }
  return vm_eviction_policy_error;
}

std::string_view to_string(VmEvictionPolicy policy) noexcept {
  return policy == VmEvictionPolicy::kAllowShutdown ? "AllowShutdown" : "LiveMigrate";
}

Result<NodeMaintenance> decode_node_maintenance(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* top, kube::internal::object_of_kind(object, kKind));
  const FieldPath root;
  NodeMaintenance out;
  NMO_TRY_ASSIGN(out.meta, kube::decode_meta(object));
  NMO_TRY_ASSIGN(const boost::json::object* spec, kube::internal::get_object(*top, "spec", root));
  if (spec != nullptr) {
    NMO_TRY_ASSIGN(out.spec, decode_spec(*spec, root.field("spec")));
  }
  NMO_TRY_ASSIGN(const boost::json::object* status,
                 kube::internal::get_object(*top, "status", root));
  if (status != nullptr) {
    NMO_TRY_ASSIGN(out.status, decode_status(*status, root.field("status")));
  }
  return out;
}

boost::json::value node_maintenance_object(const kube::ObjectMeta& meta,
                                           const NodeMaintenanceSpec& spec) {
  const auto encode_labels = [](const kube::Labels& labels) {
    boost::json::object out;
    for (const auto& [key, value] : labels) {
      out[key] = value;
    }
    return out;
  };
  boost::json::object metadata{{"name", meta.name}};
  if (!meta.labels.empty()) {
    metadata["labels"] = encode_labels(meta.labels);
  }
  if (!meta.annotations.empty()) {
    metadata["annotations"] = encode_labels(meta.annotations);
  }
  boost::json::object fields{{"nodeName", spec.node_name}};
  if (!spec.reason.empty()) {
    fields["reason"] = spec.reason;
  }
  if (!spec.drain_timeout_text.empty()) {
    fields["drainTimeout"] = spec.drain_timeout_text;
  }
  if (spec.grace_period_seconds.has_value()) {
    fields["gracePeriodSeconds"] = *spec.grace_period_seconds;
  }
  if (spec.vm_eviction_policy != VmEvictionPolicy::kLiveMigrate) {
    fields["vmEvictionPolicy"] = to_string(spec.vm_eviction_policy);
  }
  return boost::json::object{{"apiVersion", kApiVersion},
                             {"kind", kKind},
                             {"metadata", std::move(metadata)},
                             {"spec", std::move(fields)}};
}

boost::json::object encode_status(const NodeMaintenanceStatus& status) {
  boost::json::object out;
  if (status.phase.has_value()) {
    out["phase"] = to_string(*status.phase);
  }
  out["totalPods"] = status.total_pods;
  out["evictionPods"] = status.eviction_pods;
  if (!status.pending_pods.empty()) {
    boost::json::array names;
    names.reserve(status.pending_pods.size());
    for (const std::string& name : status.pending_pods) {
      names.emplace_back(name);
    }
    out["pendingPods"] = std::move(names);
  }
  if (!status.pending_pods_refs.empty()) {
    boost::json::array refs;
    refs.reserve(status.pending_pods_refs.size());
    for (const PendingPodRef& ref : status.pending_pods_refs) {
      refs.emplace_back(encode_pending_pod_ref(ref));
    }
    out["pendingPodsRefs"] = std::move(refs);
  }
  out["drainProgress"] = status.drain_progress;
  out["totalpods"] = status.totalpods;
  if (!status.last_error.empty()) {
    out["lastError"] = status.last_error;
  }
  if (status.last_update.has_value()) {
    out["lastUpdate"] = kube::format_time(*status.last_update);
  }
  out["errorOnLeaseCount"] = status.error_on_lease_count;
  if (!status.conditions.empty()) {
    boost::json::array conditions;
    conditions.reserve(status.conditions.size());
    for (const Condition& condition : status.conditions) {
      conditions.emplace_back(encode_condition(condition));
    }
    out["conditions"] = std::move(conditions);
  }
  return out;
}

boost::json::object status_merge_patch(const NodeMaintenanceStatus& status) {
  boost::json::object fields = encode_status(status);
  for (const std::string_view field : kStatusFields) {
    if (!fields.contains(field)) {
      fields[field] = nullptr;
    }
  }
  return boost::json::object{{"status", std::move(fields)}};
}

}  // namespace nmo::op
