#include "operator/kubevirt/vm_policy.h"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"
#include "kube/api/meta.h"

namespace nmo::op {

namespace {

using kube::internal::FieldPath;

constexpr std::size_t kMaxDnsLabel = 63;

constexpr std::string_view kNone = "None";
constexpr std::string_view kLiveMigrate = "LiveMigrate";
constexpr std::string_view kLiveMigrateIfPossible = "LiveMigrateIfPossible";
constexpr std::string_view kExternal = "External";

// The LiveMigratable condition of status.conditions, into `vmi`.
Result<void> decode_live_migratable(const boost::json::object& status, const FieldPath& path,
                                    Vmi& vmi) {
  NMO_TRY_ASSIGN(std::optional<kube::internal::ConditionEntry> condition,
                 kube::internal::find_condition_entry(status, "LiveMigratable", path));
  if (!condition) return {};
  vmi.live_migratable = condition->status == "True";
  if (!*vmi.live_migratable) {
    vmi.not_migratable_because =
        condition->message.empty() ? std::move(condition->reason) : std::move(condition->message);
  }
  return {};
}

// Why a migration failed: status.migrationState.failureReason, else the message of the last
// condition that has one.
Result<std::string> decode_failure(const boost::json::object& status, const FieldPath& path) {
  NMO_TRY_ASSIGN(const boost::json::object* state,
                 kube::internal::get_object(status, "migrationState", path));
  if (state != nullptr) {
    NMO_TRY_ASSIGN(std::string reason, kube::internal::get_string(*state, "failureReason",
                                                                  path.field("migrationState")));
    if (!reason.empty()) return reason;
  }
  NMO_TRY_ASSIGN(const boost::json::array* conditions,
                 kube::internal::get_array(status, "conditions", path));
  std::string message;
  if (conditions == nullptr) return message;
  const FieldPath list = path.field("conditions");
  for (std::size_t i = 0; i < conditions->size(); ++i) {
    const boost::json::value& entry = (*conditions)[i];
    if (!entry.is_object()) return kube::internal::type_error(list.element(i), "an object", entry);
    NMO_TRY_ASSIGN(std::string text,
                   kube::internal::get_string(entry.get_object(), "message", list.element(i)));
    if (!text.empty()) message = std::move(text);
  }
  return message;
}

std::string key_of(const Vmi& vmi) { return vmi.namespace_ + "/" + vmi.name; }

// ", because <why>" when KubeVirt said why the VMI cannot migrate.
std::string because(const Vmi& vmi) {
  if (vmi.not_migratable_because.empty()) {
    return vmi.live_migratable ? "" : " (it reports no LiveMigratable condition)";
  }
  return ": " + vmi.not_migratable_because;
}

std::string strategy_text(const std::optional<std::string>& strategy) {
  return strategy ? "eviction strategy " + *strategy : "no eviction strategy";
}

// A verdict's reason where it is also the pod's pending reason: the status and the Events say
// the same word.
std::string reason_text(PendingPodReason reason) { return std::string(to_string(reason)); }

}  // namespace

bool is_virt_launcher(const kube::Pod& pod) {
  const std::string* value = pod.meta.labels.find(kVirtLauncherLabel);
  return value != nullptr && *value == kVirtLauncherValue;
}

std::string vmi_name(const kube::Pod& pod) {
  if (const std::string* name = pod.meta.annotations.find(kVmiNameAnnotation)) return *name;
  if (const std::string* name = pod.meta.labels.find(kVmNameLabel)) return *name;
  return "";
}

Result<Vmi> decode_vmi(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* root,
                 kube::internal::object_of_kind(object, "VirtualMachineInstance"));
  NMO_TRY_ASSIGN(kube::ObjectMeta meta, kube::decode_meta(object));
  Vmi vmi{.namespace_ = std::move(meta.namespace_),
          .name = std::move(meta.name),
          .uid = std::move(meta.uid)};
  const FieldPath top;
  NMO_TRY_ASSIGN(const boost::json::object* spec, kube::internal::get_object(*root, "spec", top));
  if (spec != nullptr) {
    NMO_TRY_ASSIGN(vmi.eviction_strategy, kube::internal::get_optional_string(
                                              *spec, "evictionStrategy", top.field("spec")));
  }
  NMO_TRY_ASSIGN(const boost::json::object* status,
                 kube::internal::get_object(*root, "status", top));
  if (status != nullptr) {
    const FieldPath at = top.field("status");
    NMO_TRY_ASSIGN(vmi.node_name, kube::internal::get_string(*status, "nodeName", at));
    NMO_TRY_ASSIGN(vmi.evacuation_node_name,
                   kube::internal::get_string(*status, "evacuationNodeName", at));
    NMO_TRY(decode_live_migratable(*status, at, vmi));
    NMO_TRY_ASSIGN(vmi.phase, kube::internal::get_string(*status, "phase", at));
    NMO_TRY_ASSIGN(const boost::json::object* migration,
                   kube::internal::get_object(*status, "migrationState", at));
    if (migration != nullptr) {
      const FieldPath state = at.field("migrationState");
      NMO_TRY_ASSIGN(const bool completed,
                     kube::internal::get_bool(*migration, "completed", state));
      NMO_TRY_ASSIGN(const bool failed, kube::internal::get_bool(*migration, "failed", state));
      vmi.migrating = !completed && !failed;
    }
  }
  return vmi;
}

std::optional<std::string> cluster_eviction_strategy(const boost::json::value& kubevirts) {
  const auto* list = kubevirts.if_object();
  const auto* items = list != nullptr ? list->if_contains("items") : nullptr;
  if (items == nullptr || !items->is_array() || items->get_array().empty()) return std::nullopt;
  return kubevirt_eviction_strategy(items->get_array().front());
}

std::optional<std::string> kubevirt_eviction_strategy(const boost::json::value& kubevirt) {
  const auto* root = kubevirt.if_object();
  const auto* spec = root ? root->if_contains("spec") : nullptr;
  const auto* configuration =
      spec && spec->is_object() ? spec->get_object().if_contains("configuration") : nullptr;
  const auto* strategy = configuration && configuration->is_object()
                             ? configuration->get_object().if_contains("evictionStrategy")
                             : nullptr;
  if (strategy == nullptr || !strategy->is_string()) return std::nullopt;
  return std::string(strategy->get_string());
}

std::optional<std::string> effective_eviction_strategy(
    const Vmi& vmi, const std::optional<std::string>& cluster_strategy) {
  return vmi.eviction_strategy ? vmi.eviction_strategy : cluster_strategy;
}

std::string_view to_string(OnEviction on_eviction) noexcept {
  switch (on_eviction) {
    case OnEviction::kShutsDown:
      return "ShutsDown";
    case OnEviction::kMigrates:
      return "Migrates";
    case OnEviction::kEvacuates:
      return "Evacuates";
    case OnEviction::kRefusesForGood:
      return "RefusesForGood";
  }
  return "ShutsDown";
}

OnEviction kubevirt_on_eviction(const Vmi& vmi,
                                const std::optional<std::string>& cluster_strategy) {
  const std::optional<std::string> strategy = effective_eviction_strategy(vmi, cluster_strategy);
  const bool migratable = vmi.live_migratable.value_or(false);
  if (!strategy || *strategy == kNone) return OnEviction::kShutsDown;
  if (*strategy == kLiveMigrate) {
    return migratable ? OnEviction::kMigrates : OnEviction::kRefusesForGood;
  }
  if (*strategy == kLiveMigrateIfPossible) {
    return migratable ? OnEviction::kMigrates : OnEviction::kShutsDown;
  }
  if (*strategy == kExternal) return OnEviction::kEvacuates;
  return OnEviction::kShutsDown;
}

std::string_view to_string(VmAction action) noexcept {
  switch (action) {
    case VmAction::kEvict:
      return "Evict";
    case VmAction::kMigrate:
      return "Migrate";
    case VmAction::kHold:
      return "Hold";
  }
  return "Evict";
}

std::string kubevirt_api_root() { return kube::api_root_path<Vmi>(); }

VmVerdict decide_vm(const Vmi& vmi, const std::optional<std::string>& cluster_strategy,
                    VmEvictionPolicy policy) {
  const std::optional<std::string> strategy = effective_eviction_strategy(vmi, cluster_strategy);
  const OnEviction on_eviction = kubevirt_on_eviction(vmi, cluster_strategy);
  const std::string name = "VMI " + key_of(vmi);
  switch (on_eviction) {
    case OnEviction::kMigrates:
      return {.action = VmAction::kEvict,
              .on_eviction = on_eviction,
              .reason = reason_text(PendingPodReason::kMigratingVm),
              .detail = name + " has " + strategy_text(strategy) +
                        ": KubeVirt live-migrates it when its pod is evicted"};
    case OnEviction::kEvacuates:
      return {.action = VmAction::kEvict,
              .on_eviction = on_eviction,
              .reason = reason_text(PendingPodReason::kMigratingVm),
              .detail = name +
                        " has eviction strategy External: KubeVirt defers the eviction "
                        "and an external controller evacuates it"};
    case OnEviction::kRefusesForGood:
      return {.action = VmAction::kHold,
              .on_eviction = on_eviction,
              .reason = reason_text(PendingPodReason::kVmNotMigratable),
              .detail = name + " has eviction strategy LiveMigrate but cannot live-migrate" +
                        because(vmi) +
                        ": KubeVirt refuses every eviction of its pod until the VM can migrate "
                        "or its strategy changes",
              .held_as = PendingPodReason::kVmNotMigratable};
    case OnEviction::kShutsDown:
      break;
  }
  if (policy == VmEvictionPolicy::kAllowShutdown) {
    return {.action = VmAction::kEvict,
            .on_eviction = on_eviction,
            .reason = "VMShutsDown",
            .detail = name + " has " + strategy_text(strategy) +
                      ": its eviction shuts the VM down, which this maintenance allows "
                      "(vmEvictionPolicy AllowShutdown)"};
  }
  if (vmi.live_migratable.value_or(false)) {
    return {.action = VmAction::kMigrate,
            .on_eviction = on_eviction,
            .reason = reason_text(PendingPodReason::kMigratingVm),
            .detail = name + " has " + strategy_text(strategy) +
                      ", so evicting its pod would shut it down: the operator live-migrates it "
                      "instead",
            .held_as = PendingPodReason::kMigratingVm};
  }
  return {.action = VmAction::kHold,
          .on_eviction = on_eviction,
          .reason = reason_text(PendingPodReason::kVmWouldShutDown),
          .detail = name + " cannot live-migrate" + because(vmi) + " and has " +
                    strategy_text(strategy) +
                    ": evicting its pod would shut it down; set vmEvictionPolicy AllowShutdown on "
                    "the maintenance to allow that",
          .held_as = PendingPodReason::kVmWouldShutDown};
}

KubeVirtRefusal classify_kubevirt_refusal(std::string_view message) noexcept {
  if (message.find("is configured with an eviction strategy but is not live-migratable") !=
      std::string_view::npos) {
    return KubeVirtRefusal::kNotLiveMigratable;
  }
  // The API server puts the webhook's name before KubeVirt's text ("admission webhook ... denied
  // the request: Evacuation in progress: ...").
  if (message.find("Evacuation in progress") != std::string_view::npos) {
    return KubeVirtRefusal::kEvacuationInProgress;
  }
  if (message.find("Eviction triggered evacuation of VMI") != std::string_view::npos) {
    return KubeVirtRefusal::kEvacuationStarted;
  }
  return KubeVirtRefusal::kOther;
}

Result<Migration> decode_migration(const boost::json::value& object) {
  NMO_TRY_ASSIGN(const boost::json::object* root,
                 kube::internal::object_of_kind(object, "VirtualMachineInstanceMigration"));
  NMO_TRY_ASSIGN(kube::ObjectMeta meta, kube::decode_meta(object));
  Migration migration{.namespace_ = std::move(meta.namespace_), .name = std::move(meta.name)};
  if (const std::string* attempt = meta.labels.find(kMigrationAttemptLabel)) {
    int value = 0;
    const auto [end, error] =
        std::from_chars(attempt->data(), attempt->data() + attempt->size(), value);
    if (error == std::errc() && end == attempt->data() + attempt->size() && value > 0) {
      migration.attempt = value;
    }
  }
  const FieldPath top;
  NMO_TRY_ASSIGN(const boost::json::object* spec, kube::internal::get_object(*root, "spec", top));
  if (spec != nullptr) {
    NMO_TRY_ASSIGN(migration.vmi_name,
                   kube::internal::get_string(*spec, "vmiName", top.field("spec")));
  }
  NMO_TRY_ASSIGN(const boost::json::object* status,
                 kube::internal::get_object(*root, "status", top));
  if (status != nullptr) {
    const FieldPath at = top.field("status");
    NMO_TRY_ASSIGN(migration.phase, kube::internal::get_string(*status, "phase", at));
    if (migration.failed()) {
      NMO_TRY_ASSIGN(migration.failure, decode_failure(*status, at));
    }
  }
  return migration;
}

std::string migration_name(std::string_view vmi, std::string_view maintenance_uid, int attempt) {
  const std::string suffix =
      "-maintenance-" + std::string(maintenance_uid.substr(0, 8)) + "-" + std::to_string(attempt);
  std::string name(vmi.substr(0, kMaxDnsLabel > suffix.size() ? kMaxDnsLabel - suffix.size() : 0));
  // A label ends with a letter or a digit.
  while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  return name + suffix;
}

boost::json::value migration_manifest(std::string_view namespace_, std::string_view name,
                                      std::string_view vmi, int attempt,
                                      std::string_view maintenance,
                                      std::string_view maintenance_uid) {
  return boost::json::object{
      {"apiVersion", kKubeVirtApiVersion},
      {"kind", "VirtualMachineInstanceMigration"},
      {"metadata",
       {{"name", name},
        {"namespace", namespace_},
        {"labels",
         {{kMigrationOwnerLabel, maintenance_uid},
          {kMigrationAttemptLabel, std::to_string(attempt)}}},
        {"ownerReferences", boost::json::array{{{"apiVersion", kApiVersion},
                                                {"kind", kKind},
                                                {"name", maintenance},
                                                {"uid", maintenance_uid}}}}}},
      {"spec", {{"vmiName", vmi}}}};
}

std::chrono::seconds migration_retry_delay(int failures) noexcept {
  constexpr std::chrono::seconds kFirst{5};
  constexpr std::chrono::seconds kMost{300};
  std::chrono::seconds delay = kFirst;
  for (int i = 1; i < failures && delay < kMost; ++i) delay *= 2;
  return std::min(delay, kMost);
}

}  // namespace nmo::op
