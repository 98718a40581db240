// Replacing upstream medik8s NMO with this operator and rolling back, proven with upstream's own
// manager binary against the real local cluster (docs/operations.md "Replacing an upstream medik8s
// NMO install" and "Rolling back to upstream", docs/design.md §2.8).
//
// Upstream's binary, CRD and manifests are a test fixture outside the repository (the directory
// named by $NMO_UPSTREAM_NMO_DIR, else the build's NMO_UPSTREAM_NMO_DIR): its `manager.xz` is
// unpacked into a temporary directory and run as a child process with the admin kubeconfig, its
// webhook server on a throwaway certificate (found, as controller-runtime looks for it, under
// $TMPDIR/k8s-webhook-server/serving-certs), its metrics and probe servers off. It runs without
// --leader-elect: out of cluster it cannot find a namespace for its leader Lease and exits
// ("unable to find leader election namespace: not running in-cluster").
//
// The upgrade: three maintenances under upstream (one Succeeded, one waiting for a pod that takes
// long to terminate, one held by a PodDisruptionBudget), upstream stopped, our CRD applied over
// upstream's, our operator started; nothing is drained twice or uncordoned, and each node is
// restored exactly when its NodeMaintenance goes. The rollback: two maintenances under ours
// (Succeeded, held by a PDB), ours stopped, upstream started first on our CRD and then on its own
// re-applied; upstream finishes and restores, and the documented cleanup removes what it leaves.
#include <stdlib.h>  // mkdtemp
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/config/base64.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/operator_process.h"
#include "test/e2e/support/serving_certificate.h"
#include "test/e2e/support/subprocess.h"
#include "test/e2e/support/upstream_fixture.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kCrd = "nodemaintenances.nodemaintenance.medik8s.io";
// The Events' source.component of each operator (upstream: GetEventRecorderFor("NodeMaintenance")).
constexpr const char* kOurComponent = "node-maintenance-operator";
constexpr const char* kUpstreamComponent = "NodeMaintenance";
// Upstream's taint has no value; ours is medik8s.io/drain=draining:NoSchedule.
constexpr const char* kUpstreamDrainTaint = "medik8s.io/drain:NoSchedule";
// Upstream's webhook as its config/webhook names it, and the configuration name its
// config/default gives it.
constexpr const char* kUpstreamWebhook = "vnodemaintenance.kb.io";
constexpr const char* kUpstreamWebhookConfiguration =
    "node-maintenance-operator-validating-webhook-configuration";
constexpr const char* kSlotLabel = "nodemaintenance.medik8s.io/slot";
// Upstream drains in rounds of 30 s and serves one maintenance at a time.
constexpr std::chrono::seconds kUpstreamRound{75};

fs::path upstream_crd_file() {
  return upstream_fixture() / "config/crd/bases/nodemaintenance.medik8s.io_nodemaintenances.yaml";
}

// What of a node a maintenance may touch, to compare before and after.
struct NodeState {
  bool unschedulable = false;
  std::vector<std::string> taints;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;

  bool operator==(const NodeState&) const = default;
};

std::map<std::string, std::string> string_map(const json::value& object,
                                              const std::string& pointer) {
  std::map<std::string, std::string> out;
  boost::system::error_code ec;
  const json::value* m = object.find_pointer(pointer, ec);
  if (m == nullptr || !m->is_object()) return out;
  for (const auto& [k, v] : m->as_object()) {
    out.emplace(std::string(k), v.is_string() ? std::string(v.as_string()) : json::serialize(v));
  }
  return out;
}

NodeState state_of(const json::value& node) {
  return NodeState{.unschedulable = unschedulable(node),
                   .taints = taints_of(node),
                   .labels = string_map(node, "/metadata/labels"),
                   .annotations = string_map(node, "/metadata/annotations")};
}

std::string describe(const NodeState& s) {
  std::string out =
      "unschedulable=" + std::string(s.unschedulable ? "true" : "false") + " taints=[";
  for (const auto& t : s.taints) out += t + " ";
  out += "] labels={";
  for (const auto& [k, v] : s.labels) out += k + "=" + v + " ";
  out += "} annotations={";
  for (const auto& [k, v] : s.annotations) out += k + "=" + v.substr(0, 80) + " ";
  return out + "}";
}

// A Deployment of one replica that may run on `node` only: evicted, its replacement stays
// Pending while the node is cordoned, and is bound to the node at once if it is ever uncordoned.
std::string pinned_deployment(const std::string& ns, const std::string& name,
                              const std::string& node) {
  json::value d = json::parse(deployment_manifest(ns, name, 1, name));
  d.at("spec").at("template").at("spec").as_object()["nodeSelector"] =
      json::object{{"kubernetes.io/hostname", node}};
  return json::serialize(d);
}

class UpstreamUpgradeTest : public OperatorFixture {
 protected:
  void SetUp() override {
    if (!fs::exists(upstream_fixture() / "manager.xz") || !fs::exists(upstream_crd_file())) {
      GTEST_SKIP() << "upstream medik8s NMO's fixture (manager.xz and config/) not found in "
                   << upstream_fixture()
                   << "; set NMO_UPSTREAM_NMO_DIR (or the CMake cache variable of that name)";
    }
    OperatorFixture::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    // The upstream webhook is scoped to this test's objects by a match condition, which servers
    // before 1.28 drop (it would then judge every NodeMaintenance).
    if (server_minor(kubectl_) < 28) GTEST_SKIP() << "needs Kubernetes 1.28 or later";
    prefix_ = unique_name("upgrade");
    unpack_upstream();
  }

  void TearDown() override {
    if (IsSkipped() && work_.empty()) return;
    // Upstream first: the fixture then deletes the maintenances with our operator alone, on our
    // CRD, with nothing left calling upstream's webhook.
    for (auto& upstream : upstreams_) {
      if (upstream->running()) (void)upstream->stop();
    }
    (void)kubectl_.run({"delete", "validatingwebhookconfiguration", kUpstreamWebhookConfiguration,
                        "--ignore-not-found"});
    apply_our_crd(/*force=*/true);
    if (HasFailure()) {
      for (const auto& upstream : upstreams_) {
        std::cerr << "---- upstream log " << upstream->log_path() << " (last 60 lines)\n"
                  << upstream->log_tail(60) << "---- end of upstream log\n";
      }
    }
    OperatorFixture::TearDown();
    // The fixture installs the CRD with a client-side apply; leave it as the next test expects.
    (void)kubectl_.run({"apply", "-k", (source_dir() / crd_kustomization(kubectl_)).string()});
    std::error_code ignored;
    if (!work_.empty()) fs::remove_all(work_, ignored);
  }

  // manager.xz unpacked into a temporary directory, and the throwaway serving certificate where
  // controller-runtime looks for it.
  void unpack_upstream() {
    std::string pattern = (fs::temp_directory_path() / "nmo-e2e-upstream-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    work_ = pattern;
    fs::copy_file(upstream_fixture() / "manager.xz", work_ / "manager.xz");
    const ProcessResult unpacked = run_process({"xz", "-d", (work_ / "manager.xz").string()});
    ASSERT_TRUE(unpacked.ok()) << "xz -d failed (is xz installed?): " << unpacked.err;
    fs::permissions(work_ / "manager", fs::perms::owner_exec, fs::perm_options::add);
    fs::create_directories(work_ / "tmp/k8s-webhook-server");
    fs::create_symlink(certificate_.dir(), work_ / "tmp/k8s-webhook-server/serving-certs");
  }

  // Upstream's manager as its Deployment runs it, out of cluster (see the file comment); returns
  // once its controller has started its worker.
  OperatorProcess& start_upstream() {
    const char* kubeconfig = std::getenv("KUBECONFIG");
    const std::string name = current_name() + ".upstream." + std::to_string(upstreams_.size() + 1);
    upstreams_.push_back(std::make_unique<OperatorProcess>(
        ForeignOperator{.binary = work_ / "manager",
                        .args = {"--kubeconfig", kubeconfig != nullptr ? kubeconfig : "",
                                 "--metrics-bind-address=0", "--health-probe-bind-address=0"},
                        .env = {"TMPDIR=" + (work_ / "tmp").string()}},
        name));
    OperatorProcess& upstream = *upstreams_.back();
    EXPECT_TRUE(upstream.wait_for_log("Starting workers", 60s))
        << "upstream's manager did not start; log:\n"
        << upstream.log_tail(40);
    return upstream;
  }

  // Upstream's ValidatingWebhookConfiguration (config/webhook, named as config/default names
  // it), pointing at upstream's webhook server on 127.0.0.1:9443; limited by a match condition
  // to this test's NodeMaintenances, so a run that dies leaves nothing judging other tests'.
  void register_upstream_webhook() {
    const json::object hook{
        {"name", kUpstreamWebhook},
        {"admissionReviewVersions", json::array{"v1"}},
        {"sideEffects", "None"},
        {"failurePolicy", "Fail"},
        {"clientConfig",
         {{"url",
           "https://127.0.0.1:9443/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance"},
          {"caBundle", kube::base64_encode(certificate_.ca_pem())}}},
        {"rules", json::array{json::object{{"apiGroups", json::array{"nodemaintenance.medik8s.io"}},
                                           {"apiVersions", json::array{"v1beta1"}},
                                           {"operations", json::array{"CREATE", "UPDATE"}},
                                           {"resources", json::array{"nodemaintenances"}}}}},
        {"matchConditions",
         json::array{
             json::object{{"name", "this-test-only"},
                          {"expression", "object.metadata.name.startsWith('" + prefix_ + "')"}}}}};
    kubectl_.apply(
        json::serialize(json::object{{"apiVersion", "admissionregistration.k8s.io/v1"},
                                     {"kind", "ValidatingWebhookConfiguration"},
                                     {"metadata", {{"name", kUpstreamWebhookConfiguration}}},
                                     {"webhooks", json::array{hook}}}));
  }

  // Upstream's CRD as its `make deploy` installs it (client-side apply), on a cluster that never
  // had ours: our CRD (installed by the fixture, no NodeMaintenance left) is deleted first.
  void install_upstream_crd_fresh() {
    kubectl_.must({"delete", "crd", kCrd, "--wait=true", "--timeout=60s"});
    kubectl_.must({"apply", "-f", upstream_crd_file().string()});
    wait_established();
  }

  void apply_our_crd(bool force) {
    std::vector<std::string> args{"apply", "--server-side"};
    if (force) args.emplace_back("--force-conflicts");
    args.insert(args.end(), {"-k", (source_dir() / crd_kustomization(kubectl_)).string()});
    kubectl_.must(args);
    wait_established();
  }

  void wait_established() {
    const ProcessResult r = kubectl_.run(
        {"wait", "--for=condition=Established", "--timeout=60s", "crd/" + std::string(kCrd)});
    EXPECT_TRUE(r.ok()) << r.err;
  }

  // Whether the installed CRD is ours (it has printer columns; upstream's has none).
  bool our_crd_installed() {
    auto crd = kubectl_.get_json({"crd", kCrd});
    if (!crd) return false;
    boost::system::error_code ec;
    return crd->find_pointer("/spec/versions/0/additionalPrinterColumns", ec) != nullptr;
  }

  std::string cr(const std::string& what) const { return prefix_ + "-" + what; }

  // The snapshot of `node` as it is now.
  NodeState node_state(const std::string& node) {
    auto n = get_node(node);
    return n ? state_of(*n) : NodeState{};
  }

  // Waits until `node` is exactly as it was before its maintenance (kube-controller-manager takes
  // a moment to drop its unschedulable taint once the node is schedulable).
  bool wait_node_exactly(const std::string& node, const NodeState& before,
                         std::chrono::milliseconds timeout) {
    NodeState now;
    return wait_until(
        "node " + node + " exactly as before its maintenance", timeout,
        [&] {
          now = node_state(node);
          return now == before;
        },
        [&] { return "\n  now:    " + describe(now) + "\n  before: " + describe(before); });
  }

  // Deletes the NodeMaintenance while upstream runs: the node comes back as it was `before`, but
  // for our prior-state annotation, which upstream does not know; the node lease is given back.
  void delete_under_upstream(const std::string& name, const std::string& node,
                             const NodeState& before) {
    remove(name);
    EXPECT_TRUE(wait_gone(name, kReact));
    NodeState expected = before;
    const std::string prior = node_state(node).annotations[kPriorStateAnnotation];
    EXPECT_NE(prior, "") << "our annotation is gone from " << node;
    expected.annotations[kPriorStateAnnotation] = prior;
    EXPECT_TRUE(wait_node_exactly(node, expected, kReact));
    EXPECT_FALSE(node_lease_held(node));
  }

  // The Events of the object with `uid` sent by `component`, as "reason" (repeats by count).
  std::vector<std::string> event_reasons(const std::string& uid, const std::string& component) {
    std::vector<std::string> out;
    auto list = kubectl_.get_json(
        {"events", "-n", "default", "--field-selector", "involvedObject.uid=" + uid});
    if (!list) return out;
    for (const auto& e : list->at("items").as_array()) {
      if (string_at(e, "/source/component") != component) continue;
      for (std::int64_t i = 0; i < int_at(e, "/count").value_or(1); ++i) {
        out.push_back(string_at(e, "/reason"));
      }
    }
    return out;
  }

  // The pods of the workload `app` in `ns`: uid -> the node it is bound to ("" when Pending).
  std::map<std::string, std::string> pods_of(const std::string& ns, const std::string& app) {
    std::map<std::string, std::string> out;
    for (const auto& p : list_pods(kubectl_, ns, "app=" + app)) {
      const json::value v = p;
      out.emplace(uid_of(v), string_at(v, "/spec/nodeName"));
    }
    return out;
  }

  // Waits until the workload's only pod is a replacement of `evicted` that no node has taken.
  bool wait_replacement_pending(const std::string& ns, const std::string& app,
                                const std::string& evicted) {
    std::map<std::string, std::string> pods;
    return wait_until(
        "pod " + evicted + " of " + app + " evicted, its replacement Pending", kDrain,
        [&] {
          pods = pods_of(ns, app);
          return pods.size() == 1 && !pods.contains(evicted) && pods.begin()->second.empty();
        },
        [&] {
          std::string seen;
          for (const auto& [uid, node] : pods)
            seen += uid + "@" + (node.empty() ? "-" : node) + " ";
          return seen;
        });
  }

  std::string only_pod_uid(const std::string& ns, const std::string& app) {
    const auto pods = pods_of(ns, app);
    EXPECT_EQ(pods.size(), 1u) << app;
    return pods.empty() ? "" : pods.begin()->first;
  }

  // The workloads of both tests: Deployment `done` pinned to `done_node`, Deployment `guarded`
  // pinned to `guarded_node` under PDB `guarded` that allows no disruption, running. Returns the
  // uids of their pods ("" when they did not start).
  std::pair<std::string, std::string> run_done_and_guarded(const std::string& ns,
                                                           const std::string& done_node,
                                                           const std::string& guarded_node) {
    kubectl_.apply(pinned_deployment(ns, "done", done_node));
    kubectl_.apply(pinned_deployment(ns, "guarded", guarded_node));
    if (!wait_running(ns, "app=done", 1) || !wait_running(ns, "app=guarded", 1)) return {};
    kubectl_.apply(pdb_manifest(ns, "guarded", 1, "guarded"));
    if (!wait_pdb(ns, "guarded", 1, 0)) return {};
    return {only_pod_uid(ns, "done"), only_pod_uid(ns, "guarded")};
  }

  // The slot Leases our operator keeps in its namespace, by name.
  std::vector<std::string> slot_leases() {
    std::vector<std::string> out;
    for (const auto& l : leases_in(kubectl_, kOperatorNamespace)) {
      const json::value v = l;
      if (!label(v, kSlotLabel).empty()) out.push_back(name_of(v));
    }
    return out;
  }

  std::string current_name() const {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string(info->test_suite_name()) + "." + info->name();
  }

  std::string prefix_;
  fs::path work_;
  ServingCertificate certificate_;
  std::vector<std::unique_ptr<OperatorProcess>> upstreams_;
};

std::string status_of(const std::optional<json::value>& nm) {
  if (!nm) return "no NodeMaintenance";
  boost::system::error_code ec;
  const json::value* status = nm->find_pointer("/status", ec);
  return status == nullptr ? std::string("no status") : json::serialize(*status);
}

bool lists_pod(const op::NodeMaintenance& nm, const std::string& pod) {
  const auto& refs = nm.status.pending_pods_refs;
  return std::any_of(refs.begin(), refs.end(), [&](const auto& r) { return r.name == pod; });
}

// Whether some pending pod has `reason`.
bool any_pending_with(const op::NodeMaintenance& nm, const std::string& reason) {
  const auto& refs = nm.status.pending_pods_refs;
  return std::any_of(refs.begin(), refs.end(),
                     [&](const auto& r) { return r.reason && op::to_string(*r.reason) == reason; });
}

std::string reason_of(const op::NodeMaintenance& nm, const std::string& pod) {
  for (const auto& r : nm.status.pending_pods_refs) {
    if (r.name == pod && r.reason) return std::string(op::to_string(*r.reason));
  }
  return "";
}

// ---- The upgrade: upstream's maintenances in flight, taken over by ours
// ---------------------------------------

TEST_F(UpstreamUpgradeTest, UpgradeAdoptsUpstreamsMaintenancesInFlight) {
  const auto nodes = fresh_nodes("upgrade", 3);
  const std::string& done_node = nodes[0];
  const std::string& slow_node = nodes[1];
  const std::string& guarded_node = nodes[2];
  TestNamespace ns(kubectl_, "upgrade");

  kubectl_.apply(
      pod_manifest(ns.name(), "slow", slow_node, {{kSlowDeleteAnnotation, "true"}}, 600));
  const auto workload_pods = run_done_and_guarded(ns.name(), done_node, guarded_node);
  const std::string done_pod = workload_pods.first;
  const std::string guarded_pod = workload_pods.second;
  ASSERT_FALSE(done_pod.empty() || guarded_pod.empty());
  ASSERT_TRUE(wait_running(ns.name(), "app=slow", 1));
  const std::string guarded_pod_name = name_of(list_pods(kubectl_, ns.name(), "app=guarded").at(0));
  std::map<std::string, NodeState> before;
  for (const auto& n : nodes) before[n] = node_state(n);

  // ---- 1. Upstream, as installed by its own manifests.
  install_upstream_crd_fresh();
  ASSERT_FALSE(our_crd_installed());
  register_upstream_webhook();
  OperatorProcess& upstream = start_upstream();
  ASSERT_TRUE(upstream.running());

  // ---- 2. Three maintenances under upstream.
  ASSERT_FALSE(create(cr("done"), done_node).empty());
  auto nm = wait_phase(cr("done"), {"Succeeded"}, kDrain);
  ASSERT_TRUE(nm);
  ASSERT_TRUE(wait_replacement_pending(ns.name(), "done", done_pod));
  const std::string done_replacement = only_pod_uid(ns.name(), "done");
  // Upstream's webhook judges this test's creates: a second maintenance of the node is refused
  // with upstream's words.
  const ProcessResult duplicate = kubectl_.run(
      {"create", "-f", "-"},
      json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                                   {"kind", "NodeMaintenance"},
                                   {"metadata", {{"name", cr("duplicate")}}},
                                   {"spec", {{"nodeName", done_node}}}}));
  EXPECT_FALSE(duplicate.ok());
  if (duplicate.ok()) {
    (void)kubectl_.run({"patch", "nodemaintenance", cr("duplicate"), "--type=merge", "-p",
                        R"({"metadata":{"finalizers":null}})"});
    (void)kubectl_.run({"delete", "nodemaintenance", cr("duplicate"), "--wait=false"});
  }
  EXPECT_NE(duplicate.err.find("a NodeMaintenance for node " + done_node + " already exists"),
            std::string::npos)
      << duplicate.err;

  ASSERT_FALSE(create(cr("slow"), slow_node).empty());
  ASSERT_FALSE(create(cr("guarded"), guarded_node).empty());
  // Upstream serves one maintenance at a time and waits up to 30 s per drain round: the slow pod
  // is evicted (and terminates for 600 s) first, then the guarded pod is refused by its PDB.
  std::optional<json::value> slow_pod;
  ASSERT_TRUE(wait_until(
      "upstream evicted the slow pod (terminating)", kUpstreamRound,
      [&] {
        slow_pod = kubectl_.get_json({"pod", "slow", "-n", ns.name()});
        return slow_pod && is_terminating(*slow_pod);
      },
      [&] { return slow_pod ? json::serialize(slow_pod->at("metadata")) : "no pod"; }));
  const std::string slow_deletion = string_at(*slow_pod, "/metadata/deletionTimestamp");
  ASSERT_TRUE(upstream.wait_for_log(
      "Cannot evict pod as it would violate the pod's disruption budget", kUpstreamRound))
      << upstream.log_tail(30);
  for (const auto& [name, pod] :
       {std::pair{cr("slow"), std::string("slow")}, std::pair{cr("guarded"), guarded_pod_name}}) {
    nm = get_node_maintenance(name);
    ASSERT_TRUE(nm);
    EXPECT_EQ(phase_of(*nm), "Running") << status_of(nm);
    const op::NodeMaintenance typed = maintenance_of(*nm);
    EXPECT_EQ(typed.status.pending_pods_refs.size(), 1u) << status_of(nm);
    EXPECT_TRUE(lists_pod(typed, pod)) << status_of(nm);
  }
  for (const auto& n : nodes) {
    auto node = get_node(n);
    ASSERT_TRUE(node);
    EXPECT_TRUE(unschedulable(*node)) << describe_node(*node);
    EXPECT_TRUE(has_taint(*node, kUpstreamDrainTaint)) << describe_node(*node);
    EXPECT_EQ(annotation(*node, kPriorStateAnnotation), "") << describe_node(*node);
    EXPECT_EQ(label(*node, kExcludeFromRemediationLabel), "true") << describe_node(*node);
    EXPECT_TRUE(node_lease_held(n)) << n;
  }
  EXPECT_EQ(only_pod_uid(ns.name(), "guarded"), guarded_pod);
  std::map<std::string, std::string> lease_uids;
  for (const auto& n : nodes) {
    auto l = lease(kLeaseNamespace, "node-" + n);
    ASSERT_TRUE(l);
    lease_uids[n] = uid_of(*l);
  }

  // ---- 3. Upstream stopped as docs/operations.md says; our CRD applied over upstream's.
  const auto stop_started = Clock::now();
  kubectl_.must({"delete", "validatingwebhookconfiguration", kUpstreamWebhookConfiguration});
  EXPECT_EQ(upstream.stop(), 0) << upstream.log_tail(20);
  const auto upstream_stopped = Clock::now();
  apply_our_crd(/*force=*/false);
  EXPECT_TRUE(our_crd_installed());
  for (const auto& name : {cr("done"), cr("slow"), cr("guarded")}) {
    nm = get_node_maintenance(name);
    ASSERT_TRUE(nm) << name << " is gone after the CRD was replaced";
    (void)maintenance_of(*nm);  // still valid: decodes as our operator reads it
  }

  // ---- 4. Ours takes over.
  const auto ours_started = Clock::now();
  start_operator(kOperatorFlags);
  std::optional<json::value> slow_nm, guarded_nm;
  ASSERT_TRUE(wait_until(
      "our operator working on the adopted maintenances", kReact,
      [&] {
        slow_nm = get_node_maintenance(cr("slow"));
        guarded_nm = get_node_maintenance(cr("guarded"));
        return slow_nm && guarded_nm &&
               reason_of(maintenance_of(*slow_nm), "slow") == "WaitingForTermination" &&
               any_pending_with(maintenance_of(*guarded_nm), "BlockedByPDB");
      },
      [&] { return status_of(slow_nm) + "\n" + status_of(guarded_nm); }));
  const auto adopted = Clock::now();
  std::cerr << "hand-over: upstream stopped in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(upstream_stopped -
                                                                     stop_started)
                   .count()
            << " ms; ours working on the adopted maintenances "
            << std::chrono::duration_cast<std::chrono::milliseconds>(adopted - ours_started).count()
            << " ms after its start, "
            << std::chrono::duration_cast<std::chrono::milliseconds>(adopted - stop_started).count()
            << " ms after upstream was told to stop\n";

  // The Succeeded one stays as it was: cordoned, upstream's taint alone, not announced again, its
  // evicted pod's replacement still Pending (an uncordon would have let it in).
  nm = get_node_maintenance(cr("done"));
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Succeeded") << status_of(nm);
  EXPECT_EQ(maintenance_of(*nm).status.drain_progress, 100);
  for (const auto& n : nodes) {
    auto node = get_node(n);
    ASSERT_TRUE(node);
    EXPECT_TRUE(unschedulable(*node)) << describe_node(*node);
    EXPECT_EQ(drain_taint_count(*node), 1u) << describe_node(*node);
    EXPECT_TRUE(node_lease_held(n)) << n;
    auto l = lease(kLeaseNamespace, "node-" + n);
    ASSERT_TRUE(l);
    EXPECT_EQ(uid_of(*l), lease_uids[n]) << "the node lease of " << n << " was re-created";
  }
  EXPECT_EQ(pods_of(ns.name(), "done"),
            (std::map<std::string, std::string>{{done_replacement, ""}}));
  slow_pod = kubectl_.get_json({"pod", "slow", "-n", ns.name()});
  ASSERT_TRUE(slow_pod);
  EXPECT_EQ(string_at(*slow_pod, "/metadata/deletionTimestamp"), slow_deletion)
      << "the slow pod was deleted again";
  EXPECT_EQ(only_pod_uid(ns.name(), "guarded"), guarded_pod);

  // ---- 5. The blocked one finishes once the PDB allows, the slow one once its pod is gone.
  kubectl_.must({"delete", "pdb", "guarded", "-n", ns.name()});
  EXPECT_TRUE(wait_phase(cr("guarded"), {"Succeeded"}, kDrain));
  EXPECT_TRUE(wait_replacement_pending(ns.name(), "guarded", guarded_pod));
  // The kubelet finishing the pod's shutdown (kwok would at the end of its 600 s grace period).
  kubectl_.must({"delete", "pod", "slow", "-n", ns.name(), "--grace-period=0", "--force"});
  EXPECT_TRUE(wait_phase(cr("slow"), {"Succeeded"}, kDrain));
  for (const auto& name : {cr("done"), cr("slow"), cr("guarded")}) {
    nm = get_node_maintenance(name);
    ASSERT_TRUE(nm);
    const std::vector<std::string> ours = event_reasons(uid_of(*nm), kOurComponent);
    EXPECT_EQ(std::count(ours.begin(), ours.end(), "BeginMaintenance"), 0) << name;
    EXPECT_EQ(std::count(ours.begin(), ours.end(), "SucceedMaintenance"),
              name == cr("done") ? 0 : 1)
        << name;
  }
  EXPECT_EQ(pods_of(ns.name(), "done"),
            (std::map<std::string, std::string>{{done_replacement, ""}}));
  // Upstream's counters read with their meaning: one pod on each node, and the Succeeded one's
  // conditions say so (docs/design.md §2.8).
  for (const auto& name : {cr("done"), cr("slow"), cr("guarded")}) {
    nm = get_node_maintenance(name);
    ASSERT_TRUE(nm);
    const op::NodeMaintenance typed = maintenance_of(*nm);
    EXPECT_EQ(typed.status.total_pods, 1) << name << ": " << status_of(nm);
    EXPECT_EQ(typed.status.eviction_pods, 1) << name << ": " << status_of(nm);
    EXPECT_EQ(condition_field(*nm, "Ready", "status"), "True") << name << ": " << status_of(nm);
  }
  const std::vector<std::string> done_events =
      event_reasons(uid_of(*get_node_maintenance(cr("done"))), kOurComponent);
  EXPECT_EQ(std::count(done_events.begin(), done_events.end(), "BeginEviction"), 0);

  // ---- 6. Deleting each restores its node exactly and gives the lease back.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string name = i == 0 ? cr("done") : i == 1 ? cr("slow") : cr("guarded");
    nm = get_node_maintenance(name);
    ASSERT_TRUE(nm);
    const std::string uid = uid_of(*nm);
    remove(name);
    EXPECT_TRUE(wait_gone(name, kReact));
    EXPECT_TRUE(wait_node_exactly(nodes[i], before[nodes[i]], kReact));
    EXPECT_FALSE(node_lease_held(nodes[i]));
    EXPECT_TRUE(wait_event(uid, "RemovedMaintenance", std::nullopt, kReact));
  }
}

// ---- The rollback: ours stopped with maintenances in flight, upstream carries on
// ------------------------------

TEST_F(UpstreamUpgradeTest, RollbackLetsUpstreamCarryOnAndTheCleanupRemovesOurLeftovers) {
  const auto nodes = fresh_nodes("rollback", 2);
  const std::string& done_node = nodes[0];
  const std::string& guarded_node = nodes[1];
  TestNamespace ns(kubectl_, "rollback");
  const auto workload_pods = run_done_and_guarded(ns.name(), done_node, guarded_node);
  const std::string done_pod = workload_pods.first;
  const std::string guarded_pod = workload_pods.second;
  ASSERT_FALSE(done_pod.empty() || guarded_pod.empty());
  std::map<std::string, NodeState> before;
  for (const auto& n : nodes) before[n] = node_state(n);

  // ---- 1. Two maintenances in flight under ours (our CRD, installed by the fixture).
  ASSERT_TRUE(our_crd_installed());
  std::vector<std::string> flags = kOperatorFlags;
  flags.insert(flags.end(), {"--max-parallel-maintenances", "2"});
  OperatorProcess& ours = start_operator(flags);
  ASSERT_FALSE(create(cr("done"), done_node).empty());
  ASSERT_FALSE(create(cr("guarded"), guarded_node).empty());
  ASSERT_TRUE(wait_phase(cr("done"), {"Succeeded"}, kDrain));
  ASSERT_TRUE(wait_replacement_pending(ns.name(), "done", done_pod));
  std::optional<json::value> nm;
  ASSERT_TRUE(wait_until(
      "the guarded pod blocked by its PDB under ours", kReact,
      [&] {
        nm = get_node_maintenance(cr("guarded"));
        return nm && any_pending_with(maintenance_of(*nm), "BlockedByPDB");
      },
      [&] { return status_of(nm); }));
  EXPECT_EQ(slot_leases().size(), 2u);

  // ---- 2. Ours stopped; what it leaves behind.
  EXPECT_EQ(ours.stop(), 0);
  for (const auto& n : nodes) {
    auto node = get_node(n);
    ASSERT_TRUE(node);
    EXPECT_TRUE(drain_tainted(*node)) << describe_node(*node);
    EXPECT_NE(annotation(*node, kPriorStateAnnotation), "") << describe_node(*node);
    EXPECT_TRUE(node_lease_held(n));
  }
  nm = get_node_maintenance(cr("guarded"));
  ASSERT_TRUE(nm);
  EXPECT_EQ(condition_field(*nm, "Cordoned", "status"), "True") << status_of(nm);

  // ---- 3. Upstream on our CRD: it carries on.
  register_upstream_webhook();
  OperatorProcess& upstream = start_upstream();
  ASSERT_TRUE(upstream.wait_for_log(
      "Cannot evict pod as it would violate the pod's disruption budget", kUpstreamRound))
      << upstream.log_tail(30);
  kubectl_.must({"delete", "pdb", "guarded", "-n", ns.name()});
  nm = wait_phase(cr("guarded"), {"Succeeded"}, kUpstreamRound);
  ASSERT_TRUE(nm);
  EXPECT_TRUE(wait_replacement_pending(ns.name(), "guarded", guarded_pod));
  // Upstream's status write replaced ours: its fields only, our conditions gone.
  EXPECT_EQ(condition_field(*nm, "Cordoned", "status"), "") << status_of(nm);
  EXPECT_TRUE(maintenance_of(*nm).status.pending_pods_refs.empty()) << status_of(nm);
  EXPECT_GE(event_reasons(uid_of(*nm), kUpstreamComponent).size(), 1u);
  nm = wait_phase(cr("done"), {"Succeeded"}, kReact);
  ASSERT_TRUE(nm);
  // The Succeeded one stayed cordoned: its evicted pod's replacement is still Pending.
  EXPECT_EQ(pods_of(ns.name(), "done").size(), 1u);
  EXPECT_FALSE(pods_of(ns.name(), "done").contains(done_pod));
  EXPECT_EQ(pods_of(ns.name(), "done").begin()->second, "");

  // Upstream deletes a maintenance on our CRD: the node comes back but for our annotation.
  delete_under_upstream(cr("done"), done_node, before[done_node]);

  // ---- 4. Upstream on its own CRD, re-applied over ours (as its manifests would be).
  kubectl_.must({"delete", "validatingwebhookconfiguration", kUpstreamWebhookConfiguration});
  EXPECT_EQ(upstream.stop(), 0);
  kubectl_.must(
      {"apply", "--server-side", "--force-conflicts", "-f", upstream_crd_file().string()});
  wait_established();
  EXPECT_FALSE(our_crd_installed());
  nm = get_node_maintenance(cr("guarded"));
  ASSERT_TRUE(nm);
  EXPECT_EQ(phase_of(*nm), "Succeeded");
  register_upstream_webhook();
  OperatorProcess& upstream_again = start_upstream();
  ASSERT_TRUE(upstream_again.running());
  delete_under_upstream(cr("guarded"), guarded_node, before[guarded_node]);

  // ---- 5. What upstream leaves of ours, and the cleanup (docs/operations.md): our slot Leases
  // went with their NodeMaintenances (their owner), the annotations and the budget Lease stay.
  kubectl_.must({"delete", "validatingwebhookconfiguration", kUpstreamWebhookConfiguration});
  EXPECT_EQ(upstream_again.stop(), 0);
  std::vector<std::string> slots;
  EXPECT_TRUE(wait_until(
      "our slot Leases garbage-collected with their NodeMaintenances", kReact,
      [&] {
        slots = slot_leases();
        return std::none_of(slots.begin(), slots.end(), [&](const std::string& s) {
          return s.find(prefix_) != std::string::npos;
        });
      },
      [&] {
        std::string out;
        for (const auto& s : slots) out += s + " ";
        return out;
      }));
  kubectl_.must({"annotate", "nodes", "--all", std::string(kPriorStateAnnotation) + "-"});
  kubectl_.must({"delete", "leases", "-n", kOperatorNamespace, "-l", kSlotLabel});
  kubectl_.must({"delete", "lease", "-n", kOperatorNamespace, kBudgetLease, "--ignore-not-found"});
  for (const auto& n : nodes) EXPECT_TRUE(wait_node_exactly(n, before[n], kReact));
  for (const auto& l : leases_in(kubectl_, kOperatorNamespace)) {
    const json::value v = l;
    EXPECT_EQ(name_of(v), kLeaderLease) << "left in " << kOperatorNamespace << ": " << name_of(v);
  }
  for (const auto& n : nodes) EXPECT_FALSE(lease(kLeaseNamespace, "node-" + n)) << n;
  auto all_nodes = kubectl_.get_json({"nodes"});
  ASSERT_TRUE(all_nodes);
  for (const auto& n : all_nodes->at("items").as_array()) {
    EXPECT_EQ(annotation(n, kPriorStateAnnotation), "") << name_of(n);
  }
}

}  // namespace
}  // namespace nmo::e2e
