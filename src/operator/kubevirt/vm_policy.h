// KubeVirt VMs under a drain (docs/design.md §2.9): the VM behind a virt-launcher pod, what
// KubeVirt does when that pod is evicted, and what the drain does instead where an eviction
// would shut a running VM down.
//
//   - A virt-launcher pod (label kubevirt.io=virt-launcher) runs one VirtualMachineInstance,
//     named by its kubevirt.io/domain annotation (else its vm.kubevirt.io/name label).
//   - The VMI's effective eviction strategy is its spec.evictionStrategy, else the KubeVirt CR's
//     spec.configuration.evictionStrategy, else none.
//   - KubeVirt's pod-eviction admission webhook (virt-api) then decides the eviction:
//       none, None                       passes: the pod is deleted and the VM shut down;
//       LiveMigrateIfPossible            429 and a migration when the VMI is migratable,
//                                        else passes (the VM shut down);
//       LiveMigrate                      429 and a migration when migratable, else a 429 that
//                                        waiting never resolves ("is not live-migratable");
//       External                         429; an external controller evacuates the VMI.
//     "Migratable" is the VMI's LiveMigratable condition being True; a VMI without the
//     condition counts as not migratable, as KubeVirt counts it.
//   - decide_vm() gives the drain's verdict under a maintenance's vmEvictionPolicy: with
//     AllowShutdown every VM's pod is evicted and KubeVirt decides; with LiveMigrate (the
//     default) a pod whose eviction would stop its VM is not evicted: a migratable VM is
//     live-migrated by the operator itself (a VirtualMachineInstanceMigration it creates and
//     labels, MigratingVM), one that cannot migrate is held (VMWouldShutDown) until the VM has
//     left the node or shutdown is allowed, and one KubeVirt refuses for good is held too
//     (VMNotMigratable).
//   - The operator's migrations: named after the VMI, the maintenance and the attempt
//     (migration_name()), labelled with the maintenance's uid (kMigrationOwnerLabel), owned by
//     the maintenance; decode_migration() reads what the drain needs of one.
//
// Threading: plain values and pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/meta.h"
#include "kube/api/pod.h"
#include "kube/api/resource.h"
#include "operator/api/node_maintenance.h"

namespace nmo::op {

// The label KubeVirt puts on the pod that runs a VM, and how that pod names its VMI.
inline constexpr std::string_view kVirtLauncherLabel = "kubevirt.io";
inline constexpr std::string_view kVirtLauncherValue = "virt-launcher";
inline constexpr std::string_view kVmiNameAnnotation = "kubevirt.io/domain";
inline constexpr std::string_view kVmNameLabel = "vm.kubevirt.io/name";

// The API group and version KubeVirt serves its resources under, and the two as an apiVersion.
inline constexpr std::string_view kKubeVirtGroup = "kubevirt.io";
inline constexpr std::string_view kKubeVirtVersion = "v1";
inline constexpr std::string_view kKubeVirtApiVersion = "kubevirt.io/v1";
static_assert(kKubeVirtApiVersion.size() == kKubeVirtGroup.size() + 1 + kKubeVirtVersion.size() &&
                  kKubeVirtApiVersion.starts_with(kKubeVirtGroup) &&
                  kKubeVirtApiVersion.ends_with(kKubeVirtVersion),
              "kKubeVirtApiVersion is <group>/<version>");

// "/apis/kubevirt.io/v1": served exactly while KubeVirt is installed.
[[nodiscard]] std::string kubevirt_api_root();

// True for a KubeVirt virt-launcher pod (label kubevirt.io=virt-launcher).
[[nodiscard]] bool is_virt_launcher(const kube::Pod& pod);

// The name of the VirtualMachineInstance a virt-launcher pod runs (annotation kubevirt.io/domain,
// else label vm.kubevirt.io/name), "" when neither is set.
[[nodiscard]] std::string vmi_name(const kube::Pod& pod);

// What the drain needs of one kubevirt.io/v1 VirtualMachineInstance.
struct Vmi {
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  std::string uid;
  // spec.evictionStrategy verbatim; std::nullopt when unset.
  std::optional<std::string> eviction_strategy;
  // The LiveMigratable condition: true/false; std::nullopt when the VMI has none.
  std::optional<bool> live_migratable;
  // Why it cannot migrate: the condition's message, else its reason; "" when none.
  std::string not_migratable_because;
  std::string node_name;             // status.nodeName
  std::string evacuation_node_name;  // status.evacuationNodeName (an evacuation was asked for)
  std::string phase;                 // status.phase ("Running", "Scheduling", ...)
  // status.migrationState says a live migration started that has neither completed nor failed.
  bool migrating = false;

  friend bool operator==(const Vmi&, const Vmi&) = default;
};

// Decodes a VirtualMachineInstance. `kind`, when present, must be "VirtualMachineInstance";
// fields the drain does not need are not read. Errors are ErrorCode::kInvalid naming the field.
[[nodiscard]] Result<Vmi> decode_vmi(const boost::json::value& object);

// The cluster-wide default from a KubeVirtList (GET .../kubevirts): the first KubeVirt CR's
// (there is one per cluster) spec.configuration.evictionStrategy; std::nullopt when the list is
// empty or it has none (or the value is not such a list).
[[nodiscard]] std::optional<std::string> cluster_eviction_strategy(
    const boost::json::value& kubevirts);
// The same of one KubeVirt CR.
[[nodiscard]] std::optional<std::string> kubevirt_eviction_strategy(
    const boost::json::value& kubevirt);

// The VMI's strategy, else the cluster's; std::nullopt when neither is set.
[[nodiscard]] std::optional<std::string> effective_eviction_strategy(
    const Vmi& vmi, const std::optional<std::string>& cluster_strategy);

// What KubeVirt does when the pod of a VMI is evicted (its pod-eviction webhook).
enum class OnEviction {
  kShutsDown,       // the eviction passes: the VM stops with its pod
  kMigrates,        // 429, and KubeVirt live-migrates the VMI off the node
  kEvacuates,       // 429, and an external controller evacuates it (strategy External)
  kRefusesForGood,  // 429 that waiting never resolves: LiveMigrate on a VMI not migratable
};

// "ShutsDown", "Migrates", "Evacuates", "RefusesForGood".
[[nodiscard]] std::string_view to_string(OnEviction on_eviction) noexcept;

// KubeVirt's answer for `vmi` under `cluster_strategy` (see the file comment). A strategy
// KubeVirt does not know is taken as none: the eviction passes.
[[nodiscard]] OnEviction kubevirt_on_eviction(const Vmi& vmi,
                                              const std::optional<std::string>& cluster_strategy);

// What the drain does with a running VM's pod.
enum class VmAction {
  kEvict,    // evict: the VM stops (allowed), or KubeVirt migrates or evacuates it on eviction
  kMigrate,  // do not evict: the operator live-migrates the VM (its pod then ends by itself)
  kHold,     // do not evict: the VM would stop, or KubeVirt refuses for good
};

// "Evict", "Migrate", "Hold".
[[nodiscard]] std::string_view to_string(VmAction action) noexcept;

struct VmVerdict {
  VmAction action = VmAction::kEvict;
  OnEviction on_eviction = OnEviction::kShutsDown;
  // "VMShutsDown" (evicted, allowed), "MigratingVM" (KubeVirt migrates it on eviction, an
  // External evacuation, or the operator migrates it), "VMWouldShutDown" (held),
  // "VMNotMigratable" (held: KubeVirt refuses).
  std::string reason;
  std::string detail;  // one line for humans, naming the VMI and why
  // kHold, kMigrate: the pod's reason in status.pendingPodsRefs (kVmWouldShutDown,
  // kVmNotMigratable; kMigratingVm).
  PendingPodReason held_as = PendingPodReason::kVmWouldShutDown;

  friend bool operator==(const VmVerdict&, const VmVerdict&) = default;
};

// The drain's verdict for the pod of `vmi` (see the file comment).
[[nodiscard]] VmVerdict decide_vm(const Vmi& vmi,
                                  const std::optional<std::string>& cluster_strategy,
                                  VmEvictionPolicy policy);

// What a 429 from KubeVirt's pod-eviction webhook says, from its message.
enum class KubeVirtRefusal {
  kEvacuationStarted,     // "Eviction triggered evacuation of VMI ..."
  kEvacuationInProgress,  // "Evacuation in progress: ..."
  kNotLiveMigratable,     // "VMI ... is configured with an eviction strategy but is not
                          // live-migratable": waiting never resolves it
  kOther,                 // not one of KubeVirt's texts
};

[[nodiscard]] KubeVirtRefusal classify_kubevirt_refusal(std::string_view message) noexcept;

// ---- The operator's live migrations ----

// The label on every VirtualMachineInstanceMigration the operator creates: its maintenance's uid.
inline constexpr std::string_view kMigrationOwnerLabel =
    "nodemaintenance.medik8s.io/maintenance-uid";
// And its attempt (1 for the first migration of a VMI, 2 after one failed, ...).
inline constexpr std::string_view kMigrationAttemptLabel = "nodemaintenance.medik8s.io/attempt";
// At most this many of one maintenance's migrations run at once: KubeVirt's own default for the
// outbound migrations of one node (parallelOutboundMigrationsPerNode).
inline constexpr int kMaxMigrationsPerMaintenance = 2;

// What the drain needs of one kubevirt.io/v1 VirtualMachineInstanceMigration.
struct Migration {
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  std::string vmi_name;  // spec.vmiName
  int attempt = 0;       // kMigrationAttemptLabel; 0 when absent or not a number
  std::string phase;     // status.phase verbatim; "" until KubeVirt sets one
  // Why it failed: status.migrationState.failureReason, else the message of a condition; "".
  std::string failure;

  [[nodiscard]] bool succeeded() const { return phase == "Succeeded"; }
  [[nodiscard]] bool failed() const { return phase == "Failed"; }
  [[nodiscard]] bool finished() const { return succeeded() || failed(); }

  friend bool operator==(const Migration&, const Migration&) = default;
};

// Decodes a VirtualMachineInstanceMigration (`kind`, when present, must be
// "VirtualMachineInstanceMigration"). Errors are ErrorCode::kInvalid naming the field.
[[nodiscard]] Result<Migration> decode_migration(const boost::json::value& object);

// The name of the operator's `attempt`th migration (from 1) of VMI `vmi` for the maintenance of
// uid `maintenance_uid`: "<vmi>-maintenance-<first 8 of the uid>-<attempt>", the VMI's name cut
// so that the whole stays a DNS label (63 characters).
[[nodiscard]] std::string migration_name(std::string_view vmi, std::string_view maintenance_uid,
                                         int attempt);

// The migration to create: `name` of VMI `vmi` in `namespace_`, labelled with the maintenance's
// uid and `attempt`, and owned by the maintenance (`maintenance` and `maintenance_uid`).
[[nodiscard]] boost::json::value migration_manifest(std::string_view namespace_,
                                                    std::string_view name, std::string_view vmi,
                                                    int attempt, std::string_view maintenance,
                                                    std::string_view maintenance_uid);

// The pause before the attempt after `failures` failed migrations (from 1): 5 s, doubling, at
// most 5 minutes.
[[nodiscard]] std::chrono::seconds migration_retry_delay(int failures) noexcept;

// ---- The KubeVirt objects as the shared informer cache keeps them (runtime/cache.h) ----

// How the shared informer of every VirtualMachineInstance is named in errors; the NodeMaintenance
// and MaintenancePlan controllers that read it declare it under this one name.
inline constexpr std::string_view kVmiCache = "the VirtualMachineInstance cache";

// A VirtualMachineInstance with its metadata.
struct VmiObject {
  kube::ObjectMeta meta;
  Vmi vmi;
};
// One of the operator's VirtualMachineInstanceMigrations with its metadata.
struct MigrationObject {
  kube::ObjectMeta meta;
  Migration migration;
};
// The KubeVirt CR: what the drain reads of it.
struct KubeVirtConfig {
  kube::ObjectMeta meta;
  std::optional<std::string> eviction_strategy;  // spec.configuration.evictionStrategy
};

}  // namespace nmo::op

// The two KubeVirt kinds as resources of the generic client (kube/api/resource.h): typed get,
// list_all and their paths.
namespace nmo::kube {

template <>
struct ResourceInfo<op::Vmi> {
  static constexpr std::string_view kGroup = op::kKubeVirtGroup;
  static constexpr std::string_view kVersion = op::kKubeVirtVersion;
  static constexpr std::string_view kPlural = "virtualmachineinstances";
  static constexpr std::string_view kKind = "VirtualMachineInstance";
  static constexpr bool kNamespaced = true;
  // op::decode_vmi().
  static Result<op::Vmi> decode(const boost::json::value& object) { return op::decode_vmi(object); }
};

template <>
struct ResourceInfo<op::Migration> {
  static constexpr std::string_view kGroup = op::kKubeVirtGroup;
  static constexpr std::string_view kVersion = op::kKubeVirtVersion;
  static constexpr std::string_view kPlural = "virtualmachineinstancemigrations";
  static constexpr std::string_view kKind = "VirtualMachineInstanceMigration";
  static constexpr bool kNamespaced = true;
  // op::decode_migration().
  static Result<op::Migration> decode(const boost::json::value& object) {
    return op::decode_migration(object);
  }
};

// The cached forms above: the same resources, decoded with their metadata.
template <>
struct ResourceInfo<op::VmiObject> : ResourceInfo<op::Vmi> {
  static Result<op::VmiObject> decode(const boost::json::value& object) {
    NMO_TRY_ASSIGN(ObjectMeta meta, decode_meta(object));
    NMO_TRY_ASSIGN(op::Vmi vmi, op::decode_vmi(object));
    return op::VmiObject{.meta = std::move(meta), .vmi = std::move(vmi)};
  }
};

template <>
struct ResourceInfo<op::MigrationObject> : ResourceInfo<op::Migration> {
  static Result<op::MigrationObject> decode(const boost::json::value& object) {
    NMO_TRY_ASSIGN(ObjectMeta meta, decode_meta(object));
    NMO_TRY_ASSIGN(op::Migration migration, op::decode_migration(object));
    return op::MigrationObject{.meta = std::move(meta), .migration = std::move(migration)};
  }
};

template <>
struct ResourceInfo<op::KubeVirtConfig> {
  static constexpr std::string_view kGroup = op::kKubeVirtGroup;
  static constexpr std::string_view kVersion = op::kKubeVirtVersion;
  static constexpr std::string_view kPlural = "kubevirts";
  static constexpr std::string_view kKind = "KubeVirt";
  static constexpr bool kNamespaced = true;
  static Result<op::KubeVirtConfig> decode(const boost::json::value& object) {
    NMO_TRY_ASSIGN(ObjectMeta meta, decode_meta(object));
    return op::KubeVirtConfig{.meta = std::move(meta),
                              .eviction_strategy = op::kubevirt_eviction_strategy(object)};
  }
};

}  // namespace nmo::kube
