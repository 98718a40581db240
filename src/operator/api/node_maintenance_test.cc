#include "operator/api/node_maintenance.h"

#include <chrono>
#include <string>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/api/list.h"

namespace nmo::op {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::year;

const kube::Time kDay = sys_days{year{2026} / 11 / 30};

// The CR of docs/design.md §8 (S1), as the API server returns it before the operator has seen it.
constexpr const char* kStoryObject = R"json({
  "apiVersion": "nodemaintenance.medik8s.io/v1beta1",
  "kind": "NodeMaintenance",
  "metadata": {"creationTimestamp": "2026-11-30T10:00:00Z", "generation": 1,
               "name": "maintenance-worker-01", "resourceVersion": "812",
               "uid": "0c6f2a0e-8d7e-4f4f-9a51-2f1d9b7c3e11"},
  "spec": {"nodeName": "node-worker-01",
           "reason": "Hardware memory upgrade - scheduled maintenance window"}
})json";

// A CR in the middle of its drain (docs/design.md §8, S1), with every field set.
constexpr const char* kRunningObject = R"json({
  "apiVersion": "nodemaintenance.medik8s.io/v1beta1",
  "kind": "NodeMaintenance",
  "metadata": {"name": "maintenance-worker-01", "finalizers": ["foregroundDeleteNodeMaintenance"]},
  "spec": {"nodeName": "node-worker-01", "reason": "memory", "drainTimeout": "1h30m",
           "gracePeriodSeconds": 30},
  "status": {
    "phase": "Running",
    "totalPods": 8,
    "evictionPods": 6,
    "pendingPods": ["order-processing-vm-launcher", "db-0"],
    "pendingPodsRefs": [
      {"namespace": "kubevirt-system", "name": "order-processing-vm-launcher",
       "reason": "BlockedByPDB",
       "message": "PDB kubevirt-system/vm-order-processing-pdb: 0 disruptions allowed (1 healthy, 1 desired)"},
      {"namespace": "db", "name": "db-0", "reason": "WaitingForTermination",
       "message": "terminating for 40s"}
    ],
    "drainProgress": 75,
    "totalpods": 11,
    "lastError": "Cannot evict pod as it would violate the pod's disruption budget.",
    "lastUpdate": "2026-11-30T10:05:00Z",
    "errorOnLeaseCount": 0,
    "conditions": [
      {"type": "Cordoned", "status": "True", "observedGeneration": 1,
       "lastTransitionTime": "2026-11-30T10:01:00Z", "reason": "NodeCordoned",
       "message": "node-worker-01 cordoned and tainted"},
      {"type": "Blocked", "status": "True", "lastTransitionTime": "2026-11-30T10:02:00Z",
       "reason": "BlockedByPDB", "message": ""}
    ]
  }
})json";

Result<NodeMaintenance> decode(const char* text) {
  return decode_node_maintenance(boost::json::parse(text));
}

std::string decode_error(const char* text) {
  const Result<NodeMaintenance> result = decode(text);
  if (result.has_value()) {
    return "(decoded)";
  }
  EXPECT_EQ(result.error().code, ErrorCode::kInvalid);
  return result.error().message;
}

// ---- enums -----------------------------------------------------------------------------------

TEST(PhaseTest, RoundTripsEveryName) {
  for (const Phase phase : {Phase::kPending, Phase::kRunning, Phase::kSucceeded, Phase::kFailed}) {
    ASSERT_OK_AND_ASSIGN(const Phase parsed, parse_phase(to_string(phase)));
    EXPECT_EQ(parsed, phase);
  }
  EXPECT_EQ(to_string(Phase::kSucceeded), "Succeeded");
}

TEST(PhaseTest, RejectsUnknownAndWrongCase) {
  const Result<Phase> lower = parse_phase("running");
  ASSERT_FALSE(lower.has_value());
  EXPECT_EQ(lower.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(lower.error().message,
            "unknown phase \"running\" (expected Pending, Running, Succeeded or Failed)");
  EXPECT_FALSE(parse_phase("").has_value());
}

TEST(PendingPodReasonTest, RoundTripsTheTenApiSpellings) {
  const std::vector<std::pair<PendingPodReason, std::string>> expected = {
      {PendingPodReason::kEvicting, "Evicting"},
      {PendingPodReason::kWaitingForTermination, "WaitingForTermination"},
      {PendingPodReason::kBlockedByPdb, "BlockedByPDB"},
      {PendingPodReason::kMultiplePdbs, "MultiplePDBs"},
      {PendingPodReason::kEvictionDeferred, "EvictionDeferred"},
      {PendingPodReason::kNamespaceTerminating, "NamespaceTerminating"},
      {PendingPodReason::kError, "Error"},
      {PendingPodReason::kMigratingVm, "MigratingVM"},
      {PendingPodReason::kVmWouldShutDown, "VMWouldShutDown"},
      {PendingPodReason::kVmNotMigratable, "VMNotMigratable"},
      {PendingPodReason::kHeld, "Held"},
  };
  for (const auto& [reason, name] : expected) {
    EXPECT_EQ(to_string(reason), name);
    ASSERT_OK_AND_ASSIGN(const PendingPodReason parsed, parse_pending_pod_reason(name));
    EXPECT_EQ(parsed, reason);
  }
  const Result<PendingPodReason> bad = parse_pending_pod_reason("BlockedByPdb");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message,
            "unknown pending pod reason \"BlockedByPdb\" (expected Evicting, "
            "WaitingForTermination, BlockedByPDB, MultiplePDBs, EvictionDeferred, "
            "NamespaceTerminating, Error, MigratingVM, VMWouldShutDown, VMNotMigratable or Held)");
}

// ---- decoding --------------------------------------------------------------------------------

TEST(DecodeNodeMaintenanceTest, UpstreamStyleObjectWithOnlyNodeNameAndReason) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode(kStoryObject));
  EXPECT_EQ(nm.meta.name, "maintenance-worker-01");
  EXPECT_EQ(nm.meta.namespace_, "");
  EXPECT_EQ(nm.meta.creation_timestamp, kDay + hours{10});
  EXPECT_EQ(nm.spec.node_name, "node-worker-01");
  EXPECT_EQ(nm.spec.reason, "Hardware memory upgrade - scheduled maintenance window");
  EXPECT_EQ(nm.spec.drain_timeout, std::nullopt);
  EXPECT_EQ(nm.spec.drain_timeout_text, "");
  EXPECT_EQ(nm.spec.grace_period_seconds, std::nullopt);
  EXPECT_EQ(nm.spec.validation_error(), "");
  EXPECT_EQ(nm.status, NodeMaintenanceStatus{});
  EXPECT_EQ(nm.status.phase, std::nullopt);
}

TEST(DecodeNodeMaintenanceTest, EveryField) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode(kRunningObject));
  EXPECT_EQ(nm.meta.finalizers, std::vector<std::string>{std::string(kFinalizer)});
  EXPECT_EQ(nm.spec.drain_timeout, minutes{90});
  EXPECT_EQ(nm.spec.drain_timeout_text, "1h30m");
  EXPECT_EQ(nm.spec.grace_period_seconds, 30);
  EXPECT_EQ(nm.spec.validation_error(), "");

  const NodeMaintenanceStatus& s = nm.status;
  EXPECT_EQ(s.phase, Phase::kRunning);
  EXPECT_EQ(s.total_pods, 8);
  EXPECT_EQ(s.eviction_pods, 6);
  EXPECT_EQ(s.pending_pods, (std::vector<std::string>{"order-processing-vm-launcher", "db-0"}));
  ASSERT_EQ(s.pending_pods_refs.size(), 2U);
  EXPECT_EQ(s.pending_pods_refs[0],
            (PendingPodRef{"kubevirt-system", "order-processing-vm-launcher",
                           PendingPodReason::kBlockedByPdb,
                           "PDB kubevirt-system/vm-order-processing-pdb: 0 disruptions allowed "
                           "(1 healthy, 1 desired)"}));
  EXPECT_EQ(s.pending_pods_refs[1].reason, PendingPodReason::kWaitingForTermination);
  EXPECT_EQ(s.drain_progress, 75);
  EXPECT_EQ(s.totalpods, 11);
  EXPECT_EQ(s.last_error, "Cannot evict pod as it would violate the pod's disruption budget.");
  EXPECT_EQ(s.last_update, kDay + hours{10} + minutes{5});
  EXPECT_EQ(s.error_on_lease_count, 0);
  ASSERT_EQ(s.conditions.size(), 2U);
  EXPECT_EQ(s.conditions[0],
            (Condition{"Cordoned", ConditionStatus::kTrue, 1, kDay + hours{10} + minutes{1},
                       "NodeCordoned", "node-worker-01 cordoned and tainted"}));
  EXPECT_EQ(s.conditions[1].observed_generation, 0);
  EXPECT_EQ(s.conditions[1].message, "");
}

// What medik8s NMO v0.21 writes: evictionPods/totalpods with its meanings, pendingPodsRefs
// without reasons, a negative drainProgress, no conditions, and fields we do not know.
TEST(DecodeNodeMaintenanceTest, StatusWrittenByUpstream) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode(R"json({
    "apiVersion": "nodemaintenance.medik8s.io/v1beta1", "kind": "NodeMaintenance",
    "metadata": {"name": "nodemaintenance-sample"},
    "spec": {"nodeName": "node02", "reason": "Test node maintenance", "futureField": {"a": 1}},
    "status": {"phase": "Running", "drainProgress": -50, "evictionPods": 2, "totalpods": 5,
               "pendingPods": ["a", "b", "c"],
               "pendingPodsRefs": [{"namespace": "ns", "name": "a"}, {"name": "b"}],
               "lastError": "error when evicting pods/\"a\" -n \"ns\": global timeout",
               "lastUpdate": "2025-01-02T03:04:05Z", "errorOnLeaseCount": 1,
               "somethingNew": [1, 2, 3]}
  })json"));
  EXPECT_EQ(nm.spec.node_name, "node02");
  EXPECT_EQ(nm.status.phase, Phase::kRunning);
  EXPECT_EQ(nm.status.drain_progress, -50);
  EXPECT_EQ(nm.status.eviction_pods, 2);
  EXPECT_EQ(nm.status.totalpods, 5);
  EXPECT_EQ(nm.status.total_pods, 0);
  EXPECT_EQ(nm.status.pending_pods.size(), 3U);
  ASSERT_EQ(nm.status.pending_pods_refs.size(), 2U);
  EXPECT_EQ(nm.status.pending_pods_refs[0], (PendingPodRef{"ns", "a", std::nullopt, ""}));
  EXPECT_EQ(nm.status.pending_pods_refs[1].namespace_, "");
  EXPECT_EQ(nm.status.error_on_lease_count, 1);
  EXPECT_TRUE(nm.status.conditions.empty());
}

TEST(DecodeNodeMaintenanceTest, NullsAndEmptyPhaseMeanUnset) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode(R"({
    "spec": {"nodeName": "n", "reason": null, "drainTimeout": null, "gracePeriodSeconds": null},
    "status": {"phase": "", "pendingPods": null, "lastUpdate": null, "conditions": null}})"));
  EXPECT_EQ(nm.spec.reason, "");
  EXPECT_EQ(nm.spec.drain_timeout, std::nullopt);
  EXPECT_EQ(nm.spec.drain_timeout_error, "");
  EXPECT_EQ(nm.spec.grace_period_seconds_error, "");
  EXPECT_EQ(nm.status, NodeMaintenanceStatus{});
}

TEST(DecodeNodeMaintenanceTest, ListItemWithoutKindAndAsListPage) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance item,
                       decode(R"({"metadata": {"name": "x"}, "spec": {"nodeName": "n"}})"));
  EXPECT_EQ(item.meta.name, "x");
  ASSERT_OK_AND_ASSIGN(const kube::ListPage<NodeMaintenance> page,
                       kube::decode_list<NodeMaintenance>(R"({
    "apiVersion": "nodemaintenance.medik8s.io/v1beta1", "kind": "NodeMaintenanceList",
    "metadata": {"resourceVersion": "42"},
    "items": [{"metadata": {"name": "a"}, "spec": {"nodeName": "n1"}},
              {"metadata": {"name": "b"}, "spec": {"nodeName": "n2"}}]})"));
  ASSERT_EQ(page.items.size(), 2U);
  EXPECT_EQ(page.items[1].spec.node_name, "n2");
}

TEST(DecodeNodeMaintenanceTest, MissingSpecLeavesAnEmptyNodeNameToValidate) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode(R"({"metadata": {"name": "x"}})"));
  EXPECT_EQ(nm.spec.node_name, "");
  EXPECT_EQ(nm.spec.validation_error(), "spec.nodeName: must not be empty");
}

// A bad drainTimeout must not hide the object from the controller (file comment).
TEST(DecodeNodeMaintenanceTest, MalformedDrainTimeoutDecodesWithAnError) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode(R"({
    "kind": "NodeMaintenance", "metadata": {"name": "x"},
    "spec": {"nodeName": "node-worker-01", "drainTimeout": "1d"},
    "status": {"phase": "Running"}})"));
  EXPECT_EQ(nm.spec.node_name, "node-worker-01");
  EXPECT_EQ(nm.spec.drain_timeout, std::nullopt);
  EXPECT_EQ(nm.spec.drain_timeout_text, "1d");
  EXPECT_EQ(nm.spec.drain_timeout_error,
            "spec.drainTimeout: invalid duration \"1d\": unknown unit \"d\" (use h, m, s, ms, us "
            "or ns)");
  EXPECT_EQ(nm.spec.validation_error(), nm.spec.drain_timeout_error);
  EXPECT_EQ(nm.status.phase, Phase::kRunning);
}

TEST(DecodeNodeMaintenanceTest, ZeroOrOverflowingDrainTimeoutIsAnError) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance zero,
                       decode(R"({"spec": {"nodeName": "n", "drainTimeout": "0s"}})"));
  EXPECT_EQ(zero.spec.drain_timeout, std::nullopt);
  EXPECT_EQ(zero.spec.drain_timeout_error,
            "spec.drainTimeout: must be longer than zero, got \"0s\"");
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance huge,
                       decode(R"({"spec": {"nodeName": "n", "drainTimeout": "3000000h"}})"));
  EXPECT_EQ(huge.spec.drain_timeout_error,
            "spec.drainTimeout: invalid duration \"3000000h\": out of range (the longest "
            "duration is 2562047h47m16.854775807s)");
}

TEST(DecodeNodeMaintenanceTest, WrongTypedDrainTimeoutDecodesWithAnError) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm,
                       decode(R"({"spec": {"nodeName": "n", "drainTimeout": 5400}})"));
  EXPECT_EQ(nm.spec.drain_timeout, std::nullopt);
  EXPECT_EQ(nm.spec.drain_timeout_text, "5400");
  EXPECT_EQ(nm.spec.drain_timeout_error,
            "spec.drainTimeout: expected a duration string like \"90m\", got number");
}

TEST(DecodeNodeMaintenanceTest, VmEvictionPolicy) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance unset, decode(R"({"spec": {"nodeName": "n"}})"));
  EXPECT_EQ(unset.spec.vm_eviction_policy, VmEvictionPolicy::kLiveMigrate);
  ASSERT_OK_AND_ASSIGN(
      const NodeMaintenance allow,
      decode(R"({"spec": {"nodeName": "n", "vmEvictionPolicy": "AllowShutdown"}})"));
  EXPECT_EQ(allow.spec.vm_eviction_policy, VmEvictionPolicy::kAllowShutdown);
  EXPECT_EQ(to_string(allow.spec.vm_eviction_policy), "AllowShutdown");
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance migrate,
                       decode(R"({"spec": {"nodeName": "n", "vmEvictionPolicy": "LiveMigrate"}})"));
  EXPECT_EQ(migrate.spec.vm_eviction_policy, VmEvictionPolicy::kLiveMigrate);
  EXPECT_EQ(migrate.spec.validation_error(), "");

  ASSERT_OK_AND_ASSIGN(
      const NodeMaintenance bad,
      decode(R"({"spec": {"nodeName": "n", "vmEvictionPolicy": "allowshutdown"}})"));
  EXPECT_EQ(bad.spec.vm_eviction_policy, VmEvictionPolicy::kLiveMigrate);
  EXPECT_EQ(bad.spec.validation_error(),
            "spec.vmEvictionPolicy: must be LiveMigrate or AllowShutdown, got \"allowshutdown\"");
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance number,
                       decode(R"({"spec": {"nodeName": "n", "vmEvictionPolicy": 1}})"));
  EXPECT_EQ(number.spec.vm_eviction_policy_error,
            "spec.vmEvictionPolicy: must be LiveMigrate or AllowShutdown, got \"1\"");
}

TEST(DecodeNodeMaintenanceTest, BadGracePeriodDecodesWithAnError) {
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance zero,
                       decode(R"({"spec": {"nodeName": "n", "gracePeriodSeconds": 0}})"));
  EXPECT_EQ(zero.spec.grace_period_seconds, std::nullopt);
  EXPECT_EQ(zero.spec.grace_period_seconds_error,
            "spec.gracePeriodSeconds: must be at least 1 (0 would force-delete pods), got 0");
  EXPECT_EQ(zero.spec.validation_error(), zero.spec.grace_period_seconds_error);

  ASSERT_OK_AND_ASSIGN(const NodeMaintenance text,
                       decode(R"({"spec": {"nodeName": "n", "gracePeriodSeconds": "30"}})"));
  EXPECT_EQ(text.spec.grace_period_seconds_error,
            "spec.gracePeriodSeconds: expected an integer, got string");

  // Both wrong: the drain timeout is reported first.
  ASSERT_OK_AND_ASSIGN(
      const NodeMaintenance both,
      decode(R"({"spec": {"nodeName": "n", "gracePeriodSeconds": -1, "drainTimeout": "x"}})"));
  EXPECT_EQ(both.spec.validation_error(),
            "spec.drainTimeout: invalid duration \"x\": expected a number at offset 0");
}

TEST(DecodeNodeMaintenanceTest, WrongTypesNameTheField) {
  EXPECT_EQ(decode_error(R"([])"), "expected an object, got array");
  EXPECT_EQ(decode_error(R"({"kind": "Node"})"), "expected kind \"NodeMaintenance\", got \"Node\"");
  EXPECT_EQ(decode_error(R"({"metadata": {"name": 1}})"),
            "metadata.name: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"spec": []})"), "spec: expected an object, got array");
  EXPECT_EQ(decode_error(R"({"spec": {"nodeName": 7}})"),
            "spec.nodeName: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"spec": {"reason": true}})"),
            "spec.reason: expected a string, got bool");
  EXPECT_EQ(decode_error(R"({"status": "Running"})"), "status: expected an object, got string");
  EXPECT_EQ(decode_error(R"({"status": {"phase": 1}})"),
            "status.phase: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"status": {"phase": "Done"}})"),
            "status.phase: unknown phase \"Done\" (expected Pending, Running, Succeeded or "
            "Failed)");
  EXPECT_EQ(decode_error(R"({"status": {"totalPods": "8"}})"),
            "status.totalPods: expected an integer, got string");
  EXPECT_EQ(decode_error(R"({"status": {"evictionPods": 1.5}})"),
            "status.evictionPods: expected an integer, got number");
  EXPECT_EQ(decode_error(R"({"status": {"drainProgress": "75%"}})"),
            "status.drainProgress: expected an integer, got string");
  EXPECT_EQ(decode_error(R"({"status": {"totalpods": {}}})"),
            "status.totalpods: expected an integer, got object");
  EXPECT_EQ(decode_error(R"({"status": {"errorOnLeaseCount": "1"}})"),
            "status.errorOnLeaseCount: expected an integer, got string");
  EXPECT_EQ(decode_error(R"({"status": {"pendingPods": ["a", 2]}})"),
            "status.pendingPods[1]: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"status": {"pendingPodsRefs": [{"name": "a"}, "b"]}})"),
            "status.pendingPodsRefs[1]: expected an object, got string");
  EXPECT_EQ(decode_error(R"({"status": {"pendingPodsRefs": [{"name": "a", "reason": "Gone"}]}})"),
            "status.pendingPodsRefs[0].reason: unknown pending pod reason \"Gone\" (expected "
            "Evicting, WaitingForTermination, BlockedByPDB, MultiplePDBs, EvictionDeferred, "
            "NamespaceTerminating, Error, MigratingVM, VMWouldShutDown, VMNotMigratable or Held)");
  EXPECT_EQ(decode_error(R"({"status": {"lastError": 3}})"),
            "status.lastError: expected a string, got number");
  EXPECT_EQ(decode_error(R"({"status": {"lastUpdate": "yesterday"}})").substr(0, 40),
            "status.lastUpdate: invalid RFC 3339 time");
  EXPECT_EQ(decode_error(R"({"status": {"conditions": {}}})"),
            "status.conditions: expected an array, got object");
  EXPECT_EQ(decode_error(R"({"status": {"conditions": [{"type": "Ready", "status": "Yes",
            "lastTransitionTime": "2026-11-30T10:00:00Z", "reason": "R"}]}})"),
            "status.conditions[0].status: unknown condition status \"Yes\" (expected True, False "
            "or Unknown)");
  EXPECT_EQ(decode_error(R"({"status": {"conditions": [{"type": "Ready", "reason": "R",
            "lastTransitionTime": "2026-11-30T10:00:00Z"}]}})"),
            "status.conditions[0].status: required");
  EXPECT_EQ(decode_error(R"({"status": {"conditions": [{"type": "Ready", "status": "True",
            "reason": "R"}]}})"),
            "status.conditions[0].lastTransitionTime: required");
  EXPECT_EQ(decode_error(R"({"status": {"conditions": [{"type": "Ready", "status": "True",
            "lastTransitionTime": "2026-11-30T10:00:00Z", "observedGeneration": "1"}]}})"),
            "status.conditions[0].observedGeneration: expected an integer, got string");
}

TEST(ResourceInfoTest, NodeMaintenanceIsAClusterScopedResource) {
  static_assert(kube::Resource<NodeMaintenance>);
  EXPECT_EQ(kube::api_version<NodeMaintenance>(), kApiVersion);
  EXPECT_EQ(kube::collection_path<NodeMaintenance>(),
            "/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances");
  EXPECT_EQ(kube::object_path<NodeMaintenance>("", "maintenance-worker-01"),
            "/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances/maintenance-worker-01");
  EXPECT_EQ(kube::ResourceInfo<NodeMaintenance>::kKind, "NodeMaintenance");
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, kube::ResourceInfo<NodeMaintenance>::decode(
                                                     boost::json::parse(kStoryObject)));
  EXPECT_EQ(nm.spec.node_name, "node-worker-01");
}

// ---- encoding --------------------------------------------------------------------------------

NodeMaintenanceStatus full_status() {
  NodeMaintenanceStatus s;
  s.phase = Phase::kRunning;
  s.total_pods = 8;
  s.eviction_pods = 6;
  s.pending_pods = {"vm-launcher", "db-0"};
  s.pending_pods_refs = {
      {"kubevirt-system", "vm-launcher", PendingPodReason::kBlockedByPdb, "PDB x: 0 allowed"},
      {"db", "db-0", PendingPodReason::kEvictionDeferred, ""},
      {"legacy", "no-reason", std::nullopt, ""},
  };
  s.drain_progress = 75;
  s.totalpods = 11;
  s.last_error = "Cannot evict pod as it would violate the pod's disruption budget.";
  s.last_update = kDay + hours{10};
  s.error_on_lease_count = 2;
  s.conditions = {
      {"Cordoned", ConditionStatus::kTrue, 3, kDay + hours{9}, "NodeCordoned", "done"},
      {"Blocked", ConditionStatus::kFalse, 0, kDay, "NotBlocked", ""},
  };
  return s;
}

TEST(EncodeStatusTest, ProducesTheSchemaNames) {
  const boost::json::object out = encode_status(full_status());
  EXPECT_EQ(boost::json::value(out), boost::json::parse(R"json({
    "phase": "Running", "totalPods": 8, "evictionPods": 6,
    "pendingPods": ["vm-launcher", "db-0"],
    "pendingPodsRefs": [
      {"namespace": "kubevirt-system", "name": "vm-launcher", "reason": "BlockedByPDB",
       "message": "PDB x: 0 allowed"},
      {"namespace": "db", "name": "db-0", "reason": "EvictionDeferred"},
      {"namespace": "legacy", "name": "no-reason"}],
    "drainProgress": 75, "totalpods": 11,
    "lastError": "Cannot evict pod as it would violate the pod's disruption budget.",
    "lastUpdate": "2026-11-30T10:00:00Z", "errorOnLeaseCount": 2,
    "conditions": [
      {"type": "Cordoned", "status": "True", "observedGeneration": 3,
       "lastTransitionTime": "2026-11-30T09:00:00Z", "reason": "NodeCordoned", "message": "done"},
      {"type": "Blocked", "status": "False", "lastTransitionTime": "2026-11-30T00:00:00Z",
       "reason": "NotBlocked", "message": ""}]
  })json"))
      << boost::json::serialize(out);
}

TEST(EncodeStatusTest, EmptyStatusWritesOnlyTheCounters) {
  const boost::json::object out = encode_status(NodeMaintenanceStatus{});
  EXPECT_EQ(boost::json::value(out), boost::json::parse(R"({"totalPods": 0, "evictionPods": 0,
    "drainProgress": 0, "totalpods": 0, "errorOnLeaseCount": 0})"))
      << boost::json::serialize(out);
}

TEST(EncodeStatusTest, TimesAreTruncatedToSeconds) {
  NodeMaintenanceStatus s;
  s.last_update = kDay + seconds{5} + milliseconds{999};
  EXPECT_EQ(encode_status(s).at("lastUpdate"), "2026-11-30T00:00:05Z");
}

TEST(EncodeStatusTest, RoundTripsThroughDecode) {
  for (const NodeMaintenanceStatus& status : {full_status(), NodeMaintenanceStatus{}}) {
    const boost::json::value object{{"kind", "NodeMaintenance"},
                                    {"spec", {{"nodeName", "n"}}},
                                    {"status", encode_status(status)}};
    // Through text, as the API server sees it.
    ASSERT_OK_AND_ASSIGN(
        const NodeMaintenance nm,
        decode_node_maintenance(boost::json::parse(boost::json::serialize(object))));
    EXPECT_EQ(nm.status, status);
  }
  NodeMaintenanceStatus pending;
  pending.phase = Phase::kPending;
  pending.drain_progress = -5;  // upstream's values survive too
  const boost::json::value object{{"status", encode_status(pending)}};
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode_node_maintenance(object));
  EXPECT_EQ(nm.status, pending);
}

TEST(StatusMergePatchTest, NullsEveryFieldLeftOut) {
  NodeMaintenanceStatus s;
  s.phase = Phase::kSucceeded;
  s.total_pods = 3;
  s.eviction_pods = 3;
  s.drain_progress = 100;
  const boost::json::object patch = status_merge_patch(s);
  EXPECT_EQ(boost::json::value(patch), boost::json::parse(R"({"status": {
    "phase": "Succeeded", "totalPods": 3, "evictionPods": 3, "pendingPods": null,
    "pendingPodsRefs": null, "drainProgress": 100, "totalpods": 0, "lastError": null,
    "lastUpdate": null, "errorOnLeaseCount": 0, "conditions": null}})"))
      << boost::json::serialize(patch);

  const boost::json::object full = status_merge_patch(full_status());
  EXPECT_EQ(full.at("status"), boost::json::value(encode_status(full_status())));
}

TEST(NodeMaintenanceObjectTest, WritesWhatItsCreatorsSetAndLeavesTheRestOut) {
  kube::ObjectMeta meta;
  meta.name = "maintenance-node-worker-01";
  meta.uid = "not written";
  NodeMaintenanceSpec spec;
  spec.node_name = "node-worker-01";
  EXPECT_EQ(boost::json::serialize(node_maintenance_object(meta, spec)),
            R"({"apiVersion":"nodemaintenance.medik8s.io/v1beta1","kind":"NodeMaintenance",)"
            R"("metadata":{"name":"maintenance-node-worker-01"},)"
            R"("spec":{"nodeName":"node-worker-01"}})");

  meta.labels.set("nodemaintenance.medik8s.io/plan", "memory-upgrade");
  meta.annotations.set("nodemaintenance.medik8s.io/plan-uid", "u-1");
  spec.reason = "firmware update";
  spec.drain_timeout_text = "1h30m";
  spec.grace_period_seconds = 60;
  spec.vm_eviction_policy = VmEvictionPolicy::kAllowShutdown;
  const boost::json::value object = node_maintenance_object(meta, spec);
  EXPECT_EQ(
      boost::json::serialize(object),
      R"({"apiVersion":"nodemaintenance.medik8s.io/v1beta1","kind":"NodeMaintenance",)"
      R"("metadata":{"name":"maintenance-node-worker-01",)"
      R"("labels":{"nodemaintenance.medik8s.io/plan":"memory-upgrade"},)"
      R"("annotations":{"nodemaintenance.medik8s.io/plan-uid":"u-1"}},)"
      R"("spec":{"nodeName":"node-worker-01","reason":"firmware update",)"
      R"("drainTimeout":"1h30m","gracePeriodSeconds":60,"vmEvictionPolicy":"AllowShutdown"}})");
  // What the API server would store decodes back to the same spec.
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode_node_maintenance(object));
  EXPECT_EQ(nm.spec.node_name, "node-worker-01");
  EXPECT_EQ(nm.spec.drain_timeout, std::chrono::minutes{90});
  EXPECT_EQ(nm.meta.labels, meta.labels);
  EXPECT_EQ(nm.meta.annotations, meta.annotations);
}

}  // namespace
}  // namespace nmo::op
