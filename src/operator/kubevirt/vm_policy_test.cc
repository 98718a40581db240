#include "operator/kubevirt/vm_policy.h"

#include <optional>
#include <string>
#include <tuple>

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace nmo::op {
namespace {

namespace json = boost::json;

Vmi vmi(std::optional<std::string> strategy, std::optional<bool> migratable) {
  return Vmi{.namespace_ = "shop",
             .name = "vm-order-processing",
             .uid = "u1",
             .eviction_strategy = std::move(strategy),
             .live_migratable = migratable,
             .not_migratable_because =
                 migratable.value_or(true) ? "" : "cannot migrate VMI: PVC disk is not shared",
             .node_name = "worker-03",
             .evacuation_node_name = "",
             .phase = "Running",
             .migrating = false};
}

TEST(VirtLauncherTest, LabelAndVmiName) {
  kube::Pod pod;
  EXPECT_FALSE(is_virt_launcher(pod));
  EXPECT_EQ(vmi_name(pod), "");
  pod.meta.labels.set("kubevirt.io", "virt-launcher");
  pod.meta.labels.set("vm.kubevirt.io/name", "from-label");
  EXPECT_TRUE(is_virt_launcher(pod));
  EXPECT_EQ(vmi_name(pod), "from-label");
  pod.meta.annotations.set("kubevirt.io/domain", "from-annotation");
  EXPECT_EQ(vmi_name(pod), "from-annotation");
  pod.meta.labels.set("kubevirt.io", "virt-handler");
  EXPECT_FALSE(is_virt_launcher(pod));
}

TEST(KubeVirtApiTest, OneGroupVersionForEveryPath) {
  EXPECT_EQ(kubevirt_api_root(), "/apis/kubevirt.io/v1");
  EXPECT_EQ(kube::api_version<Migration>(), kKubeVirtApiVersion);
  EXPECT_EQ(kube::object_path<Vmi>("shop", "db"),
            "/apis/kubevirt.io/v1/namespaces/shop/virtualmachineinstances/db");
  EXPECT_EQ(kube::collection_path<KubeVirtConfig>(), "/apis/kubevirt.io/v1/kubevirts");
}

TEST(DecodeVmiTest, ReadsStrategyMigratabilityAndNodes) {
  const auto decoded = decode_vmi(json::parse(R"({
    "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
    "metadata": {"name": "vm-a", "namespace": "shop", "uid": "u1"},
    "spec": {"evictionStrategy": "LiveMigrate", "domain": {"devices": {}}},
    "status": {"nodeName": "worker-03", "evacuationNodeName": "worker-03",
               "conditions": [
                 {"type": "Ready", "status": "True"},
                 {"type": "LiveMigratable", "status": "False", "reason": "DisksNotLiveMigratable",
                  "message": "cannot migrate VMI: PVC disk is not shared"}]}})"));
  ASSERT_TRUE(decoded) << decoded.error().describe();
  EXPECT_EQ(decoded->namespace_, "shop");
  EXPECT_EQ(decoded->name, "vm-a");
  EXPECT_EQ(decoded->uid, "u1");
  EXPECT_EQ(decoded->eviction_strategy, "LiveMigrate");
  EXPECT_EQ(decoded->live_migratable, false);
  EXPECT_EQ(decoded->not_migratable_because, "cannot migrate VMI: PVC disk is not shared");
  EXPECT_EQ(decoded->node_name, "worker-03");
  EXPECT_EQ(decoded->evacuation_node_name, "worker-03");
  EXPECT_EQ(decoded->phase, "");
  EXPECT_FALSE(decoded->migrating);
}

TEST(DecodeVmiTest, ReadsThePhaseAndWhetherAMigrationIsUnderWay) {
  const auto migrating = decode_vmi(json::parse(R"({"metadata": {"name": "vm-a"},
    "status": {"phase": "Running", "migrationState": {"targetNode": "worker-02",
               "startTimestamp": "2026-12-06T10:00:00Z"}}})"));
  ASSERT_TRUE(migrating) << migrating.error().describe();
  EXPECT_EQ(migrating->phase, "Running");
  EXPECT_TRUE(migrating->migrating);
  for (const char* state : {R"({"completed": true})", R"({"failed": true, "completed": true})",
                            R"({"failed": true})"}) {
    const auto settled = decode_vmi(
        json::parse(std::string(R"({"metadata": {"name": "vm-a"}, "status": {"migrationState": )") +
                    state + "}}"));
    ASSERT_TRUE(settled) << settled.error().describe();
    EXPECT_FALSE(settled->migrating) << state;
  }
  EXPECT_EQ(decode_vmi(json::parse(R"({"metadata": {"name": "x"},
                                       "status": {"migrationState": {"completed": "yes"}}})"))
                .error()
                .message,
            "status.migrationState.completed: expected a bool, got string");
}

TEST(DecodeVmiTest, AbsentFieldsAreUnsetAndAReasonStandsInForAMissingMessage) {
  auto decoded = decode_vmi(json::parse(R"({"metadata": {"name": "vm-a", "namespace": "shop"}})"));
  ASSERT_TRUE(decoded) << decoded.error().describe();
  EXPECT_EQ(decoded->eviction_strategy, std::nullopt);
  EXPECT_EQ(decoded->live_migratable, std::nullopt);
  EXPECT_EQ(decoded->node_name, "");

  decoded = decode_vmi(json::parse(R"({"metadata": {"name": "vm-a"}, "status": {"conditions": [
      {"type": "LiveMigratable", "status": "False", "reason": "HostDeviceNotLiveMigratable"}]}})"));
  ASSERT_TRUE(decoded) << decoded.error().describe();
  EXPECT_EQ(decoded->not_migratable_because, "HostDeviceNotLiveMigratable");

  decoded = decode_vmi(json::parse(R"({"metadata": {"name": "vm-a"}, "status": {"conditions": [
      {"type": "LiveMigratable", "status": "True", "reason": "Migratable"}]}})"));
  ASSERT_TRUE(decoded) << decoded.error().describe();
  EXPECT_EQ(decoded->live_migratable, true);
  EXPECT_EQ(decoded->not_migratable_because, "");
}

TEST(DecodeVmiTest, BadInputNamesTheField) {
  EXPECT_EQ(
      decode_vmi(json::parse(R"({"kind": "Pod", "metadata": {"name": "x"}})")).error().message,
      R"(expected kind "VirtualMachineInstance", got "Pod")");
  EXPECT_EQ(
      decode_vmi(json::parse(R"({"metadata": {"name": "x"}, "spec": {"evictionStrategy": 1}})"))
          .error()
          .message,
      "spec.evictionStrategy: expected a string, got number");
  EXPECT_EQ(decode_vmi(json::parse(R"({"metadata": {"name": "x"}, "status": {"conditions": [7]}})"))
                .error()
                .message,
            "status.conditions[0]: expected an object, got number");
  EXPECT_FALSE(decode_vmi(json::parse("[]")));
}

TEST(ClusterEvictionStrategyTest, FromTheKubeVirtCrInTheList) {
  EXPECT_EQ(cluster_eviction_strategy(json::parse(R"({"kind": "KubeVirtList", "items": [
      {"kind": "KubeVirt", "spec": {"configuration": {"evictionStrategy": "LiveMigrate"}}}]})")),
            "LiveMigrate");
  EXPECT_EQ(
      cluster_eviction_strategy(json::parse(R"({"items": [{"spec": {"configuration": {}}}]})")),
      std::nullopt);
  EXPECT_EQ(
      cluster_eviction_strategy(json::parse(R"({"items": [{"spec": {"configuration": 3}}]})")),
      std::nullopt);
  EXPECT_EQ(cluster_eviction_strategy(json::parse(R"({"items": []})")), std::nullopt);
  EXPECT_EQ(cluster_eviction_strategy(json::parse(R"({"items": 5})")), std::nullopt);
  EXPECT_EQ(cluster_eviction_strategy(json::parse("null")), std::nullopt);
}

TEST(EffectiveEvictionStrategyTest, TheVmiFirstThenTheCluster) {
  EXPECT_EQ(effective_eviction_strategy(vmi("None", true), "LiveMigrate"), "None");
  EXPECT_EQ(effective_eviction_strategy(vmi(std::nullopt, true), "LiveMigrate"), "LiveMigrate");
  EXPECT_EQ(effective_eviction_strategy(vmi(std::nullopt, true), std::nullopt), std::nullopt);
}

// KubeVirt's pod-eviction webhook, case by case (docs/design.md §2.9).
TEST(KubeVirtOnEvictionTest, EveryStrategyMigratableOrNot) {
  using Case = std::tuple<std::optional<std::string>, std::optional<bool>, OnEviction>;
  const Case cases[] = {
      {std::nullopt, true, OnEviction::kShutsDown},
      {std::nullopt, false, OnEviction::kShutsDown},
      {"None", true, OnEviction::kShutsDown},
      {"None", false, OnEviction::kShutsDown},
      {"LiveMigrate", true, OnEviction::kMigrates},
      {"LiveMigrate", false, OnEviction::kRefusesForGood},
      {"LiveMigrate", std::nullopt, OnEviction::kRefusesForGood},
      {"LiveMigrateIfPossible", true, OnEviction::kMigrates},
      {"LiveMigrateIfPossible", false, OnEviction::kShutsDown},
      {"LiveMigrateIfPossible", std::nullopt, OnEviction::kShutsDown},
      {"External", false, OnEviction::kEvacuates},
      {"SomethingNew", true, OnEviction::kShutsDown},
  };
  for (const auto& [strategy, migratable, expected] : cases) {
    SCOPED_TRACE(strategy.value_or("(none)") + " " +
                 (migratable ? (*migratable ? "migratable" : "not migratable") : "(no condition)"));
    EXPECT_EQ(kubevirt_on_eviction(vmi(strategy, migratable), std::nullopt), expected);
    EXPECT_EQ(kubevirt_on_eviction(vmi(std::nullopt, migratable), strategy), expected);
  }
  EXPECT_EQ(to_string(OnEviction::kRefusesForGood), "RefusesForGood");
}

TEST(DecideVmTest, TheStorysVmWithoutAStrategyIsLiveMigratedByTheOperatorNotShutDown) {
  const VmVerdict verdict =
      decide_vm(vmi(std::nullopt, true), std::nullopt, VmEvictionPolicy::kLiveMigrate);
  EXPECT_EQ(verdict.action, VmAction::kMigrate);
  EXPECT_EQ(verdict.on_eviction, OnEviction::kShutsDown);
  EXPECT_EQ(verdict.reason, "MigratingVM");
  EXPECT_EQ(verdict.held_as, PendingPodReason::kMigratingVm);
  EXPECT_EQ(verdict.detail,
            "VMI shop/vm-order-processing has no eviction strategy, so evicting its pod would "
            "shut it down: the operator live-migrates it instead");
  EXPECT_EQ(to_string(VmAction::kMigrate), "Migrate");
  // The same with a strategy that lets the eviction pass.
  EXPECT_EQ(decide_vm(vmi("None", true), std::nullopt, VmEvictionPolicy::kLiveMigrate).action,
            VmAction::kMigrate);
}

TEST(DecideVmTest, AVmThatCannotMigrateIsHeldUnlessShutdownIsAllowed) {
  const VmVerdict held =
      decide_vm(vmi("None", false), std::nullopt, VmEvictionPolicy::kLiveMigrate);
  EXPECT_EQ(held.action, VmAction::kHold);
  EXPECT_EQ(held.reason, "VMWouldShutDown");
  EXPECT_EQ(held.detail,
            "VMI shop/vm-order-processing cannot live-migrate: cannot migrate VMI: PVC disk is not "
            "shared and has eviction strategy None: evicting its pod would shut it down; set "
            "vmEvictionPolicy AllowShutdown on the maintenance to allow that");

  const VmVerdict allowed =
      decide_vm(vmi("None", false), std::nullopt, VmEvictionPolicy::kAllowShutdown);
  EXPECT_EQ(allowed.action, VmAction::kEvict);
  EXPECT_EQ(allowed.reason, "VMShutsDown");
  EXPECT_EQ(allowed.detail,
            "VMI shop/vm-order-processing has eviction strategy None: its eviction shuts the VM "
            "down, which this maintenance allows (vmEvictionPolicy AllowShutdown)");

  // A VMI without the condition counts as not migratable, as KubeVirt counts it.
  const VmVerdict unknown =
      decide_vm(vmi(std::nullopt, std::nullopt), std::nullopt, VmEvictionPolicy::kLiveMigrate);
  EXPECT_EQ(unknown.action, VmAction::kHold);
  EXPECT_EQ(unknown.reason, "VMWouldShutDown");
  EXPECT_NE(unknown.detail.find("(it reports no LiveMigratable condition)"), std::string::npos);

  // Allowing shutdown never stops a VM that would migrate anyway.
  EXPECT_EQ(
      decide_vm(vmi(std::nullopt, true), std::nullopt, VmEvictionPolicy::kAllowShutdown).reason,
      "VMShutsDown");
  EXPECT_EQ(
      decide_vm(vmi("LiveMigrate", true), std::nullopt, VmEvictionPolicy::kAllowShutdown).reason,
      "MigratingVM");
}

TEST(DecideVmTest, KubeVirtMigratesOnEvictionOrRefusesForGood) {
  for (const VmEvictionPolicy policy :
       {VmEvictionPolicy::kLiveMigrate, VmEvictionPolicy::kAllowShutdown}) {
    const VmVerdict migrates = decide_vm(vmi(std::nullopt, true), "LiveMigrate", policy);
    EXPECT_EQ(migrates.action, VmAction::kEvict);
    EXPECT_EQ(migrates.on_eviction, OnEviction::kMigrates);
    EXPECT_EQ(migrates.reason, "MigratingVM");
    EXPECT_EQ(migrates.detail,
              "VMI shop/vm-order-processing has eviction strategy LiveMigrate: KubeVirt "
              "live-migrates it when its pod is evicted");

    const VmVerdict refused = decide_vm(vmi("LiveMigrate", false), std::nullopt, policy);
    EXPECT_EQ(refused.action, VmAction::kHold);
    EXPECT_EQ(refused.reason, "VMNotMigratable");
    EXPECT_EQ(refused.held_as, PendingPodReason::kVmNotMigratable);
    EXPECT_EQ(refused.detail,
              "VMI shop/vm-order-processing has eviction strategy LiveMigrate but cannot "
              "live-migrate: cannot migrate VMI: PVC disk is not shared: KubeVirt refuses every "
              "eviction of its pod until the VM can migrate or its strategy changes");

    const VmVerdict external = decide_vm(vmi("External", false), std::nullopt, policy);
    EXPECT_EQ(external.action, VmAction::kEvict);
    EXPECT_EQ(external.reason, "MigratingVM");
  }
  const VmVerdict if_possible =
      decide_vm(vmi("LiveMigrateIfPossible", false), std::nullopt, VmEvictionPolicy::kLiveMigrate);
  EXPECT_EQ(if_possible.action, VmAction::kHold);
  EXPECT_EQ(if_possible.reason, "VMWouldShutDown");
  EXPECT_EQ(to_string(VmAction::kHold), "Hold");
}

TEST(DecodeMigrationTest, PhaseAndWhyItFailed) {
  const auto running = decode_migration(json::parse(R"({
    "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
    "metadata": {"namespace": "shop", "name": "m1"},
    "spec": {"vmiName": "vm-order-processing"},
    "status": {"phase": "Running"}})"));
  ASSERT_TRUE(running) << running.error().describe();
  EXPECT_EQ(*running, (Migration{.namespace_ = "shop",
                                 .name = "m1",
                                 .vmi_name = "vm-order-processing",
                                 .attempt = 0,
                                 .phase = "Running",
                                 .failure = ""}));
  EXPECT_FALSE(running->finished());

  const auto failed = decode_migration(json::parse(R"({
    "metadata": {"namespace": "shop", "name": "m2"}, "spec": {"vmiName": "vm"},
    "status": {"phase": "Failed", "migrationState": {"failureReason": "target pod unschedulable"},
      "conditions": [{"type": "Failed", "status": "True", "message": "other"}]}})"));
  ASSERT_TRUE(failed);
  EXPECT_TRUE(failed->failed());
  EXPECT_TRUE(failed->finished());
  EXPECT_EQ(failed->failure, "target pod unschedulable");

  // Without a failureReason, the last condition message says why.
  const auto by_condition = decode_migration(json::parse(R"({
    "metadata": {"namespace": "shop", "name": "m3"}, "spec": {"vmiName": "vm"},
    "status": {"phase": "Failed", "conditions": [{"type": "A", "message": "first"},
      {"type": "B", "message": "second"}, {"type": "C"}]}})"));
  ASSERT_TRUE(by_condition);
  EXPECT_EQ(by_condition->failure, "second");

  // Not started yet: no phase.
  const auto fresh = decode_migration(json::parse(
      R"({"metadata": {"namespace": "shop", "name": "m4"}, "spec": {"vmiName": "vm"}})"));
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->phase, "");
  EXPECT_FALSE(fresh->finished());

  const auto wrong =
      decode_migration(json::parse(R"({"metadata": {"name": "m"}, "spec": {"vmiName": 5}})"));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("spec.vmiName"), std::string::npos) << wrong.error().message;
  EXPECT_FALSE(decode_migration(json::parse(R"({"kind": "Pod", "metadata": {"name": "m"}})")));
}

TEST(MigrationNameTest, VmiMaintenanceAndAttemptInOneDnsLabel) {
  EXPECT_EQ(migration_name("vm-order-processing", "0123456789abcdef", 1),
            "vm-order-processing-maintenance-01234567-1");
  const std::string long_vmi(80, 'v');
  const std::string name = migration_name(long_vmi + "-x", "0123456789abcdef", 12);
  EXPECT_EQ(name.size(), 63U);
  EXPECT_EQ(name, std::string(39, 'v') + "-maintenance-01234567-12");
  // The cut never leaves a dash or a dot before the suffix.
  EXPECT_EQ(migration_name(std::string(37, 'v') + ".-y", "0123456789abcdef", 12),
            std::string(37, 'v') + "-maintenance-01234567-12");
}

TEST(MigrationManifestTest, LabelledAndOwnedByTheMaintenance) {
  const json::value manifest =
      migration_manifest("shop", "m1", "vm-order-processing", 3, "maintenance-w3", "uid-1");
  EXPECT_EQ(manifest, json::parse(R"({
    "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
    "metadata": {"name": "m1", "namespace": "shop",
      "labels": {"nodemaintenance.medik8s.io/maintenance-uid": "uid-1",
        "nodemaintenance.medik8s.io/attempt": "3"},
      "ownerReferences": [{"apiVersion": "nodemaintenance.medik8s.io/v1beta1",
        "kind": "NodeMaintenance", "name": "maintenance-w3", "uid": "uid-1"}]},
    "spec": {"vmiName": "vm-order-processing"}})"));
  // And it reads back as what it asks for.
  const auto decoded = decode_migration(manifest);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->vmi_name, "vm-order-processing");
  EXPECT_EQ(decoded->attempt, 3);
}

TEST(MigrationRetryDelayTest, DoublesFromFiveSecondsToFiveMinutes) {
  EXPECT_EQ(migration_retry_delay(0), std::chrono::seconds(5));
  EXPECT_EQ(migration_retry_delay(1), std::chrono::seconds(5));
  EXPECT_EQ(migration_retry_delay(2), std::chrono::seconds(10));
  EXPECT_EQ(migration_retry_delay(3), std::chrono::seconds(20));
  EXPECT_EQ(migration_retry_delay(7), std::chrono::seconds(300));
  EXPECT_EQ(migration_retry_delay(1000), std::chrono::seconds(300));
}

TEST(ClassifyKubeVirtRefusalTest, KubeVirtsTexts) {
  EXPECT_EQ(
      classify_kubevirt_refusal(
          R"(admission webhook "virt-launcher-eviction-interceptor.kubevirt.io" denied the request: Eviction triggered evacuation of VMI "shop/vm-a")"),
      KubeVirtRefusal::kEvacuationStarted);
  EXPECT_EQ(classify_kubevirt_refusal(
                R"(Evacuation in progress: Eviction triggered evacuation of VMI "shop/vm-a")"),
            KubeVirtRefusal::kEvacuationInProgress);
  EXPECT_EQ(classify_kubevirt_refusal(
                "admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied the "
                "request: VMI vm-a is configured with an eviction strategy but is not "
                "live-migratable"),
            KubeVirtRefusal::kNotLiveMigratable);
  EXPECT_EQ(classify_kubevirt_refusal("the webhook is busy"), KubeVirtRefusal::kOther);
}

}  // namespace
}  // namespace nmo::op
