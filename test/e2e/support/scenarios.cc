#include "test/e2e/support/scenarios.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <utility>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "test/e2e/support/operator_fixture.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

}  // namespace

StandInCrd::StandInCrd(const Kubectl& kubectl, const std::string& group, const std::string& plural,
                       const std::string& kind, const std::string& scope, std::string probe_path)
    : kubectl_(kubectl), name_(plural + "." + group), probe_path_(std::move(probe_path)) {
  kubectl_.apply(R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: )" + name_ +
                 R"(
spec:
  group: )" + group +
                 R"(
  scope: )" + scope +
                 R"(
  names: {plural: )" +
                 plural + ", kind: " + kind + R"(}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)");
  served_ = wait_until(probe_path_ + " served", 30s, [&] {
    return kubectl_.run({"get", "--raw", probe_path_}).ok();
  });
}

StandInCrd::~StandInCrd() {
  (void)kubectl_.run({"delete", "crd", name_, "--wait=true", "--timeout=60s"});
  EXPECT_TRUE(wait_until(probe_path_ + " no longer served", 60s, [&] {
    return !kubectl_.run({"get", "--raw", probe_path_}).ok();
  }));
}

OpenShiftEtcd::OpenShiftEtcd(const Kubectl& kubectl,
                             const std::vector<std::string>& control_plane_nodes, int min_available)
    : kubectl_(kubectl),
      // Serving the API group is what tells OpenShift apart.
      api_(kubectl, "config.openshift.io", "clusterversions", "ClusterVersion", "Cluster",
           "/apis/config.openshift.io"),
      guards_(static_cast<int>(control_plane_nodes.size())) {
  if (!api_.served()) return;
  (void)kubectl_.run({"create", "namespace", kNamespace});
  for (const std::string& node : control_plane_nodes) {
    kubectl_.apply(R"(apiVersion: v1
kind: Pod
metadata:
  name: etcd-guard-)" +
                   node + R"(
  namespace: openshift-etcd
  labels: {app: guard}
spec:
  nodeName: )" + node +
                   R"(
  containers: [{name: guard, image: guard:test}]
)");
  }
  kubectl_.apply(R"(apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: etcd-guard-pdb
  namespace: openshift-etcd
spec:
  minAvailable: )" +
                 std::to_string(min_available) + R"(
  selector: {matchLabels: {app: guard}}
)");
  ready_ = wait_pdb(std::max(0, guards_ - min_available));
}

OpenShiftEtcd::~OpenShiftEtcd() {
  // Waited for: the next scenario creates it again.
  (void)kubectl_.run({"delete", "namespace", kNamespace, "--wait=true", "--timeout=60s"});
}

void OpenShiftEtcd::set_min_available(int min_available) {
  kubectl_.must({"patch", "pdb", "-n", kNamespace, kGuardPdb, "--type=merge", "-p",
                 R"({"spec":{"minAvailable":)" + std::to_string(min_available) + "}}"});
  EXPECT_TRUE(wait_pdb(std::max(0, guards_ - min_available)));
}

KubeadmEtcd::KubeadmEtcd(const Kubectl& kubectl, const std::vector<std::string>& members,
                         Deletion deletion)
    : kubectl_(kubectl), deletion_(deletion) {
  std::set<std::string> nodes_with_member;
  for (const auto& pod : list_pods(kubectl_, kNamespace, kSelector)) {
    nodes_with_member.insert(string_at(json::value(pod), "/spec/nodeName"));
  }
  json::array pods;
  for (const std::string& node : members) {
    if (nodes_with_member.contains(node)) continue;
    pods.push_back(json::parse(etcd_mirror_pod_manifest(node)));
    created_.push_back("etcd-" + node);
  }
  if (!pods.empty()) {
    kubectl_.apply(json::serialize(
        json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(pods)}}));
  }
  ready_ = wait_running_pods(kubectl_, kNamespace, kSelector, members.size());
}

KubeadmEtcd::~KubeadmEtcd() {
  if (created_.empty()) return;
  std::vector<std::string> args{"delete", "pod", "-n", kNamespace};
  args.insert(args.end(), created_.begin(), created_.end());
  args.emplace_back("--ignore-not-found");
  args.emplace_back(deletion_ == Deletion::kWait ? "--timeout=60s" : "--wait=false");
  (void)kubectl_.run(args);
}

bool OpenShiftEtcd::wait_pdb(int allowed) const {
  return wait_until("the guard PDB to see " + std::to_string(guards_) +
                        " healthy guards and allow " + std::to_string(allowed) + " disruptions",
                    60s, [&] {
                      auto pdb = kubectl_.get_json({"pdb", "-n", kNamespace, kGuardPdb});
                      return pdb && int_at(*pdb, "/status/currentHealthy") == guards_ &&
                             int_at(*pdb, "/status/disruptionsAllowed") == allowed;
                    });
}

}  // namespace nmo::e2e
