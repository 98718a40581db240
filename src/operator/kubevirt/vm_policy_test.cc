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
             .evacuation_node_name = ""};
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

TEST(ClusterEvictionStrategyTest, FromTheKubeVirtCr) {
  EXPECT_EQ(
      cluster_eviction_strategy(json::parse(
          R"({"kind": "KubeVirt", "spec": {"configuration": {"evictionStrategy": "LiveMigrate"}}})")),
      "LiveMigrate");
  EXPECT_EQ(cluster_eviction_strategy(json::parse(R"({"spec": {"configuration": {}}})")),
            std::nullopt);
  EXPECT_EQ(cluster_eviction_strategy(json::parse(R"({"spec": {"configuration": 3}})")),
            std::nullopt);
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

TEST(DecideVmTest, TheStorysVmWithoutAStrategyIsHeldNotShutDown) {
  const VmVerdict verdict =
      decide_vm(vmi(std::nullopt, true), std::nullopt, VmEvictionPolicy::kLiveMigrate);
  EXPECT_EQ(verdict.action, VmAction::kHold);
  EXPECT_EQ(verdict.on_eviction, OnEviction::kShutsDown);
  EXPECT_EQ(verdict.reason, "VMWouldShutDown");
  EXPECT_EQ(verdict.held_as, PendingPodReason::kVmWouldShutDown);
  EXPECT_EQ(verdict.detail,
            "VMI shop/vm-order-processing has no eviction strategy, so evicting its pod would "
            "shut it down: live-migrate it (virtctl migrate vm-order-processing), or set "
            "vmEvictionPolicy AllowShutdown on the maintenance");
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
