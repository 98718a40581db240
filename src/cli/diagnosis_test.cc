#include "cli/diagnosis.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::cli {
namespace {

op::NodeMaintenance decode(std::string_view json) {
  auto nm = op::decode_node_maintenance(boost::json::parse(json));
  EXPECT_OK(nm);
  return nm ? *nm : op::NodeMaintenance{};
}

kube::PodDisruptionBudget db_pdb() {
  kube::PodDisruptionBudget pdb;
  pdb.meta.namespace_ = "vms";
  pdb.meta.name = "db-pdb";
  pdb.disruptions_allowed = 0;
  pdb.current_healthy = 1;
  pdb.desired_healthy = 1;
  return pdb;
}

DiagnosisInput blocked_input() {
  DiagnosisInput input;
  input.nm = decode(R"json({"metadata":{"name":"m1"},"spec":{"nodeName":"n1"},
    "status":{"phase":"Running","totalPods":2,"evictionPods":1,"drainProgress":50,
      "pendingPodsRefs":[{"namespace":"vms","name":"vm-db","reason":"BlockedByPDB",
        "message":"PDB vms/db-pdb: 0 disruptions allowed (1 healthy, 1 desired)"}]}})json");
  input.now = *kube::parse_time("2024-05-01T10:00:00Z");
  input.lease_ref = "medik8s-leases/node-n1";
  kube::Lease lease;
  lease.meta.name = "node-n1";
  lease.holder_identity = "node-maintenance";
  lease.lease_duration_seconds = 3600;
  lease.renew_time = input.now;
  input.node_lease = lease;
  input.slot_holders = {"m1 (node n1)"};
  kube::Node node;
  node.meta.name = "n1";
  node.unschedulable = true;
  node.taints = {{.key = "medik8s.io/drain", .value = "draining", .effect = "NoSchedule"}};
  input.node = node;
  input.pods = {StuckPod{.ref = input.nm.status.pending_pods_refs.front(), .pdbs = {db_pdb()}}};
  input.events = {
      EventLine{.type = "Normal", .reason = "BeginMaintenance", .message = "begin"},
      EventLine{
          .type = "Warning", .reason = "DrainError", .message = "Cannot evict pod", .count = 4}};
  return input;
}

TEST(DiagnosisVerdict, NamesThePodItsPdbAndTheAction) {
  EXPECT_EQ(diagnosis_verdict(blocked_input()),
            "pod vms/vm-db is protected by PDB vms/db-pdb (0 disruptions allowed: 1 healthy, 1 "
            "desired): scale up, migrate the VM, or relax the PDB");
}

TEST(DiagnosisVerdict, PdbBlockerComesFirst) {
  DiagnosisInput input = blocked_input();
  StuckPod multiple{.ref = {.namespace_ = "w",
                            .name = "a-0",
                            .reason = op::PendingPodReason::kMultiplePdbs,
                            .message = "more than one PodDisruptionBudget"}};
  input.pods.insert(input.pods.begin(), multiple);
  EXPECT_EQ(diagnosis_verdict(input).rfind("pod vms/vm-db is protected by PDB vms/db-pdb", 0), 0U);
  input.pods.pop_back();
  EXPECT_EQ(diagnosis_verdict(input).rfind("pod w/a-0 is selected by more than one PDB", 0), 0U);
}

// A 429 from an admission webhook: KubeVirt's texts tell a migration under way (wait) from a
// refusal that waiting never resolves.
TEST(DiagnosisVerdict, DeferredEvictionsTellKubeVirtsAnswersApart) {
  DiagnosisInput input = blocked_input();
  auto deferred = [&input](std::string message) {
    input.pods = {
        StuckPod{.ref = op::PendingPodRef{.namespace_ = "vms",
                                          .name = "virt-launcher-db-x",
                                          .reason = op::PendingPodReason::kEvictionDeferred,
                                          .message = std::move(message)}}};
    return diagnosis_verdict(input);
  };
  EXPECT_EQ(deferred("admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied "
                     "the request: VMI db is configured with an eviction strategy but is not "
                     "live-migratable"),
            "pod vms/virt-launcher-db-x: KubeVirt refuses its eviction for good (admission webhook "
            "\"virt-launcher-eviction-interceptor.kubevirt.io\" denied the request: VMI db is "
            "configured with an eviction strategy but is not live-migratable): waiting does not "
            "help; make the VM live-migratable, or change its eviction strategy");
  EXPECT_EQ(deferred(R"(Evacuation in progress: Eviction triggered evacuation of VMI "vms/db")"),
            R"(pod vms/virt-launcher-db-x: its VM is being live-migrated (Evacuation in )"
            R"(progress: Eviction triggered evacuation of VMI "vms/db"): wait for it)");
  EXPECT_EQ(deferred("the webhook is busy"),
            "pod vms/virt-launcher-db-x: an admission webhook deferred its eviction (the webhook "
            "is busy): wait for it, or check the webhook");
}

TEST(DiagnosisVerdict, AHeldVmSaysWhatToDo) {
  DiagnosisInput input = blocked_input();
  input.pods = {
      StuckPod{.ref = op::PendingPodRef{
                   .namespace_ = "vms",
                   .name = "virt-launcher-db-x",
                   .reason = op::PendingPodReason::kVmWouldShutDown,
                   .message = "VMI vms/db has no eviction strategy, so evicting its pod "
                              "would shut it down: live-migrate it (virtctl migrate db), "
                              "or set vmEvictionPolicy AllowShutdown on the maintenance"}}};
  EXPECT_EQ(diagnosis_verdict(input),
            "pod vms/virt-launcher-db-x is held: VMI vms/db has no eviction strategy, so evicting "
            "its pod would shut it down: live-migrate it (virtctl migrate db), or set "
            "vmEvictionPolicy AllowShutdown on the maintenance");
}

TEST(DiagnosisVerdict, AVmTheOperatorMigratesIsWaitedForAndAFailedMigrationPointsAtItsEvents) {
  DiagnosisInput input = blocked_input();
  const auto migrating = [&](std::string message) {
    input.pods = {StuckPod{.ref = op::PendingPodRef{.namespace_ = "vms",
                                                    .name = "virt-launcher-order-x",
                                                    .reason = op::PendingPodReason::kMigratingVm,
                                                    .message = std::move(message)}}};
    return diagnosis_verdict(input);
  };
  EXPECT_EQ(migrating("live migration order-maintenance-0123abcd-1 of VMI vms/order: Running"),
            "pod vms/virt-launcher-order-x: its VM is being live-migrated (live migration "
            "order-maintenance-0123abcd-1 of VMI vms/order: Running): wait for it");
  EXPECT_EQ(migrating("live migration vms/order-maintenance-0123abcd-1 of VMI vms/order failed: "
                      "no node fits; trying again (1 failed so far)"),
            "pod vms/virt-launcher-order-x: the live migration of its VM failed and is tried again "
            "(live migration vms/order-maintenance-0123abcd-1 of VMI vms/order failed: no node "
            "fits; trying again (1 failed so far)): wait for it; if it keeps failing, see the "
            "MigrationFailed events and kubectl get vmim -n vms");
}

TEST(DiagnosisVerdict, PendingOnAForeignLeaseOrTheBudget) {
  DiagnosisInput input = blocked_input();
  input.nm = decode(R"json({"metadata":{"name":"m2"},"spec":{"nodeName":"n1"},
    "status":{"phase":"Pending"}})json");
  input.pods.clear();
  input.node_lease->holder_identity = "NodeHealthCheck-x";
  EXPECT_EQ(diagnosis_verdict(input),
            "node lease medik8s-leases/node-n1 is held by NodeHealthCheck-x: wait until that "
            "remediation ends; it proceeds by itself");
  input.node_lease.reset();
  EXPECT_EQ(diagnosis_verdict(input),
            "waiting for a maintenance slot (1 in use: m1 (node n1)): wait for them to be deleted, "
            "or raise --max-parallel-maintenances");
}

TEST(DiagnosisVerdict, FinalPhases) {
  DiagnosisInput input = blocked_input();
  input.nm.status.phase = op::Phase::kSucceeded;
  EXPECT_EQ(diagnosis_verdict(input).rfind("node n1 is drained", 0), 0U);
  input.nm.status.phase = op::Phase::kFailed;
  input.nm.status.last_error = "drain did not complete within 1m0s: 1 pods pending";
  EXPECT_EQ(diagnosis_verdict(input).rfind("failed: drain did not complete within 1m0s", 0), 0U);
}

TEST(DiagnosisReport, HasEverySection) {
  const std::string report = diagnosis_report(blocked_input(), 10);
  for (const char* expected :
       {"Events (oldest first):\n", "DrainError", "(x4)", "  schedulable:  no (cordoned)\n",
        "  taints:       medik8s.io/drain=draining:NoSchedule\n",
        "  node lease:   medik8s-leases/node-n1: held by node-maintenance (the operator)\n",
        "  slots:        1 in use: m1 (node n1)\n",
        "    PDB vms/db-pdb: 0 disruptions allowed: 1 healthy, 1 desired\n",
        "Verdict: pod vms/vm-db is protected by PDB vms/db-pdb"}) {
    EXPECT_NE(report.find(expected), std::string::npos) << expected << "\n" << report;
  }
  EXPECT_LT(report.find("BeginMaintenance"), report.find("DrainError"));
}

TEST(DiagnosisReport, NamesAnUntestedServerAndWhatItLacks) {
  DiagnosisInput input = blocked_input();
  EXPECT_EQ(diagnosis_report(input, 10).find("API server:"), std::string::npos);
  input.server = kube::ServerVersion{.major = 1, .minor = 26, .git_version = "v1.26.15"};
  const std::string report = diagnosis_report(input, 10);
  for (const char* expected :
       {"\nAPI server: Kubernetes v1.26.15 (tested: 1.27 to 1.37)\n",
        "  warning: Kubernetes v1.26.15 is older than 1.27, the oldest version this operator is "
        "tested on; it works as far as the server's API allows\n",
        "  lacks matchConditions in admission webhooks (1.28+): the API server calls the webhook",
        "  lacks field selectors on custom resources (CRD selectableFields) (1.31+): install the "
        "CRD without selectableFields (deploy/before-1.31)"}) {
    EXPECT_NE(report.find(expected), std::string::npos) << expected << "\n" << report;
  }
  const boost::json::value json = diagnosis_to_json(input);
  EXPECT_EQ(json.at("apiServer").at("version"), "v1.26.15");
  EXPECT_EQ(json.at("apiServer").at("lacks").as_array().size(), 2U);
}

TEST(DiagnosisReport, ShowsTheNodesLifecycleConditionsAndWhoseTheyAre) {
  DiagnosisInput input = blocked_input();
  EXPECT_NE(diagnosis_report(input, 10).find("  lifecycle:    none\n"), std::string::npos);
  input.node->conditions = {
      {.type = "Ready", .status = "True", .reason = "KubeletReady"},
      {.type = "DrainInProgress",
       .status = "True",
       .reason = "NodeMaintenanceDraining",
       .message = "NodeMaintenance m1 is evicting the pods that must leave"},
      {.type = "MaintenanceInProgress",
       .status = "True",
       .reason = "NodeMaintenance",
       .message = "NodeMaintenance m1: memory upgrade"},
      {.type = "GracefulNodeShutdownInProgress", .status = "False", .reason = "NoShutdown"},
  };
  const std::string report = diagnosis_report(input, 10);
  EXPECT_NE(
      report.find("  lifecycle:    MaintenanceInProgress=True NodeMaintenance: NodeMaintenance "
                  "m1: memory upgrade\n"
                  "                DrainInProgress=True NodeMaintenanceDraining: "
                  "NodeMaintenance m1 is evicting the pods that must leave\n"
                  "                GracefulNodeShutdownInProgress=False NoShutdown (another "
                  "writer's)\n"),
      std::string::npos)
      << report;
  const boost::json::value json = diagnosis_to_json(input);
  const boost::json::array& lifecycle = json.at("nodeState").at("lifecycleConditions").as_array();
  ASSERT_EQ(lifecycle.size(), 3U);
  EXPECT_EQ(lifecycle[0].at("type"), "MaintenanceInProgress");
  EXPECT_EQ(lifecycle[0].at("ours"), true);
  EXPECT_EQ(lifecycle[2].at("ours"), false);
}

TEST(DiagnosisJson, CarriesTheFacts) {
  const boost::json::value json = diagnosis_to_json(blocked_input());
  EXPECT_EQ(json.at("pendingPods").at(0).at("pdbs").at(0).at("name"), "vms/db-pdb");
  EXPECT_EQ(json.at("pendingPods").at(0).at("pdbs").at(0).at("disruptionsAllowed"), 0);
  EXPECT_EQ(json.at("nodeLease").at("holder"), "node-maintenance");
  EXPECT_EQ(json.at("nodeState").at("unschedulable"), true);
  EXPECT_EQ(json.at("events").as_array().size(), 2U);
}

TEST(EventsFromList, OrdersBySecondThenByResourceVersionAndSkipsOtherKinds) {
  // The list comes back in name order, which is random; the same second needs the revision.
  const boost::json::value list = boost::json::parse(R"json({"items":[
    {"metadata":{"resourceVersion":"120"},"involvedObject":{"kind":"NodeMaintenance"},
     "type":"Warning","reason":"DrainError","lastTimestamp":"2026-11-30T21:20:43Z","count":4},
    {"metadata":{"resourceVersion":"99"},"involvedObject":{"kind":"NodeMaintenance"},
     "type":"Normal","reason":"Late","lastTimestamp":"2026-11-30T21:20:44Z"},
    {"metadata":{"resourceVersion":"101"},"involvedObject":{"kind":"Node"},
     "type":"Normal","reason":"NodeNotReady","lastTimestamp":"2026-11-30T21:20:43Z"},
    {"metadata":{"resourceVersion":"110"},"involvedObject":{"kind":"NodeMaintenance"},
     "type":"Normal","reason":"BeginMaintenance","firstTimestamp":"2026-11-30T21:20:43Z"},
    {"metadata":{"resourceVersion":"not-a-number"},"involvedObject":{"kind":"NodeMaintenance"},
     "type":"Normal","reason":"Opaque","lastTimestamp":"2026-11-30T21:20:43Z"},
    "junk"]})json");
  const std::vector<EventLine> events = events_from_list(list);
  std::vector<std::string> reasons;
  for (const EventLine& event : events) reasons.push_back(event.reason);
  EXPECT_EQ(reasons,
            (std::vector<std::string>{"Opaque", "BeginMaintenance", "DrainError", "Late"}));
  EXPECT_EQ(events[2].count, 4);
  EXPECT_TRUE(events_from_list(boost::json::parse("[]")).empty());
}

}  // namespace
}  // namespace nmo::cli
