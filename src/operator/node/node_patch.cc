#include "operator/node/node_patch.h"

#include <algorithm>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "operator/node/internal/taint_patch.h"

namespace nmo::op {
namespace {

namespace json = boost::json;
using internal::add_test;
using internal::patch_op;
using internal::set_taints;
using internal::unless_empty;

bool matches(const kube::Taint& taint, std::string_view key, std::string_view effect) {
  return taint.key == key && taint.effect == effect;
}

// Sets one entry of metadata.labels or metadata.annotations (`map` is "labels"/"annotations").
void add_map_entry(const kube::Labels& current, std::string_view map, std::string_view key,
                   std::string_view value, json::array& patch) {
  const std::string base = "/metadata/" + std::string(map);
  if (current.empty()) {
    json::object whole;
    whole[key] = value;
    patch.push_back(patch_op("add", base, std::move(whole)));
  } else {
    patch.push_back(patch_op("add", base + "/" + json_pointer_escape(key), json::value(value)));
  }
}

void remove_map_entry(std::string_view map, std::string_view key, json::array& patch) {
  patch.push_back(
      patch_op("remove", "/metadata/" + std::string(map) + "/" + json_pointer_escape(key)));
}

const std::string* exclude_label(const kube::Node& node) {
  return node.meta.labels.find(kExcludeFromRemediationLabel);
}

Error invalid(std::string message) {
  return Error(ErrorCode::kInvalid, "prior-state annotation: " + std::move(message));
}

}  // namespace

std::string encode_prior_state(const PriorState& state) {
  json::object object;
  object["wasUnschedulable"] = state.was_unschedulable;
  if (state.exclude_label) {
    object["excludeLabel"] = *state.exclude_label;
  } else {
    object["excludeLabel"] = nullptr;
  }
  object["name"] = state.cr_name;
  object["uid"] = state.cr_uid;
  return json::serialize(object);
}

Result<PriorState> decode_prior_state(std::string_view text) {
  std::error_code ec;
  const json::value value = json::parse(text, ec);
  if (ec) return invalid("not JSON: " + ec.message());
  const json::object* object = value.if_object();
  if (object == nullptr) return invalid("not a JSON object");
  PriorState state;
  if (const json::value* field = object->if_contains("wasUnschedulable")) {
    if (!field->is_bool()) return invalid("wasUnschedulable: expected a bool");
    state.was_unschedulable = field->get_bool();
  }
  if (const json::value* field = object->if_contains("excludeLabel"); field && !field->is_null()) {
    if (!field->is_string()) return invalid("excludeLabel: expected a string or null");
    state.exclude_label = std::string(field->get_string());
  }
  const json::value* name = object->if_contains("name");
  const json::value* uid = object->if_contains("uid");
  if (name == nullptr || !name->is_string()) return invalid("name: expected a string");
  if (uid == nullptr || !uid->is_string()) return invalid("uid: expected a string");
  state.cr_name = std::string(name->get_string());
  state.cr_uid = std::string(uid->get_string());
  return state;
}

std::optional<PriorState> prior_state_of(const kube::Node& node) {
  const std::string* text = node.meta.annotations.find(kPriorStateAnnotation);
  if (text == nullptr) return std::nullopt;
  Result<PriorState> state = decode_prior_state(*text);
  if (!state) return std::nullopt;
  return std::move(state).value();
}

std::string json_pointer_escape(std::string_view token) {
  std::string escaped;
  escaped.reserve(token.size());
  for (const char c : token) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

bool has_taint(const kube::Node& node, std::string_view key, std::string_view effect) noexcept {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [&](const kube::Taint& taint) { return matches(taint, key, effect); });
}

std::optional<json::array> maintenance_patch(const kube::Node& node, std::string_view cr_name,
                                             std::string_view cr_uid) {
  json::array patch;
  add_test(node, patch);

  const std::string* annotation = node.meta.annotations.find(kPriorStateAnnotation);
  std::optional<PriorState> prior;
  if (annotation != nullptr) {
    Result<PriorState> decoded = decode_prior_state(*annotation);
    if (decoded) {
      prior = std::move(decoded).value();
    } else {
      prior = PriorState{};  // unreadable: upstream's behaviour on delete
    }
  } else if (has_taint(node, kDrainTaintKey, kNoScheduleEffect)) {
    prior = PriorState{};  // already under maintenance, state before unknown: as upstream
  } else {
    const std::string* label = exclude_label(node);
    prior = PriorState{.was_unschedulable = node.unschedulable,
                       .exclude_label = label ? std::optional<std::string>(*label) : std::nullopt,
                       .cr_name = {},
                       .cr_uid = {}};
  }
  if (annotation == nullptr || prior->cr_uid != cr_uid || prior->cr_name != cr_name) {
    prior->cr_name = std::string(cr_name);
    prior->cr_uid = std::string(cr_uid);
    add_map_entry(node.meta.annotations, "annotations", kPriorStateAnnotation,
                  encode_prior_state(*prior), patch);
  }

  const std::string* label = exclude_label(node);
  if (label == nullptr || *label != "true") {
    add_map_entry(node.meta.labels, "labels", kExcludeFromRemediationLabel, "true", patch);
  }
  if (!node.unschedulable)
    patch.push_back(patch_op("add", "/spec/unschedulable", json::value(true)));

  std::vector<kube::Taint> taints = node.taints;
  if (!has_taint(node, kUnschedulableTaintKey, kNoScheduleEffect)) {
    taints.push_back({.key = std::string(kUnschedulableTaintKey),
                      .value = {},
                      .effect = std::string(kNoScheduleEffect),
                      .time_added = std::nullopt});
  }
  if (!has_taint(node, kDrainTaintKey, kNoScheduleEffect)) {
    taints.push_back({.key = std::string(kDrainTaintKey),
                      .value = std::string(kDrainTaintValue),
                      .effect = std::string(kNoScheduleEffect),
                      .time_added = std::nullopt});
  }
  set_taints(node, taints, patch);
  return unless_empty(std::move(patch));
}

MaintenanceDrift check_maintenance(const kube::Node& node, std::string_view cr_uid) {
  const std::string* label = exclude_label(node);
  const std::optional<PriorState> prior = prior_state_of(node);
  return MaintenanceDrift{
      .uncordoned = !node.unschedulable,
      .drain_taint_missing = !has_taint(node, kDrainTaintKey, kNoScheduleEffect),
      .label_missing = label == nullptr || *label != "true",
      .prior_state_missing = !prior || prior->cr_uid != cr_uid,
  };
}

RestorePlan restore_patch(const kube::Node& node, std::string_view cr_uid) {
  RestorePlan plan;
  const bool has_annotation = node.meta.annotations.contains(kPriorStateAnnotation);
  std::optional<PriorState> prior = prior_state_of(node);
  if (prior && prior->cr_uid == cr_uid) {
    plan.kind = RestoreKind::kOurs;
  } else if (!has_annotation &&
             std::any_of(node.taints.begin(), node.taints.end(), [](const kube::Taint& taint) {
               return matches(taint, kDrainTaintKey, kNoScheduleEffect) && taint.value.empty();
             })) {
    plan.kind = RestoreKind::kAdoptedUpstream;
    // Upstream removes both taints, uncordons, and removes the label only when it is "true".
    const std::string* label = exclude_label(node);
    prior =
        PriorState{.was_unschedulable = false,
                   .exclude_label = (label && *label != "true") ? std::optional<std::string>(*label)
                                                                : std::nullopt,
                   .cr_name = {},
                   .cr_uid = std::string(cr_uid)};
  } else {
    return plan;  // kNotOurs
  }

  json::array patch;
  add_test(node, patch);
  std::vector<kube::Taint> taints;
  for (const kube::Taint& taint : node.taints) {
    if (matches(taint, kDrainTaintKey, kNoScheduleEffect)) continue;
    if (!prior->was_unschedulable && matches(taint, kUnschedulableTaintKey, kNoScheduleEffect)) {
      continue;  // goes with the cordon (kube-controller-manager would remove it too)
    }
    taints.push_back(taint);
  }
  set_taints(node, taints, patch);
  if (node.unschedulable != prior->was_unschedulable) {
    patch.push_back(patch_op("add", "/spec/unschedulable", json::value(prior->was_unschedulable)));
  }
  plan.uncordons = node.unschedulable && !prior->was_unschedulable;
  plan.left_cordoned = prior->was_unschedulable;

  const std::string* label = exclude_label(node);
  if (!prior->exclude_label) {
    if (label != nullptr) remove_map_entry("labels", kExcludeFromRemediationLabel, patch);
  } else if (label == nullptr || *label != *prior->exclude_label) {
    add_map_entry(node.meta.labels, "labels", kExcludeFromRemediationLabel, *prior->exclude_label,
                  patch);
  }
  if (has_annotation) remove_map_entry("annotations", kPriorStateAnnotation, patch);
  plan.patch = unless_empty(std::move(patch));
  return plan;
}

}  // namespace nmo::op
