// Edge cases of the NodeMaintenance controller against the real local cluster (docs/design.md
// §2.4–§2.8, §3.1): a maintenance deleted mid-drain, pods ending by
// themselves, pods lingering in termination, newcomers after Succeeded, a pod under two PDBs,
// the node deleted and re-created, a control-plane maintenance waiting on quorum beside a
// worker one, adoption of an upstream-style drain taint, a burst of twenty maintenances, and an
// eviction deferred (429) by an admission webhook served in-process, as KubeVirt's is while it
// live-migrates a VM, KubeVirt VMs whose eviction would shut them down (live-migrated by the
// operator, retried when a migration fails, cancelled with the maintenance; or held when they
// cannot migrate) and KubeVirt's refusal of a VM that cannot migrate, a pod left in a namespace
// being deleted (eviction refused with 403), a node whose lease name is hashed, Events that follow
// the writes they announce, and the promises of a Running maintenance (drainTimeout,
// gracePeriodSeconds, the lease renewal).
//
// Most tests run on a fresh kwok node of their own (deleted at the end), so that they never
// depend on what earlier tests left on the shared nodes (kControlPlaneNodes, kWorkerNodes); the
// quorum test uses the control-plane nodes the way S5 does and puts them back.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "http/server.h"
#include "http/testing/run.h"
#include "kube/config/base64.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/kubevirt.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/scenarios.h"
#include "test/e2e/support/serving_certificate.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;

// The stability window is shortened from the default 30 s, as in operator_test.cc.

constexpr const char* kForeignHolder = "NodeHealthCheck-x";

// Deadlines: the operator reacts to watch events within a second; evictions blocked once are
// retried with a backoff of at most 30 s (docs/design.md §2.4), pods under two PDBs at that pace at
// once.

class NodeMaintenanceEdgeTest : public OperatorFixture {
 protected:
  OperatorProcess& start(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = kOperatorFlags;
    flags.insert(flags.end(), extra.begin(), extra.end());
    return start_operator(flags);
  }

  // Registers a ValidatingWebhookConfiguration (name `prefix-<random>`) that sends `operation`
  // on `resource` in namespace `ns` to the in-test webhook at 127.0.0.1:`port`. The returned
  // guard deletes it when the test body ends (before the webhook server stops, so nothing stays
  // blocked); TearDown deletes it again, whatever happened.
  [[nodiscard]] std::shared_ptr<void> register_webhook(
      const std::string& prefix, const std::string& webhook_name, const std::string& operation,
      const std::string& resource, const std::string& ns, int port, const std::string& ca_base64) {
    const std::string configuration = unique_name(prefix);
    auto delete_configuration = [this, configuration] {
      (void)kubectl_.run(
          {"delete", "validatingwebhookconfiguration", configuration, "--ignore-not-found"});
    };
    defer(delete_configuration);
    const json::object hook{
        {"name", webhook_name},
        {"admissionReviewVersions", json::array{"v1"}},
        {"sideEffects", "None"},
        {"failurePolicy", "Fail"},
        {"timeoutSeconds", 10},
        {"clientConfig",
         {{"url", "https://127.0.0.1:" + std::to_string(port) + "/"}, {"caBundle", ca_base64}}},
        {"rules", json::array{json::object{{"apiGroups", json::array{""}},
                                           {"apiVersions", json::array{"v1"}},
                                           {"operations", json::array{operation}},
                                           {"resources", json::array{resource}},
                                           {"scope", "Namespaced"}}}},
        {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", ns}}}}}};
    kubectl_.apply(json::serialize(json::object{{"apiVersion", "admissionregistration.k8s.io/v1"},
                                                {"kind", "ValidatingWebhookConfiguration"},
                                                {"metadata", {{"name", configuration}}},
                                                {"webhooks", json::array{hook}}}));
    return {nullptr, [delete_configuration](void*) { delete_configuration(); }};
  }

  // Waits until a dry-run eviction of `pod` is refused with `expected` in the error (an
  // admission webhook on evictions is in effect); `probe` is the last attempt.
  bool wait_dry_run_eviction_refused(const std::string& ns, const std::string& pod,
                                     const std::string& expected, ProcessResult& probe) {
    const std::string eviction =
        json::serialize(json::object{{"apiVersion", "policy/v1"},
                                     {"kind", "Eviction"},
                                     {"metadata", {{"name", pod}, {"namespace", ns}}},
                                     {"deleteOptions", {{"dryRun", json::array{"All"}}}}});
    return wait_until(
        "the webhook to refuse a dry-run eviction", 30s,
        [&] {
          probe =
              kubectl_.run({"create", "--raw",
                            "/api/v1/namespaces/" + ns + "/pods/" + pod + "/eviction", "-f", "-"},
                           eviction);
          return probe.err.find(expected) != std::string::npos;
        },
        [&] { return "exit " + std::to_string(probe.exit_code) + ": " + probe.err + probe.out; });
  }

  // The pendingPodsRefs entry of `pod`, or nullopt.
  static std::optional<op::PendingPodRef> pending_ref(const json::value& nm,
                                                      const std::string& pod) {
    for (op::PendingPodRef& ref : maintenance_of(nm).status.pending_pods_refs) {
      if (ref.name == pod) return std::move(ref);
    }
    return std::nullopt;
  }

  // The reason of a pendingPodsRefs entry as written on the wire ("" when unset).
  static std::string reason_of(const op::PendingPodRef& ref) {
    return ref.reason ? std::string(op::to_string(*ref.reason)) : std::string();
  }

  // Waits until the maintenance lists `pod` as pending with `reason`; returns the CR seen last.
  std::optional<json::value> wait_pending_reason(const std::string& cr, const std::string& pod,
                                                 const std::string& reason,
                                                 std::chrono::milliseconds timeout = kReact) {
    std::optional<json::value> nm;
    const bool seen = wait_until(
        "pod " + pod + " pending with reason " + reason + " in " + cr, timeout,
        [&] {
          nm = get_node_maintenance(cr);
          if (!nm) return false;
          auto ref = pending_ref(*nm, pod);
          return ref && reason_of(*ref) == reason;
        },
        [&] { return nm ? json::serialize(nm->as_object()["status"]) : std::string("no CR"); });
    if (!seen) return std::nullopt;
    return nm;
  }

  static bool has_key(const json::value& object, const std::string& map, const std::string& key) {
    boost::system::error_code ec;
    const json::value* m = object.find_pointer("/metadata/" + map, ec);
    return m != nullptr && m->is_object() && m->as_object().contains(key);
  }

  static std::string slot_of(const std::string& cr, const std::string& node) {
    return cr + " (node " + node + ")";
  }

  std::optional<json::value> pod(const std::string& ns, const std::string& name) {
    return kubectl_.get_json({"pod", name, "-n", ns});
  }
};

// The NodeMaintenance's condition `type`, or nullopt when absent; read through maintenance_of()
// (a NodeMaintenance that does not decode fails the test).
std::optional<op::Condition> condition_of(const json::value& nm, const std::string& type) {
  const op::NodeMaintenance m = maintenance_of(nm);
  const op::Condition* c = op::find_condition(m.status.conditions, type);
  return c != nullptr ? std::optional<op::Condition>(*c) : std::nullopt;
}

// The status of the NodeMaintenance's condition `type` ("" when absent).
std::string condition_status(const json::value& nm, const std::string& type) {
  const std::optional<op::Condition> c = condition_of(nm, type);
  return c ? std::string(op::to_string(c->status)) : std::string();
}

std::string describe_status(const std::optional<json::value>& nm) {
  if (!nm) return "no CR";
  boost::system::error_code ec;
  const json::value* status = nm->find_pointer("/status", ec);
  return status == nullptr ? std::string("no status") : json::serialize(*status);
}

// ---- 1. Deleted mid-drain (docs/design.md §2.6: stop the drain, restore the node)
// ----------------------

TEST_F(NodeMaintenanceEdgeTest, DeletedMidDrainRestoresTheNodeAndEvictsNoMore) {
  const std::string node = fresh_node("middrain");
  const std::string cr = "maintenance-edge-middrain";
  constexpr int kSlowPods = 3;
  TestNamespace ns(kubectl_, "edge-middrain");

  for (int i = 0; i < kSlowPods; ++i) {
    kubectl_.apply(pod_manifest(ns.name(), "slow-" + std::to_string(i), node,
                                {{kSlowDeleteAnnotation, "true"}}, 20));
  }
  kubectl_.apply(pod_manifest(ns.name(), "guarded", node));
  for (int i = 0; i < kSlowPods; ++i) {
    ASSERT_TRUE(wait_running(ns.name(), "app=slow-" + std::to_string(i), 1));
  }
  ASSERT_TRUE(wait_running(ns.name(), "app=guarded", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "guarded-pdb", 1, "guarded"));
  ASSERT_TRUE(wait_pdb(ns.name(), "guarded-pdb", 1, 0));
  auto guarded = pod(ns.name(), "guarded");
  ASSERT_TRUE(guarded);
  const std::string guarded_uid = uid_of(*guarded);

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());

  // Running, with the slow pods terminating and the guarded one refused by its PDB.
  std::optional<json::value> nm;
  ASSERT_TRUE(wait_until(
      "the drain in progress: slow pods terminating, guarded pod blocked", kReact,
      [&] {
        nm = get_node_maintenance(cr);
        if (!nm || phase_of(*nm) != "Running") return false;
        auto blocked = pending_ref(*nm, "guarded");
        if (!blocked || reason_of(*blocked) != "BlockedByPDB") return false;
        for (int i = 0; i < kSlowPods; ++i) {
          auto p = pod(ns.name(), "slow-" + std::to_string(i));
          if (!p || !is_terminating(*p)) return false;
        }
        return true;
      },
      [&] { return describe_status(nm); }));
  ASSERT_EQ(maintenance_of(*nm).status.total_pods, kSlowPods + 1);
  ASSERT_LT(maintenance_of(*nm).status.eviction_pods, kSlowPods + 1);

  remove(cr);
  // The node comes back at once, while the slow pods are still within their 20 s grace period:
  // deletion does not wait for the drain.
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, 15s));
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_until("the node lease and the slot of " + cr + " released", kReact, [&] {
    return !node_lease_held(node) && !slot_holders().contains(slot_of(cr, node));
  }));
  EXPECT_TRUE(wait_event(uid, "RemovedMaintenance", std::nullopt, kReact));

  // The admin now relaxes the PDB: a drain that had not stopped would evict the guarded pod at
  // its next retry (5 s after the first refusal). It must stay while the slow pods finish their
  // grace period (~20 s, longer than that retry).
  kubectl_.must({"delete", "pdb", "guarded-pdb", "-n", ns.name()});
  std::optional<json::value> guarded_now;
  bool guarded_evicted = false;
  EXPECT_TRUE(wait_until("the slow pods gone at the end of their grace period", 60s, [&] {
    guarded_now = pod(ns.name(), "guarded");
    guarded_evicted =
        !guarded_now || uid_of(*guarded_now) != guarded_uid || is_terminating(*guarded_now);
    if (guarded_evicted) return true;  // no point waiting longer
    for (int i = 0; i < kSlowPods; ++i) {
      if (pod(ns.name(), "slow-" + std::to_string(i))) return false;
    }
    return true;
  }));
  EXPECT_FALSE(guarded_evicted) << "the guarded pod was evicted after its maintenance was deleted";
  guarded_now = pod(ns.name(), "guarded");
  ASSERT_TRUE(guarded_now) << "the guarded pod is gone";
  EXPECT_EQ(uid_of(*guarded_now), guarded_uid);
  EXPECT_FALSE(is_terminating(*guarded_now));
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_FALSE(unschedulable(*n)) << describe_node(*n);
  EXPECT_FALSE(has_taint_key(*n, kDrainTaintKey)) << describe_node(*n);
}

// ---- 2. A PDB-blocked pod that ends by itself (docs/design.md §2.4, §8 S2)
// --------------------

// Upstream's manifests run this operator unchanged, and upstream's RBAC grants no lease delete:
// the node lease is then freed by clearing its holder, and the maintenance's deletion ends.
TEST_F(NodeMaintenanceEdgeTest, WithoutLeaseDeleteTheNodeLeaseIsFreedByClearingItsHolder) {
  if (std::getenv("NMO_OPERATOR_KUBECONFIG") == nullptr) {
    GTEST_SKIP() << "the operator runs as the admin here (NMO_OPERATOR_KUBECONFIG unset): RBAC "
                    "cannot be taken away from it";
  }
  const std::string node = fresh_node("nodelete");
  const std::string cr = "maintenance-edge-nodelete";
  defer([this, node] {
    (void)kubectl_.run(
        {"delete", "lease", "-n", kLeaseNamespace, "node-" + node, "--ignore-not-found"});
  });
  // The node lease Role as upstream grants leases: no delete.
  const std::string role = "node-maintenance-operator-node-lease-role";
  const auto verbs = [this, role](const std::string& list) {
    kubectl_.must({"patch", "role", role, "-n", kLeaseNamespace, "--type=json", "-p",
                   R"([{"op":"replace","path":"/rules/0/verbs","value":)" + list + "}]"});
  };
  defer([verbs] { verbs(R"(["list","watch","create","update","delete"])"); });
  verbs(R"(["list","watch","create","update"])");
  ASSERT_TRUE(wait_until("the operator may not delete leases", kReact, [&] {
    const ProcessResult can =
        kubectl_.run({"auth", "can-i", "delete", "leases", "-n", kLeaseNamespace,
                      "--as=system:serviceaccount:node-maintenance-operator-system:"
                      "node-maintenance-operator-controller-manager"});
    return can.out == "no\n";
  }));

  start();
  ASSERT_FALSE(create(cr, node).empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  ASSERT_TRUE(node_lease_held(node));
  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  auto freed = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(freed) << "the lease was deleted, which the Role forbids";
  EXPECT_EQ(string_at(*freed, "/spec/holderIdentity"), "");
  EXPECT_EQ(string_at(*freed, "/spec/renewTime"), "");
}

TEST_F(NodeMaintenanceEdgeTest, BlockedPodTurningSucceededLetsTheDrainFinish) {
  const std::string node = fresh_node("launcher");
  const std::string cr = "maintenance-edge-launcher";
  TestNamespace ns(kubectl_, "edge-launcher");

  // As KubeVirt's virt-launcher: restartPolicy Never, protected by a PDB allowing nothing.
  json::value launcher = json::parse(pod_manifest(ns.name(), "virt-launcher", node));
  launcher.at("spec").as_object()["restartPolicy"] = "Never";
  kubectl_.apply(json::serialize(launcher));
  ASSERT_TRUE(wait_running(ns.name(), "app=virt-launcher", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "vm-pdb", 1, "virt-launcher"));
  ASSERT_TRUE(wait_pdb(ns.name(), "vm-pdb", 1, 0));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_pending_reason(cr, "virt-launcher", "BlockedByPDB");
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running");
  const auto total = maintenance_of(*nm).status.total_pods;
  EXPECT_EQ(total, 1);

  // The VM has migrated: its launcher pod ends by itself. (kwok's pod-ready stage only acts on
  // pods without a podIP, so it leaves this status alone.)
  kubectl_.must({"patch", "pod", "virt-launcher", "-n", ns.name(), "--subresource=status",
                 "--type=merge", "-p", R"({"status":{"phase":"Succeeded"}})"});
  auto p = pod(ns.name(), "virt-launcher");
  ASSERT_TRUE(p);
  ASSERT_EQ(string_at(*p, "/status/phase"), "Succeeded");

  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  EXPECT_EQ(maintenance_of(*nm).status.total_pods, total);
  EXPECT_EQ(maintenance_of(*nm).status.eviction_pods, total);
  EXPECT_EQ(maintenance_of(*nm).status.drain_progress, 100);
  EXPECT_EQ(maintenance_of(*nm).status.last_error, "");
  EXPECT_EQ(event_count(uid, "SucceedMaintenance"), 1);
}

// ---- 3. A pod lingering in termination (docs/design.md §1.2, §2.4)
// ---------------------------------------

TEST_F(NodeMaintenanceEdgeTest, SlowDeletePodIsWaitingForTerminationThenGone) {
  const std::string node = fresh_node("slow");
  const std::string cr = "maintenance-edge-slow";
  TestNamespace ns(kubectl_, "edge-slow");
  kubectl_.apply(pod_manifest(ns.name(), "slow", node, {{kSlowDeleteAnnotation, "true"}}, 15));
  ASSERT_TRUE(wait_running(ns.name(), "app=slow", 1));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_pending_reason(cr, "slow", "WaitingForTermination");
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running");
  // The message says how long the pod has been terminating; wait for the first such message
  // (the one written when the eviction was accepted says so instead).
  ASSERT_TRUE(wait_until(
      "a WaitingForTermination message saying how long", kReact,
      [&] {
        nm = get_node_maintenance(cr);
        if (!nm) return false;
        auto ref = pending_ref(*nm, "slow");
        return ref && reason_of(*ref) == "WaitingForTermination" &&
               ref->message.starts_with("terminating for");
      },
      [&] { return describe_status(nm); }));
  EXPECT_EQ(phase_of(*nm), "Running");
  auto p = pod(ns.name(), "slow");
  ASSERT_TRUE(p) << "the pod went before its grace period ended";
  EXPECT_TRUE(is_terminating(*p));

  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  EXPECT_FALSE(pod(ns.name(), "slow"));
  EXPECT_EQ(maintenance_of(*nm).status.total_pods, 1);
  EXPECT_EQ(maintenance_of(*nm).status.eviction_pods, 1);
  EXPECT_EQ(maintenance_of(*nm).status.drain_progress, 100);
  EXPECT_FALSE(pending_ref(*nm, "slow"));
}

// ---- 4. A newcomer after Succeeded (docs/design.md §2.4, §2.5)
// ------------------------------------------

TEST_F(NodeMaintenanceEdgeTest, PodBoundAfterSucceededIsEvictedAndSucceededKept) {
  const std::string node = fresh_node("late");
  const std::string cr = "maintenance-edge-late";
  TestNamespace ns(kubectl_, "edge-late");
  kubectl_.apply(pod_manifest(ns.name(), "early", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=early", 1));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  ASSERT_TRUE(wait_event(uid, "SucceedMaintenance", std::nullopt, kReact));
  const std::int64_t total = maintenance_of(*nm).status.total_pods;
  EXPECT_EQ(total, 1);

  // Bound with spec.nodeName: no scheduler, so no NoSchedule taint keeps it out.
  kubectl_.apply(pod_manifest(ns.name(), "late", node));
  std::vector<std::string> phases_seen;
  ASSERT_TRUE(wait_until(
      "the newcomer evicted and counted", kDrain,
      [&] {
        nm = get_node_maintenance(cr);
        if (!nm) return false;
        if (phase_of(*nm) != "Succeeded") phases_seen.push_back(phase_of(*nm));
        return !pod(ns.name(), "late") && maintenance_of(*nm).status.total_pods == total + 1 &&
               maintenance_of(*nm).status.eviction_pods == total + 1;
      },
      [&] { return describe_status(nm); }));
  EXPECT_TRUE(phases_seen.empty()) << "left Succeeded, e.g. for " << phases_seen.front();
  EXPECT_EQ(phase_of(*nm), "Succeeded");
  EXPECT_EQ(maintenance_of(*nm).status.drain_progress, 100);
  EXPECT_EQ(event_count(uid, "SucceedMaintenance"), 1) << "SucceedMaintenance repeated";

  const std::string late = ns.name() + "/late";
  std::vector<Event> events;
  EXPECT_TRUE(wait_until(
      "a Normal event naming " + late, kReact,
      [&] {
        events = events_of(uid);
        return std::any_of(events.begin(), events.end(), [&](const Event& e) {
          return e.type == "Normal" && e.message.find(late) != std::string::npos;
        });
      },
      [&] {
        std::string seen;
        for (const auto& e : events) seen += "\n  " + e.type + " " + e.reason + ": " + e.message;
        return seen;
      }));
}

// A status written by someone else (a deposed leader that has not noticed yet, as the leader
// failover experiment's paused leader does, or an admin) is put back: the operator's own record
// of what it wrote must not make it skip the write.
TEST_F(NodeMaintenanceEdgeTest, StatusOverwrittenBySomeoneElseIsWrittenAgain) {
  const std::string node = fresh_node("clobber");
  const std::string cr = "maintenance-edge-clobber";
  TestNamespace ns(kubectl_, "edge-clobber");
  kubectl_.apply(pod_manifest(ns.name(), "only", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=only", 1));

  OperatorProcess& op = start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  ASSERT_TRUE(wait_event(uid, "SucceedMaintenance", std::nullopt, kReact));

  // What a stale writer leaves: the phase of a moment ago and wrong counters.
  kubectl_.must({"patch", "nodemaintenance", cr, "--subresource=status", "--type=merge", "-p",
                 R"({"status":{"phase":"Running","evictionPods":0,"drainProgress":0}})"});
  ASSERT_TRUE(wait_until(
      "the status written again", kReact,
      [&] {
        nm = get_node_maintenance(cr);
        return nm && phase_of(*nm) == "Succeeded" &&
               maintenance_of(*nm).status.eviction_pods == 1 &&
               maintenance_of(*nm).status.drain_progress == 100;
      },
      [&] { return describe_status(nm); }));
  EXPECT_EQ(maintenance_of(*nm).status.total_pods, 1);
  EXPECT_EQ(event_count(uid, "SucceedMaintenance"), 1) << "SucceedMaintenance repeated";
  EXPECT_TRUE(op.wait_for_log("the status was written by someone else", kReact));
}

// ---- 5. A pod under two PDBs (docs/design.md §2.4: 500 → MultiplePDBs)
// ----------------------------------

TEST_F(NodeMaintenanceEdgeTest, PodUnderTwoPdbsIsReportedUntilOneIsDeleted) {
  const std::string node = fresh_node("twopdbs");
  const std::string cr = "maintenance-edge-twopdbs";
  TestNamespace ns(kubectl_, "edge-twopdbs");
  kubectl_.apply(pod_manifest(ns.name(), "shared", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=shared", 1));
  // Neither budget would refuse on its own (minAvailable 0); two of them make the API refuse.
  kubectl_.apply(pdb_manifest(ns.name(), "pdb-a", 0, "shared"));
  kubectl_.apply(pdb_manifest(ns.name(), "pdb-b", 0, "shared"));
  ASSERT_TRUE(wait_pdb(ns.name(), "pdb-a", 1, 1));
  ASSERT_TRUE(wait_pdb(ns.name(), "pdb-b", 1, 1));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_pending_reason(cr, "shared", "MultiplePDBs");
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running");
  EXPECT_NE(maintenance_of(*nm).status.last_error, "");

  std::vector<Event> events;
  std::optional<Event> drain_error;
  EXPECT_TRUE(wait_until(
      "a DrainError event with the API's multiple-PDB refusal", kReact,
      [&] {
        events = events_of(uid);
        for (const auto& e : events) {
          if (e.reason == "DrainError" &&
              e.message.find("more than one PodDisruptionBudget") != std::string::npos) {
            drain_error = e;
            return true;
          }
        }
        return false;
      },
      [&] {
        std::string seen;
        for (const auto& e : events) seen += "\n  " + e.type + " " + e.reason + ": " + e.message;
        return seen;
      }));
  if (drain_error) {
    EXPECT_EQ(drain_error->type, "Warning");
  }
  auto p = pod(ns.name(), "shared");
  ASSERT_TRUE(p);
  EXPECT_FALSE(is_terminating(*p));

  kubectl_.must({"delete", "pdb", "pdb-b", "-n", ns.name()});
  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  EXPECT_EQ(maintenance_of(*nm).status.eviction_pods, 1);
  EXPECT_EQ(maintenance_of(*nm).status.last_error, "");
  p = pod(ns.name(), "shared");
  EXPECT_TRUE(!p || is_terminating(*p));
}

// ---- 6. Node deleted mid-maintenance and re-created (docs/design.md §2.1, §2.7)
// -------------------------

TEST_F(NodeMaintenanceEdgeTest, NodeDeletedMidMaintenanceFailsAndRecoversWhenItReturns) {
  const std::string node = fresh_node("vanish");
  const std::string cr = "maintenance-edge-vanish";
  TestNamespace ns(kubectl_, "edge-vanish");
  defer([this, node] {
    (void)kubectl_.run(
        {"delete", "lease", "-n", kLeaseNamespace, "node-" + node, "--ignore-not-found"});
  });
  // A PDB-protected pod keeps the maintenance Running.
  kubectl_.apply(pod_manifest(ns.name(), "held", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=held", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "held-pdb", 1, "held"));
  ASSERT_TRUE(wait_pdb(ns.name(), "held-pdb", 1, 0));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_pending_reason(cr, "held", "BlockedByPDB"));
  ASSERT_TRUE(node_lease_held(node));
  ASSERT_TRUE(slot_holders().contains(slot_of(cr, node)));

  kubectl_.must({"delete", "node", node, "--timeout=60s"});
  auto nm = wait_phase(cr, {"Failed"}, kReact);
  ASSERT_TRUE(nm);
  EXPECT_EQ(maintenance_of(*nm).status.last_error, "node \"" + node + "\" not found");
  auto failed = wait_event(uid, "FailedMaintenance", std::nullopt, kReact);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->type, "Warning");
  EXPECT_TRUE(wait_until("the node lease and the slot of " + cr + " released", kReact, [&] {
    return !node_lease_held(node) && !slot_holders().contains(slot_of(cr, node));
  }));

  // Before the node returns, Node Health Check takes its lease: the maintenance must go back
  // to Pending and wait there (a deterministic way to see Pending), then run once it is free.
  ASSERT_TRUE(wait_until("no lease node-" + node, kReact,
                         [&] { return !lease(kLeaseNamespace, "node-" + node); }));
  kubectl_.apply(foreign_node_lease_manifest(node, kForeignHolder));
  kubectl_.apply(node_manifest(node));
  ASSERT_TRUE(wait_node_ready(node));
  nm = wait_phase(cr, {"Pending"}, kReact);
  ASSERT_TRUE(nm);
  // Pending: nothing on the node is touched (docs/design.md §1.2), and the status says so.
  EXPECT_NE(condition_status(*nm, "Cordoned"), "True") << describe_status(nm);
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_FALSE(has_taint_key(*n, kDrainTaintKey)) << describe_node(*n);
  EXPECT_FALSE(unschedulable(*n)) << describe_node(*n);

  kubectl_.must({"delete", "lease", "-n", kLeaseNamespace, "node-" + node});
  nm = wait_phase(cr, {"Running", "Succeeded"}, kReact);
  ASSERT_TRUE(nm);
  EXPECT_TRUE(wait_until("node " + node + " cordoned and tainted again", kReact, [&] {
    n = kubectl_.get_json({"node", node});
    return n && unschedulable(*n) && drain_tainted(*n);
  }));
  EXPECT_TRUE(node_lease_held(node));
  // Admitted afresh from Pending (docs/design.md §2.3): announced as a new cordon, not as an admin
  // having undone one (MaintenanceReapplied is for a node changed while the maintenance holds it).
  EXPECT_TRUE(wait_until("a second NodeCordoned event", kReact,
                         [&] { return event_count(uid, "NodeCordoned") >= 2; }));
  EXPECT_EQ(event_count(uid, "MaintenanceReapplied"), 0)
      << "the re-created node was reported as someone undoing the maintenance";

  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
}

// ---- 7. No head-of-line blocking by a control-plane maintenance (docs/design.md §2.2)
// -------------------

TEST_F(NodeMaintenanceEdgeTest, ControlPlaneWaitingOnQuorumDoesNotBlockAWorker) {
  const std::string down = "node-master-01";
  const std::string cp_node = "node-master-02";
  const std::string cp_cr = "maintenance-edge-master-02";
  const std::string worker = fresh_node("worker");
  const std::string worker_cr = "maintenance-edge-worker";
  restore_node_at_end(down);
  restore_node_at_end(cp_node);

  // The etcd members the gate reads, kept until TearDown has deleted the maintenances.
  auto etcd = std::make_shared<KubeadmEtcd>(kubectl_, kControlPlaneNodes);
  defer([etcd]() mutable { etcd.reset(); });
  ASSERT_TRUE(etcd->ready());

  ASSERT_TRUE(make_not_ready_and_wait(kubectl_, down, kReact));

  start();  // default budget: one maintenance at a time
  const std::string cp_uid = create(cp_cr, cp_node);
  ASSERT_FALSE(cp_uid.empty());
  ASSERT_TRUE(wait_event(cp_uid, "BlockedByEtcdQuorum",
                         "etcd quorum is not maintained when node " + cp_node + " is remediated",
                         kReact));
  const std::string worker_uid = create(worker_cr, worker);
  ASSERT_FALSE(worker_uid.empty());

  EXPECT_TRUE(wait_phase(worker_cr, {"Running", "Succeeded"}, kReact))
      << "the worker maintenance is held behind the older control-plane one";
  auto cp = get_node_maintenance(cp_cr);
  ASSERT_TRUE(cp);
  EXPECT_EQ(phase_of(*cp), "Pending");
  EXPECT_FALSE(slot_holders().contains(slot_of(cp_cr, cp_node)))
      << "the waiting control-plane maintenance holds a budget slot";
  auto n = get_node(cp_node);
  ASSERT_TRUE(n);
  EXPECT_FALSE(has_taint_key(*n, kDrainTaintKey)) << describe_node(*n);
  EXPECT_FALSE(unschedulable(*n)) << describe_node(*n);
  n = get_node(worker);
  ASSERT_TRUE(n);
  EXPECT_TRUE(drain_tainted(*n)) << describe_node(*n);

  remove(worker_cr);
  EXPECT_TRUE(wait_gone(worker_cr, kReact));
  EXPECT_TRUE(wait_node_restored(worker, /*stays_cordoned=*/false, kReact));
  cp = get_node_maintenance(cp_cr);
  ASSERT_TRUE(cp);
  EXPECT_EQ(phase_of(*cp), "Pending") << "admitted while etcd quorum is unsafe";
}

// ---- 8. Adopting upstream's drain taint (docs/design.md §2.8)
// -------------------------------------------

TEST_F(NodeMaintenanceEdgeTest, UpstreamTaintWithoutPriorStateIsAdoptedAndUncordonedOnDelete) {
  const std::string node = fresh_node("upstream");
  const std::string cr = "maintenance-edge-upstream";
  // What upstream NMO leaves on a node it maintains: cordoned, `medik8s.io/drain:NoSchedule`
  // without a value, and none of our annotations.
  kubectl_.must({"taint", "node", node, std::string(kDrainTaintKey) + ":NoSchedule"});
  kubectl_.must({"cordon", node});

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_TRUE(unschedulable(*n)) << describe_node(*n);
  EXPECT_TRUE(has_taint_key(*n, kDrainTaintKey)) << describe_node(*n);
  // Taints match by key and effect: no second drain taint.
  EXPECT_EQ(drain_taint_count(*n), 1u) << describe_node(*n);

  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
  // Like upstream on delete: uncordoned, and both taints gone (kube-controller-manager drops
  // its unschedulable taint once the node is schedulable).
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  std::optional<json::value> after;
  EXPECT_TRUE(wait_until(
      "no drain or unschedulable taint on " + node, kReact,
      [&] {
        after = kubectl_.get_json({"node", node});
        return after && !has_taint_key(*after, kDrainTaintKey) &&
               !has_taint_key(*after, kUnschedulableTaintKey);
      },
      [&] { return after ? describe_node(*after) : std::string("no node"); }));
  auto removed = wait_event(uid, "RemovedMaintenance", std::nullopt, kReact);
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->type, "Normal");
}

// ---- 10. The node lease taken by another holder after the drain (docs/design.md §3.1)
// --------------------

TEST_F(NodeMaintenanceEdgeTest, NodeLeaseTakenByAnotherHolderFailsAfterMoreThanThreeChecks) {
  const std::string node = fresh_node("leaselost");
  const std::string cr = "maintenance-edge-leaselost";
  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  ASSERT_TRUE(node_lease_held(node));

  // Node Health Check takes the lease over (as if ours had expired).
  kubectl_.apply(foreign_node_lease_manifest(node, "NodeHealthCheck-x"));
  std::optional<json::value> nm;
  ASSERT_TRUE(wait_until(
      "the maintenance Failed after the lease was lost", kDrain,
      [&] {
        nm = get_node_maintenance(cr);
        return nm && phase_of(*nm) == "Failed";
      },
      [&] { return describe_status(nm); }));
  EXPECT_EQ(maintenance_of(*nm).status.last_error,
            "maintenance failed: lease could not be extended after 4 attempts");
  EXPECT_EQ(maintenance_of(*nm).status.error_on_lease_count, 4);
  auto failed =
      wait_event(uid, "FailedMaintenance",
                 "maintenance failed: lease could not be extended after 4 attempts", kReact);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->type, "Warning");
  // Upstream's behaviour: the maintenance is undone, and the other holder keeps its lease.
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  auto held = lease(std::string(kLeaseNamespace), "node-" + node);
  ASSERT_TRUE(held);
  EXPECT_EQ(string_at(*held, "/spec/holderIdentity"), "NodeHealthCheck-x");

  kubectl_.must({"delete", "lease", "-n", std::string(kLeaseNamespace), "node-" + node});
  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
}

// ---- 9. A burst of twenty maintenances (docs/design.md §2.6, §2.7)
// --------------------------------------

TEST_F(NodeMaintenanceEdgeTest, TwentyCreatedAndDeletedInABurstLeaveNothingBehind) {
  constexpr std::size_t kCount = 20;
  constexpr std::size_t kBudget = 5;
  const auto nodes = fresh_nodes("burst", kCount);
  ASSERT_EQ(nodes.size(), kCount);
  std::vector<std::string> crs;
  for (std::size_t i = 0; i < kCount; ++i) crs.push_back("maintenance-edge-burst-" + nodes[i]);

  start({"--max-parallel-maintenances", std::to_string(kBudget)});
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_FALSE(create(crs[i], nodes[i]).empty());

  // Wait until the budget is full, so that the deletions hit admitted maintenances as well as
  // waiting ones.
  std::size_t active = 0;
  ASSERT_TRUE(wait_until(
      std::to_string(kBudget) + " maintenances admitted", kReact,
      [&] {
        active = 0;
        auto list = kubectl_.get_json({"nodemaintenances"});
        if (!list) return false;
        for (const auto& item : list->at("items").as_array()) {
          const std::string phase = phase_of(item);
          if (phase == "Running" || phase == "Succeeded") ++active;
        }
        EXPECT_LE(active, kBudget) << "budget exceeded";
        return active == kBudget;
      },
      [&] { return std::to_string(active) + " active"; }));

  std::vector<std::string> args{"delete", "nodemaintenance", "--wait=false"};
  args.insert(args.end(), crs.begin(), crs.end());
  kubectl_.must(args);
  std::size_t left = kCount;
  ASSERT_TRUE(wait_until(
      "all twenty maintenances gone (finalizers removed)", 90s,
      [&] {
        left = 0;
        for (const auto& cr : crs) {
          if (get_node_maintenance(cr)) ++left;
        }
        return left == 0;
      },
      [&] { return std::to_string(left) + " left"; }));

  for (const auto& node : nodes) {
    EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
  }
  std::vector<std::string> leftover;
  EXPECT_TRUE(wait_until(
      "no lease of the burst left", kReact,
      [&] {
        leftover.clear();
        for (const auto& l : leases_in(kubectl_, kLeaseNamespace)) {
          const json::value v = l;
          const std::string name = name_of(v);
          for (const auto& node : nodes) {
            if (name == "node-" + node) leftover.push_back(name);
          }
        }
        for (const auto& holder : slot_holders()) {
          for (std::size_t i = 0; i < kCount; ++i) {
            if (holder == slot_of(crs[i], nodes[i])) leftover.push_back(holder);
          }
        }
        return leftover.empty();
      },
      [&] {
        std::string out;
        for (const auto& l : leftover) out += "[" + l + "] ";
        return out;
      }));
  std::vector<std::string> tainted;
  EXPECT_TRUE(wait_until(
      "no unschedulable taint left on the burst's nodes", kReact,
      [&] {
        tainted.clear();
        for (const auto& node : nodes) {
          auto n = kubectl_.get_json({"node", node});
          if (!n || has_taint_key(*n, kUnschedulableTaintKey)) tainted.push_back(node);
        }
        return tainted.empty();
      },
      [&] { return std::to_string(tainted.size()) + " nodes still tainted"; }));
}

// ---- 11. An eviction deferred by an admission webhook (docs/design.md §2.4: 429 webhook →
// deferred) ------

// A validating admission webhook served in-process by our production HTTPS server, as KubeVirt
// answers evictions of a VM's launcher pod while it live-migrates: every AdmissionReview is
// refused with code 429 until allow() is called. Serves a certificate for 127.0.0.1 signed by
// a CA made here with openssl (ca_pem() for the caBundle). The refusal (code, reason, message)
// can be chosen, for webhooks that refuse other requests than evictions (test 12). After
// hold(), every review is allowed but answered only after the hold, and the most reviews held
// at once is counted.
class DeferringWebhook {
 public:
  static constexpr const char* kMessage =
      "eviction of the VM is deferred: live migration in progress";

  explicit DeferringWebhook(int code = 429, std::string reason = "TooManyRequests",
                            std::string message = kMessage)
      : code_(code), reason_(std::move(reason)), message_(std::move(message)) {
    ca_base64_ = kube::base64_encode(certificate_.ca_pem());

    http::ServerOptions options;
    options.name = "edge-webhook";
    options.bind_address = "127.0.0.1";
    options.port = 0;
    options.cert_dir = certificate_.dir().string();
    auto started = http::Server::start(
        io_.executor(), options, [this](http::Request request) -> asio::awaitable<http::Response> {
          const std::chrono::milliseconds hold = hold_.load();
          if (hold.count() > 0) {
            const int now = ++held_;
            max_held_ = std::max(max_held_.load(), now);  // one io thread: no race
            const auto executor = co_await asio::this_coro::executor;
            asio::steady_timer timer(executor, hold);
            co_await timer.async_wait(asio::use_awaitable);
            --held_;
          }
          co_return answer(request);
        });
    if (!started.has_value()) {
      ADD_FAILURE() << "the webhook server did not start: " << started.error().describe();
      return;
    }
    server_ = std::move(*started);
  }
  DeferringWebhook(const DeferringWebhook&) = delete;
  DeferringWebhook& operator=(const DeferringWebhook&) = delete;
  ~DeferringWebhook() {
    if (server_) {
      io_.spawn(server_->stop(std::chrono::milliseconds(1000))).wait();
      server_.reset();
    }
  }

  [[nodiscard]] bool started() const { return server_ != nullptr; }
  [[nodiscard]] std::uint16_t port() const { return server_ ? server_->port() : 0; }
  [[nodiscard]] const std::string& ca_base64() const { return ca_base64_; }
  void allow() { allowed_ = true; }
  // From now on every review is allowed, `span` after it came.
  void hold(std::chrono::milliseconds span) {
    hold_ = span;
    allow();
  }
  [[nodiscard]] int reviews() const { return reviews_; }
  [[nodiscard]] int max_held() const { return max_held_; }

 private:
  http::Response answer(const http::Request& request) {
    ++reviews_;
    boost::system::error_code ec;
    const json::value review = json::parse(request.body, ec);
    const std::string uid = ec ? std::string() : string_at(review, "/request/uid");
    json::object response{{"uid", uid}, {"allowed", allowed_.load()}};
    if (!allowed_) {
      response["status"] =
          json::object{{"code", code_}, {"reason", reason_}, {"message", message_}};
    }
    return http::Response{
        .status = 200,
        .headers = {{"Content-Type", "application/json"}},
        .body = json::serialize(json::object{{"apiVersion", "admission.k8s.io/v1"},
                                             {"kind", "AdmissionReview"},
                                             {"response", std::move(response)}})};
  }

  const int code_;
  const std::string reason_;
  const std::string message_;
  ServingCertificate certificate_;
  std::string ca_base64_;
  std::atomic<bool> allowed_{false};
  std::atomic<int> reviews_{0};
  std::atomic<std::chrono::milliseconds> hold_{std::chrono::milliseconds(0)};
  std::atomic<int> held_{0};
  std::atomic<int> max_held_{0};
  http::test::IoThread io_;  // before server_: the server is destroyed first
  std::unique_ptr<http::Server> server_;
};

TEST_F(NodeMaintenanceEdgeTest, EvictionRefusedWithTooManyRequestsByAWebhookIsDeferred) {
  const std::string node = fresh_node("deferred");
  const std::string cr = "maintenance-edge-deferred";
  const std::string webhook_name = "eviction-deferral.e2e.medik8s.io";
  TestNamespace ns(kubectl_, "edge-deferred");
  kubectl_.apply(pod_manifest(ns.name(), "virt-launcher", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=virt-launcher", 1));

  DeferringWebhook webhook;
  ASSERT_TRUE(webhook.started());
  // Scoped to the test's namespace, so evictions of other tests never reach it. Deleted when the
  // test body ends (before the server stops) and again in TearDown, whatever happened.
  const auto configuration_guard =
      register_webhook("nmo-e2e-eviction-deferral", webhook_name, "CREATE", "pods/eviction",
                       ns.name(), webhook.port(), webhook.ca_base64());

  // The API server picks the configuration up asynchronously: ready once a dry-run eviction of
  // the pod is refused by the webhook.
  const std::string expected = "admission webhook \"" + webhook_name +
                               "\" denied the request: " + DeferringWebhook::kMessage;
  ProcessResult probe;
  ASSERT_TRUE(wait_dry_run_eviction_refused(ns.name(), "virt-launcher", expected, probe));
  EXPECT_NE(probe.err.find("TooManyRequests"), std::string::npos) << probe.err;

  const int reviews_before_operator = webhook.reviews();
  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_pending_reason(cr, "virt-launcher", "EvictionDeferred");
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running");
  auto ref = pending_ref(*nm, "virt-launcher");
  ASSERT_TRUE(ref);
  EXPECT_NE(ref->message.find(DeferringWebhook::kMessage), std::string::npos) << ref->message;

  auto drain_error = wait_event(uid, "DrainError", std::nullopt, kReact);
  ASSERT_TRUE(drain_error);
  EXPECT_EQ(drain_error->type, "Warning");
  EXPECT_EQ(drain_error->message, expected);
  EXPECT_NE(drain_error->message.find(DeferringWebhook::kMessage), std::string::npos);

  // Retried with backoff (5 s after the first refusal) and deferred again. While a retry is in
  // flight the pod is listed as Evicting, so wait for the reason to come back.
  ASSERT_TRUE(wait_until("the deferred eviction retried", kReact,
                         [&] { return webhook.reviews() >= reviews_before_operator + 2; }));
  nm = wait_pending_reason(cr, "virt-launcher", "EvictionDeferred");
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running") << describe_status(nm);
  auto p = pod(ns.name(), "virt-launcher");
  ASSERT_TRUE(p);
  EXPECT_FALSE(is_terminating(*p));

  // The migration is over: the next retry is admitted and the drain finishes.
  webhook.allow();
  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm) << describe_status(get_node_maintenance(cr));
  EXPECT_EQ(maintenance_of(*nm).status.eviction_pods, 1);
  EXPECT_FALSE(pending_ref(*nm, "virt-launcher"));
  p = pod(ns.name(), "virt-launcher");
  EXPECT_TRUE(!p || is_terminating(*p));
}

// ---- 11b. KubeVirt VMs whose eviction would shut them down (docs/design.md §2.9) ----------
//
// KubeVirt's own CRDs serve kubevirt.io/v1 (KubeVirtApi); VirtControllerStandIn plays
// virt-controller and virt-handler for the migrations the operator creates.

// Eviction requests the API server has received so far (any answer), from its own
// apiserver_request_total: the tests compare it before and after.
std::int64_t evictions_received(const Kubectl& kubectl) {
  const ProcessResult metrics = kubectl.run({"get", "--raw", "/metrics"});
  EXPECT_TRUE(metrics.ok()) << metrics.err;
  std::int64_t total = 0;
  std::size_t at = 0;
  const std::string& text = metrics.out;
  while ((at = text.find("apiserver_request_total{", at)) != std::string::npos) {
    const std::size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    at = end;
    if (line.find("subresource=\"eviction\"") == std::string::npos) continue;
    total += static_cast<std::int64_t>(std::stod(line.substr(line.rfind(' ') + 1)));
  }
  return total;
}

// What `kubectl maintenance plan NODE -o json` predicts for each pod of `node`, as
// "<action> <reason>" by pod name: the tests check it against what then happens.
std::map<std::string, std::string> planned(const std::string& node) {
  const ProcessResult r = run_process({NMO_CLI_BIN, "plan", node, "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> out;
  if (r.exit_code != 0) return out;
  const json::value plan = json::parse(r.out);
  for (const json::value& p : plan.at("pods").as_array()) {
    out[string_at(p, "/name")] = string_at(p, "/action") + " " + string_at(p, "/reason");
  }
  return out;
}

// Story chapter 4, solved by the operator: the VM without an eviction strategy, which an
// eviction would shut down, is live-migrated by a migration the operator creates (labelled and
// owned by the maintenance), its pod is never evicted while the VM runs in it, and the VM ends on
// another node. The VM that cannot migrate is held (VMWouldShutDown) until the maintenance
// allows shutting it down.
TEST_F(NodeMaintenanceEdgeTest, TheStorysVmIsLiveMigratedByTheOperatorAndOneThatCannotIsHeld) {
  const KubeVirtApi kubevirt(kubectl_);
  ASSERT_TRUE(kubevirt.served());
  const std::vector<std::string> nodes = fresh_nodes("vm", 2);
  const std::string& node = nodes[0];
  const std::string& other = nodes[1];
  const std::string cr = "maintenance-edge-vm";
  TestNamespace ns(kubectl_, "edge-vm");
  place_vm(kubectl_, ns.name(), "vm-order-processing", node, "", "True");
  place_vm(kubectl_, ns.name(), "db", node, "None", "False");
  kubectl_.apply(pod_manifest(ns.name(), "web", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=web", 1));
  ASSERT_TRUE(wait_running(ns.name(), "kubevirt.io=virt-launcher", 2));
  const VirtControllerStandIn virt(kubectl_, ns.name());
  const std::string source = "virt-launcher-vm-order-processing-x";
  const auto plan = planned(node);
  EXPECT_EQ(plan.at(source), "evict MigratingVM");
  EXPECT_EQ(plan.at("virt-launcher-db-x"), "block VMWouldShutDown");

  start();
  const std::int64_t evictions_before = evictions_received(kubectl_);
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  const std::optional<std::string> migration =
      virt.wait_for_migration("vm-order-processing", 1, kReact);
  ASSERT_TRUE(migration);
  EXPECT_EQ(*migration, "vm-order-processing-maintenance-" + uid.substr(0, 8) + "-1");
  const auto migrations = virt.migrations("vm-order-processing");
  ASSERT_EQ(migrations.size(), 1U);
  EXPECT_EQ(
      string_at(migrations[0], "/metadata/labels/nodemaintenance.medik8s.io~1maintenance-uid"),
      uid);
  EXPECT_EQ(string_at(migrations[0], "/metadata/ownerReferences/0/uid"), uid);
  EXPECT_EQ(string_at(migrations[0], "/metadata/ownerReferences/0/kind"), "NodeMaintenance");
  ASSERT_TRUE(wait_event(uid, "MigratingVM",
                         "Live-migrating VMI " + ns.name() + "/vm-order-processing off node " +
                             node + " (migration " + *migration +
                             ") instead of evicting its pod, which would shut it down",
                         kReact));
  const std::string db_why = "VMI " + ns.name() +
                             "/db cannot live-migrate: cannot migrate VMI: PVC db-disk is not "
                             "shared and has eviction strategy None: evicting its pod would shut "
                             "it down; set vmEvictionPolicy AllowShutdown on the maintenance to "
                             "allow that";
  ASSERT_TRUE(wait_event(uid, "VMWouldShutDown", db_why, kReact));
  ASSERT_TRUE(wait_until("pod web evicted", kDrain, [&] {
    auto p = pod(ns.name(), "web");
    return !p || is_terminating(*p);
  }));

  // virt-controller runs it: the pod says so, and is not evicted.
  virt.run(*migration);
  auto nm = wait_pending_reason(cr, source, "MigratingVM");
  ASSERT_TRUE(nm);
  ASSERT_TRUE(wait_until("the migration's phase in the status", kReact, [&] {
    nm = get_node_maintenance(cr);
    auto ref = nm ? pending_ref(*nm, source) : std::nullopt;
    return ref && ref->message == "live migration " + *migration + " of VMI " + ns.name() +
                                      "/vm-order-processing: Running";
  }));
  EXPECT_EQ(phase_of(*nm), "Running");
  for (const std::string& name : {source, std::string("virt-launcher-db-x")}) {
    auto p = pod(ns.name(), name);
    ASSERT_TRUE(p) << name << " was evicted";
    EXPECT_FALSE(is_terminating(*p)) << name;
  }
  // Only web's eviction so far: the VMs' pods were never asked for.
  EXPECT_EQ(evictions_received(kubectl_) - evictions_before, 1);

  // The VM moves to the other node and its source pod completes.
  virt.succeed(*migration, "vm-order-processing", source, other);
  ASSERT_TRUE(wait_until("only the db VM held", kDrain, [&] {
    nm = get_node_maintenance(cr);
    return nm && !pending_ref(*nm, source) && pending_ref(*nm, "virt-launcher-db-x");
  }));
  EXPECT_EQ(phase_of(*nm), "Running");
  auto vmi = kubectl_.get_json(
      {"virtualmachineinstances.kubevirt.io", "vm-order-processing", "-n", ns.name()});
  ASSERT_TRUE(vmi);
  EXPECT_EQ(string_at(*vmi, "/status/nodeName"), other);
  EXPECT_EQ(virt.migrations("vm-order-processing").size(), 1U);

  // Shutting `db` down is allowed: its pod is evicted and the drain finishes.
  kubectl_.must({"patch", "nodemaintenance", cr, "--type=merge", "-p",
                 R"({"spec":{"vmEvictionPolicy":"AllowShutdown"}})"});
  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm) << describe_status(get_node_maintenance(cr));
  EXPECT_EQ(maintenance_of(*nm).status.total_pods, 3);
  auto db = pod(ns.name(), "virt-launcher-db-x");
  EXPECT_TRUE(!db || is_terminating(*db));
  EXPECT_EQ(event_count(uid, "VMWouldShutDown"), 1);
  EXPECT_EQ(event_count(uid, "MigratingVM"), 1);
  EXPECT_EQ(event_count(uid, "MigrationFailed"), 0);
  // The VM's target pod runs on the other node, untouched.
  auto target = pod(ns.name(), "virt-launcher-vm-order-processing-y");
  ASSERT_TRUE(target);
  EXPECT_FALSE(is_terminating(*target));
  // In order: the drain began, the VM was migrated, the drain succeeded (Events carry seconds).
  std::map<std::string, std::string> at;
  for (const Event& e : events_of(uid)) at[e.reason] = e.first_timestamp;
  ASSERT_TRUE(at.contains("BeginEviction") && at.contains("SucceedMaintenance"));
  EXPECT_LE(at["BeginEviction"], at["MigratingVM"]);
  EXPECT_LE(at["MigratingVM"], at["SucceedMaintenance"]);
}

// A migration that fails is announced (MigrationFailed, with KubeVirt's reason) and tried again
// after a backoff; the third attempt succeeds. Then a second VM's migration is cancelled by
// deleting the maintenance mid-migration, and RemovedMaintenance names it.
TEST_F(NodeMaintenanceEdgeTest, AFailedMigrationIsRetriedAndDeletingTheMaintenanceCancelsOne) {
  const KubeVirtApi kubevirt(kubectl_);
  ASSERT_TRUE(kubevirt.served());
  const std::vector<std::string> nodes = fresh_nodes("vm-retry", 2);
  const std::string& node = nodes[0];
  const std::string cr = "maintenance-edge-vm-retry";
  TestNamespace ns(kubectl_, "edge-vm-retry");
  place_vm(kubectl_, ns.name(), "order", node, "", "True");
  ASSERT_TRUE(wait_running(ns.name(), "kubevirt.io=virt-launcher", 1));
  const VirtControllerStandIn virt(kubectl_, ns.name());
  EXPECT_EQ(planned(node).at("virt-launcher-order-x"), "evict MigratingVM");

  start();
  const std::int64_t evictions_before = evictions_received(kubectl_);
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const auto failing = virt.wait_for_migration("order", attempt, kDrain);
    ASSERT_TRUE(failing) << "attempt " << attempt;
    virt.fail(*failing, "no node can take the VM (attempt " + std::to_string(attempt) + ")");
    ASSERT_TRUE(wait_until("MigrationFailed for attempt " + std::to_string(attempt), kReact,
                           [&] { return event_count(uid, "MigrationFailed") == attempt; }));
  }
  const std::string first_failure = "live migration " + ns.name() + "/order-maintenance-" +
                                    uid.substr(0, 8) + "-1 of VMI " + ns.name() +
                                    "/order failed: no node can take the VM (attempt 1); attempt "
                                    "2 in 5s";
  const auto failed = events_of(uid);
  const auto first = std::find_if(failed.begin(), failed.end(), [&](const Event& e) {
    return e.reason == "MigrationFailed" && e.message == first_failure;
  });
  ASSERT_NE(first, failed.end()) << "no MigrationFailed event says: " << first_failure;
  EXPECT_EQ(first->type, "Warning");
  const auto third = virt.wait_for_migration("order", 3, kDrain);
  ASSERT_TRUE(third);
  virt.succeed(*third, "order", "virt-launcher-order-x", nodes[1]);
  auto nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm) << describe_status(get_node_maintenance(cr));
  EXPECT_EQ(virt.migrations("order").size(), 3U);
  // Three migrations, and not one eviction: the VM's pod completed by itself.
  EXPECT_EQ(evictions_received(kubectl_) - evictions_before, 0);

  // A second VM arrives on the node (bound to it, as a taint does not stop that); its migration
  // starts, and the maintenance is deleted while it runs.
  place_vm(kubectl_, ns.name(), "late", node, "", "True");
  const auto late = virt.wait_for_migration("late", 1, kDrain);
  ASSERT_TRUE(late);
  virt.run(*late);
  remove(cr);
  ASSERT_TRUE(wait_event(uid, "RemovedMaintenance",
                         "Node maintenance removed for node " + node +
                             "; cancelled the live migrations it had started: " + ns.name() + "/" +
                             *late,
                         kReact));
  EXPECT_TRUE(
      wait_until("the migration deleted", kReact, [&] { return virt.migrations("late").empty(); }));
  // The finished ones stay until the garbage collector takes them with their owner.
  EXPECT_TRUE(wait_node_restored(node, false, kReact));
}

// A VM with strategy LiveMigrate: KubeVirt's pod-eviction webhook (played in-process, with
// KubeVirt's own text) defers the eviction and KubeVirt migrates the VM itself; the operator
// reports MigratingVM, creates no migration of its own, and finishes once the VM has left.
TEST_F(NodeMaintenanceEdgeTest, KubeVirtsOwnMigrationOfALiveMigrateVmIsWaitedFor) {
  const KubeVirtApi kubevirt(kubectl_);
  ASSERT_TRUE(kubevirt.served());
  const std::vector<std::string> nodes = fresh_nodes("vm-kubevirt", 2);
  const std::string& node = nodes[0];
  const std::string cr = "maintenance-edge-vm-kubevirt";
  const std::string webhook_name = "virt-launcher-eviction-interceptor.e2e.medik8s.io";
  TestNamespace ns(kubectl_, "edge-vm-kubevirt");
  place_vm(kubectl_, ns.name(), "web", node, "LiveMigrate", "True");
  ASSERT_TRUE(wait_running(ns.name(), "kubevirt.io=virt-launcher", 1));
  const std::string evacuation = "Eviction triggered evacuation of VMI \"" + ns.name() + "/web\"";
  DeferringWebhook webhook(429, "TooManyRequests", evacuation);
  ASSERT_TRUE(webhook.started());
  const auto configuration_guard =
      register_webhook("nmo-e2e-vm-evacuation", webhook_name, "CREATE", "pods/eviction", ns.name(),
                       webhook.port(), webhook.ca_base64());
  ProcessResult probe;
  ASSERT_TRUE(wait_dry_run_eviction_refused(ns.name(), "virt-launcher-web-x", evacuation, probe));
  EXPECT_EQ(planned(node).at("virt-launcher-web-x"), "evict MigratingVM");

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_pending_reason(cr, "virt-launcher-web-x", "MigratingVM");
  ASSERT_TRUE(nm) << describe_status(get_node_maintenance(cr));
  EXPECT_NE(pending_ref(*nm, "virt-launcher-web-x")->message.find(evacuation), std::string::npos);
  EXPECT_EQ(phase_of(*nm), "Running");

  // KubeVirt's own migration (not the operator's) moves the VM.
  const VirtControllerStandIn virt(kubectl_, ns.name());
  EXPECT_TRUE(virt.migrations("web").empty());
  kubectl_.apply(json::serialize(
      json::object{{"apiVersion", "kubevirt.io/v1"},
                   {"kind", "VirtualMachineInstanceMigration"},
                   {"metadata", {{"name", "kubevirt-evacuation-web"}, {"namespace", ns.name()}}},
                   {"spec", {{"vmiName", "web"}}}}));
  virt.succeed("kubevirt-evacuation-web", "web", "virt-launcher-web-x", nodes[1]);
  nm = wait_phase(cr, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm) << describe_status(get_node_maintenance(cr));
  EXPECT_EQ(virt.migrations("web").size(), 1U);
  EXPECT_EQ(event_count(uid, "MigratingVM"), 0);
}

// KubeVirt installed a moment after the operator last looked: a maintenance deleted just before
// found no KubeVirt, and the next drain must still see the VM (the operator never trusts "not
// served" from an earlier step). Without KubeVirt a virt-launcher pod is a pod like any other.
TEST_F(NodeMaintenanceEdgeTest, KubeVirtInstalledAMomentAgoIsNotTakenForAbsent) {
  const std::vector<std::string> nodes = fresh_nodes("vm-late-api", 3);
  TestNamespace ns(kubectl_, "edge-vm-late-api");
  kubectl_.apply(launcher_manifest(ns.name(), "early", nodes[0]));
  ASSERT_TRUE(wait_running(ns.name(), "kubevirt.io=virt-launcher", 1));
  start();
  const std::string first = "maintenance-edge-vm-late-api-1";
  ASSERT_FALSE(create(first, nodes[0]).empty());
  auto nm = wait_phase(first, {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm) << describe_status(get_node_maintenance(first));
  auto early = pod(ns.name(), "virt-launcher-early-x");
  EXPECT_TRUE(!early || is_terminating(*early));
  remove(first);
  ASSERT_TRUE(wait_gone(first, kReact));

  const KubeVirtApi kubevirt(kubectl_);
  ASSERT_TRUE(kubevirt.served());
  place_vm(kubectl_, ns.name(), "late", nodes[1], "", "True");
  ASSERT_TRUE(wait_running(ns.name(), "kubevirt.io=virt-launcher", 1));
  const std::string second = "maintenance-edge-vm-late-api-2";
  ASSERT_FALSE(create(second, nodes[1]).empty());
  const VirtControllerStandIn virt(kubectl_, ns.name());
  ASSERT_TRUE(virt.wait_for_migration("late", 1, kReact));
  auto late = pod(ns.name(), "virt-launcher-late-x");
  ASSERT_TRUE(late);
  EXPECT_FALSE(is_terminating(*late));
}

// KubeVirt's own answers to an eviction: a migration it started is MigratingVM; its refusal of a
// VM with strategy LiveMigrate that cannot migrate is VMNotMigratable, which waiting never
// resolves.
TEST_F(NodeMaintenanceEdgeTest, KubeVirtsRefusalOfAVmThatCannotMigrateIsVmNotMigratable) {
  const std::string node = fresh_node("vm-refused");
  const std::string cr = "maintenance-edge-vm-refused";
  const std::string webhook_name = "virt-launcher-eviction-interceptor.e2e.medik8s.io";
  TestNamespace ns(kubectl_, "edge-vm-refused");
  kubectl_.apply(pod_manifest(ns.name(), "virt-launcher", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=virt-launcher", 1));

  const std::string refusal =
      "VMI db is configured with an eviction strategy but is not live-migratable";
  DeferringWebhook webhook(429, "TooManyRequests", refusal);
  ASSERT_TRUE(webhook.started());
  const auto configuration_guard =
      register_webhook("nmo-e2e-vm-refusal", webhook_name, "CREATE", "pods/eviction", ns.name(),
                       webhook.port(), webhook.ca_base64());
  ProcessResult probe;
  ASSERT_TRUE(wait_dry_run_eviction_refused(
      ns.name(), "virt-launcher",
      "admission webhook \"" + webhook_name + "\" denied the request: " + refusal, probe));

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_pending_reason(cr, "virt-launcher", "VMNotMigratable");
  ASSERT_TRUE(nm) << describe_status(get_node_maintenance(cr));
  EXPECT_EQ(phase_of(*nm), "Running");
  auto ref = pending_ref(*nm, "virt-launcher");
  ASSERT_TRUE(ref);
  EXPECT_NE(ref->message.find(refusal), std::string::npos) << ref->message;
  auto p = pod(ns.name(), "virt-launcher");
  ASSERT_TRUE(p);
  EXPECT_FALSE(is_terminating(*p));
}

// ---- 12. A pod of a namespace being deleted (docs/design.md §2.4: 403 namespace terminating →
// wait) -----

// The namespace controller deletes a terminating namespace's pods at once, so its deletes are
// refused by a webhook served in-process (on pods DELETE in the test's namespace) until the
// test allows them: the pod stays, un-deleted, in a Terminating namespace, where its eviction is
// refused by NamespaceLifecycle with 403. The operator lists it as NamespaceTerminating and
// waits; once the namespace controller may delete it, the drain finishes.
TEST_F(NodeMaintenanceEdgeTest, PodOfATerminatingNamespaceIsReportedAndWaitedFor) {
  const std::string node = fresh_node("nsterm");
  const std::string cr = "maintenance-edge-nsterm";
  const std::string pod_name = "doomed";
  const std::string webhook_name = "pod-deletion-block.e2e.medik8s.io";
  TestNamespace ns(kubectl_, "edge-nsterm");  // its destructor's delete is --ignore-not-found
  kubectl_.apply(pod_manifest(ns.name(), pod_name, node));
  ASSERT_TRUE(wait_running(ns.name(), "app=" + pod_name, 1));

  const std::string block_message = "pod deletion blocked by the e2e test";
  DeferringWebhook webhook(403, "Forbidden", block_message);
  ASSERT_TRUE(webhook.started());
  // Deleted when the test body ends (before the server stops, so the namespace controller can
  // then delete the pod and the namespace goes) and again in TearDown, whatever happened.
  const auto configuration_guard =
      register_webhook("nmo-e2e-pod-deletion-block", webhook_name, "DELETE", "pods", ns.name(),
                       webhook.port(), webhook.ca_base64());

  // Active once a dry-run delete of the pod is refused by the webhook.
  ProcessResult probe;
  ASSERT_TRUE(wait_until(
      "the webhook to refuse a dry-run delete", 30s,
      [&] {
        probe = kubectl_.run(
            {"delete", "pod", pod_name, "-n", ns.name(), "--dry-run=server", "--wait=false"});
        return probe.err.find(block_message) != std::string::npos;
      },
      [&] { return "exit " + std::to_string(probe.exit_code) + ": " + probe.err + probe.out; }));

  // The namespace is deleted; the namespace controller's deletes of the pod are refused.
  kubectl_.must({"delete", "namespace", ns.name(), "--wait=false"});
  std::optional<json::value> namespace_object;
  ASSERT_TRUE(wait_until(
      "namespace " + ns.name() + " Terminating", 30s,
      [&] {
        namespace_object = kubectl_.get_json({"namespace", ns.name()});
        return namespace_object && string_at(*namespace_object, "/status/phase") == "Terminating";
      },
      [&] { return namespace_object ? json::serialize(*namespace_object) : "no namespace"; }));
  ASSERT_TRUE(wait_until("the namespace controller refused by the webhook", 30s,
                         [&] { return webhook.reviews() >= 2; }));
  auto p = pod(ns.name(), pod_name);
  ASSERT_TRUE(p);
  ASSERT_FALSE(is_terminating(*p));

  // What the API server answers to an eviction of that pod (dry run).
  const std::string dry_run_eviction =
      json::serialize(json::object{{"apiVersion", "policy/v1"},
                                   {"kind", "Eviction"},
                                   {"metadata", {{"name", pod_name}, {"namespace", ns.name()}}},
                                   {"deleteOptions", {{"dryRun", json::array{"All"}}}}});
  // NamespaceLifecycle refuses every create in a terminating namespace, evictions included.
  const std::string expected = "pods \"" + pod_name +
                               "\" is forbidden: unable to create new content in namespace " +
                               ns.name() + " because it is being terminated";
  probe = kubectl_.run(
      {"create", "--raw", "/api/v1/namespaces/" + ns.name() + "/pods/" + pod_name + "/eviction",
       "-f", "-"},
      dry_run_eviction);
  EXPECT_FALSE(probe.ok());
  EXPECT_NE(probe.err.find("Error from server (Forbidden): " + expected), std::string::npos)
      << probe.err;

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  auto nm = wait_pending_reason(cr, pod_name, "NamespaceTerminating");
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Running") << describe_status(nm);
  auto ref = pending_ref(*nm, pod_name);
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->message, expected) << ref->message;

  auto drain_error = wait_event(uid, "DrainError", std::nullopt, kReact);
  ASSERT_TRUE(drain_error);
  EXPECT_EQ(drain_error->type, "Warning");
  EXPECT_EQ(drain_error->message, expected);
  p = pod(ns.name(), pod_name);
  ASSERT_TRUE(p);
  EXPECT_FALSE(is_terminating(*p));

  // Deletes are allowed: the namespace controller deletes the pod and the drain finishes.
  webhook.allow();
  nm = wait_phase(cr, {"Succeeded"}, 2 * kDrain);
  ASSERT_TRUE(nm) << describe_status(get_node_maintenance(cr));
  EXPECT_FALSE(pending_ref(*nm, pod_name));
  EXPECT_TRUE(wait_until("namespace " + ns.name() + " gone", 2 * kDrain, [&] {
    return !kubectl_.get_json({"namespace", ns.name()});
  }));
}

// ---- Evictions in flight across maintenances (docs/design.md §2.4) --------------------------

// Two nodes of three pods each drained at once under --evictions-in-flight-total=2: an
// admission webhook on the pods' evictions holds each for a while before allowing it, and
// counts how many it held at once (DeferringWebhook::hold()). The per-node bound (32) alone would
// let all six through.
TEST_F(NodeMaintenanceEdgeTest, EvictionsInFlightAreBoundedAcrossMaintenances) {
  constexpr int kTotal = 2;
  const auto nodes = fresh_nodes("inflight", 2);
  ASSERT_EQ(nodes.size(), 2U);
  TestNamespace ns(kubectl_, "edge-inflight");
  for (const auto& node : nodes) {
    for (int i = 0; i < 3; ++i) {
      kubectl_.apply(pod_manifest(ns.name(), "held-" + node + "-" + std::to_string(i), node));
    }
  }
  for (const auto& node : nodes) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(wait_running(ns.name(), "app=held-" + node + "-" + std::to_string(i), 1));
    }
  }

  DeferringWebhook webhook;
  ASSERT_TRUE(webhook.started());
  const std::string webhook_name = "eviction-hold.e2e.medik8s.io";
  const auto configuration_guard =
      register_webhook("nmo-e2e-eviction-hold", webhook_name, "CREATE", "pods/eviction", ns.name(),
                       webhook.port(), webhook.ca_base64());
  // In effect once a dry-run eviction is refused by it (it refuses until hold()).
  ProcessResult probe;
  ASSERT_TRUE(
      wait_dry_run_eviction_refused(ns.name(), "held-" + nodes[0] + "-0", webhook_name, probe));
  webhook.hold(std::chrono::milliseconds(1500));

  start(
      {"--max-parallel-maintenances", "2", "--evictions-in-flight-total", std::to_string(kTotal)});
  std::vector<std::string> crs;
  for (const auto& node : nodes) {
    crs.push_back("maintenance-edge-inflight-" + node);
    ASSERT_FALSE(create(crs.back(), node).empty());
  }
  for (const auto& cr : crs) {
    auto nm = wait_phase(cr, {"Succeeded"}, kDrain);
    ASSERT_TRUE(nm) << describe_status(get_node_maintenance(cr));
    EXPECT_EQ(maintenance_of(*nm).status.eviction_pods, 3) << cr;
  }
  // Bounded, and the bound used: one drain alone had three pods due at once.
  EXPECT_EQ(webhook.max_held(), kTotal);
  EXPECT_GE(webhook.reviews(), 6);
}

// ---- A node whose lease name is hashed (docs/design.md §3.1) ---------------------------------

// The name of the Lease in the lease namespace whose ownerReference names `node` ("" when none).
std::string lease_owned_by(const Kubectl& kubectl, const std::string& node) {
  for (const json::object& l : leases_in(kubectl, kLeaseNamespace)) {
    boost::system::error_code ec;
    const json::value value = l;
    const json::value* owners = value.find_pointer("/metadata/ownerReferences", ec);
    if (owners == nullptr || !owners->is_array()) continue;
    for (const auto& owner : owners->as_array()) {
      if (string_at(owner, "/kind") == "Node" && string_at(owner, "/name") == node) {
        return name_of(value);
      }
    }
  }
  return {};
}

// A node name longer than 248 characters gets a hashed lease name, which does not give the node
// back by stripping "node-": housekeeping must still find the maintenance behind it and leave
// its lease alone.
TEST_F(NodeMaintenanceEdgeTest, HashedNodeLeaseOfALiveMaintenanceIsKept) {
  const std::string prefix = unique_name("edge-hashed");
  // DNS labels of at most 63 characters, 250 in all.
  std::string node = prefix;
  for (char c = 'a'; node.size() + 64 <= 250; ++c) node += "." + std::string(63, c);
  node += "." + std::string(250 - node.size() - 1, 'z');
  ASSERT_GT(node.size(), 248U);
  const std::string cr = "maintenance-edge-hashed";
  defer([this, node] { (void)kubectl_.run({"delete", "node", node, "--ignore-not-found"}); });
  // The hostname label's value is limited to 63 characters.
  kubectl_.apply(json::serialize(json::object{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", node},
        {"labels", {{"kubernetes.io/hostname", prefix}, {"kubernetes.io/os", "linux"}}}}}}));
  ASSERT_TRUE(wait_node_ready(node));
  const std::string foreign_node = unique_name("edge-hashed-foreign");
  defer([this, foreign_node] {
    (void)kubectl_.run(
        {"delete", "lease", "-n", kLeaseNamespace, "node-" + foreign_node, "--ignore-not-found"});
  });

  start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  std::string lease_name;
  ASSERT_TRUE(wait_until("a node lease owned by the node", kReact, [&] {
    lease_name = lease_owned_by(kubectl_, node);
    return !lease_name.empty();
  }));
  EXPECT_NE(lease_name, "node-" + node);

  // A foreign node lease makes housekeeping run; its slot shows that it did.
  kubectl_.apply(foreign_node_lease_manifest(foreign_node, kForeignHolder));
  const std::string foreign_slot = std::string(kForeignHolder) + " (node " + foreign_node + ")";
  ASSERT_TRUE(wait_until("a slot Lease naming " + foreign_slot, kReact,
                         [&] { return slot_holders().contains(foreign_slot); }));
  auto kept = lease(kLeaseNamespace, lease_name);
  ASSERT_TRUE(kept) << "the node lease " << lease_name << " of a live maintenance was released";
  EXPECT_EQ(string_at(*kept, "/spec/holderIdentity"), kNodeLeaseHolder);

  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_until("the hashed node lease released", kReact,
                         [&] { return !lease(kLeaseNamespace, lease_name); }));
}

// ---- Events follow the writes they announce (docs/design.md §2.7) ---------------------------

// While the API server refuses the maintenance's status writes, nothing is announced: an Event
// is sent only once the status it announces is on record, so a successor that finds it there
// never sends it again, and every refused attempt does not send one more.
TEST_F(NodeMaintenanceEdgeTest, BeginMaintenanceIsAnnouncedOnceItsStatusIsWritten) {
  const std::string node = fresh_node("announce");
  const std::string cr = "maintenance-edge-announce";
  const std::string policy = unique_name("nmo-e2e-refuse-status");
  auto remove_policy = [this, policy] {
    (void)kubectl_.run(
        {"delete", "validatingadmissionpolicybinding", policy, "--ignore-not-found"});
    (void)kubectl_.run({"delete", "validatingadmissionpolicy", policy, "--ignore-not-found"});
  };
  defer(remove_policy);
  kubectl_.apply(json::serialize(json::object{
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "ValidatingAdmissionPolicy"},
      {"metadata", {{"name", policy}}},
      {"spec",
       {{"failurePolicy", "Fail"},
        {"matchConstraints",
         {{"resourceRules", json::array{{{"apiGroups", json::array{"nodemaintenance.medik8s.io"}},
                                         {"apiVersions", json::array{"v1beta1"}},
                                         {"operations", json::array{"UPDATE"}},
                                         {"resources", json::array{"nodemaintenances/status"}}}}}}},
        {"validations",
         json::array{{{"expression", "!object.metadata.name.startsWith('" + cr + "')"},
                      {"message", "status writes refused by the test"}}}}}}}));
  kubectl_.apply(json::serialize(json::object{
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "ValidatingAdmissionPolicyBinding"},
      {"metadata", {{"name", policy}}},
      {"spec", {{"policyName", policy}, {"validationActions", json::array{"Deny"}}}}}));

  // The policy reaches the API server's admission a moment after it is created: in force once
  // a status write of a probe (no operator runs yet, so nothing holds it) is refused.
  const std::string probe = cr + "-probe";
  kubectl_.apply(json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                                              {"kind", "NodeMaintenance"},
                                              {"metadata", {{"name", probe}}},
                                              {"spec", {{"nodeName", node}}}}));
  ASSERT_TRUE(wait_until("the policy refusing status writes", kReact, [&] {
    const ProcessResult r =
        kubectl_.run({"patch", "nm", probe, "--subresource=status", "--type=merge", "-p",
                      R"({"status":{"lastError":"probe"}})"});
    return !r.ok() && r.err.find("status writes refused by the test") != std::string::npos;
  }));
  kubectl_.must({"delete", "nm", probe, "--wait=true"});

  OperatorProcess& op = start();
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  // Wait until the operator has seen its status write refused several times.
  ASSERT_TRUE(wait_until("three refused status writes in the operator's log", kDrain, [&] {
    const std::string log = op.log();
    std::size_t refused = 0;
    for (std::size_t at = log.find("status writes refused by the test"); at != std::string::npos;
         at = log.find("status writes refused by the test", at + 1)) {
      ++refused;
    }
    return refused >= 3;
  })) << op.log_tail(30);
  // Stopped, an operator has written every Event it queued: none for the refused status.
  EXPECT_EQ(op.stop(), 0);
  auto nm = get_node_maintenance(cr);
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "");
  EXPECT_EQ(event_count(uid, "BeginMaintenance"), 0);

  // Its successor writes the status and announces it, once.
  remove_policy();
  OperatorProcess& successor = start();
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  EXPECT_EQ(successor.stop(), 0);
  EXPECT_EQ(event_count(uid, "BeginMaintenance"), 1);
}

// ---- Promises of a Running maintenance (docs/design.md §2.4, §2.5) --------------------------

// The reason of the NodeMaintenance's condition `type` ("" when absent).
std::string condition_reason(const json::value& nm, const std::string& type) {
  const std::optional<op::Condition> c = condition_of(nm, type);
  return c ? c->reason : std::string();
}

// After drainTimeout the maintenance is Failed like any other failure (Ready False with the
// typed reason, FailedMaintenance), but the node stays cordoned and tainted and keeps its slot
// and its node lease until the CR is deleted.
TEST_F(NodeMaintenanceEdgeTest, DrainTimeoutFailsButKeepsTheNodeAndItsSlot) {
  const std::string node = fresh_node("timeout");
  const std::string cr = "maintenance-edge-timeout";
  TestNamespace ns(kubectl_, "edge-timeout");
  kubectl_.apply(pod_manifest(ns.name(), "held", node));
  ASSERT_TRUE(wait_running(ns.name(), "app=held", 1));
  kubectl_.apply(pdb_manifest(ns.name(), "held-pdb", 1, "held"));
  ASSERT_TRUE(wait_pdb(ns.name(), "held-pdb", 1, 0));

  start();
  const std::string uid = create_with_spec(cr, node, json::object{{"drainTimeout", "5s"}});
  ASSERT_FALSE(uid.empty());
  auto nm = wait_phase(cr, {"Failed"}, kDrain);
  ASSERT_TRUE(nm);
  EXPECT_EQ(maintenance_of(*nm).status.last_error,
            "drain did not complete within 5s: 1 pods pending");
  EXPECT_EQ(condition_status(*nm, "Ready"), "False") << describe_status(nm);
  EXPECT_EQ(condition_reason(*nm, "Ready"), "DrainTimeout") << describe_status(nm);
  auto failed = wait_event(uid, "FailedMaintenance", std::nullopt, kReact);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->type, "Warning");
  auto n = get_node(node);
  ASSERT_TRUE(n);
  EXPECT_TRUE(unschedulable(*n)) << describe_node(*n);
  EXPECT_TRUE(drain_tainted(*n)) << describe_node(*n);
  EXPECT_TRUE(slot_holders().contains(slot_of(cr, node)));
  EXPECT_TRUE(node_lease_held(node));

  remove(cr);
  EXPECT_TRUE(wait_gone(cr, kReact));
  EXPECT_TRUE(wait_node_restored(node, /*stays_cordoned=*/false, kReact));
}

// spec.gracePeriodSeconds is the grace period of the evictions: the pod's own (600 s) is
// overridden, as the API shows in its deletionGracePeriodSeconds.
TEST_F(NodeMaintenanceEdgeTest, GracePeriodSecondsReachesTheEvictedPod) {
  const std::string node = fresh_node("grace");
  const std::string cr = "maintenance-edge-grace";
  TestNamespace ns(kubectl_, "edge-grace");
  kubectl_.apply(pod_manifest(ns.name(), "slow", node, {{kSlowDeleteAnnotation, "true"}}, 600));
  ASSERT_TRUE(wait_running(ns.name(), "app=slow", 1));

  start();
  const std::string uid = create_with_spec(cr, node, json::object{{"gracePeriodSeconds", 7}});
  ASSERT_FALSE(uid.empty());
  std::optional<json::value> p;
  ASSERT_TRUE(wait_until("pod slow terminating", kReact, [&] {
    p = pod(ns.name(), "slow");
    return p && is_terminating(*p);
  }));
  EXPECT_EQ(int_at(*p, "/metadata/deletionGracePeriodSeconds"), 7) << json::serialize(*p);
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
}

// The node lease is renewed on its interval while the maintenance holds the node (shortened
// here from 15 minutes to 2 seconds).
TEST_F(NodeMaintenanceEdgeTest, NodeLeaseIsRenewedWhileTheMaintenanceHoldsTheNode) {
  const std::string node = fresh_node("renew");
  const std::string cr = "maintenance-edge-renew";
  start({"--test-hook-node-lease-renew-interval", "2"});
  const std::string uid = create(cr, node);
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(wait_phase(cr, {"Succeeded"}, kDrain));
  std::string first;
  ASSERT_TRUE(wait_until("the node lease taken", kReact, [&] {
    auto l = lease(kLeaseNamespace, "node-" + node);
    if (l) first = string_at(*l, "/spec/renewTime");
    return !first.empty();
  }));
  // What another medik8s component puts on the lease outlives our renewals.
  kubectl_.must(
      {"annotate", "lease", "-n", kLeaseNamespace, "node-" + node, "example.medik8s.io/note=kept"});
  auto annotated = lease(kLeaseNamespace, "node-" + node);
  ASSERT_TRUE(annotated.has_value());
  const std::string annotated_at = string_at(*annotated, "/spec/renewTime");
  std::string later;
  EXPECT_TRUE(wait_until(
      "the node lease renewed after " + first + " and " + annotated_at + ", its annotation kept",
      kReact,
      [&] {
        auto l = lease(kLeaseNamespace, "node-" + node);
        later = l ? string_at(*l, "/spec/renewTime") : "";
        return !later.empty() && later != first && later != annotated_at &&
               string_at(*l, "/spec/holderIdentity") == kNodeLeaseHolder &&
               string_at(*l, "/metadata/annotations/example.medik8s.io~1note") == "kept";
      },
      [&] { return later; }));
}

}  // namespace
}  // namespace nmo::e2e
