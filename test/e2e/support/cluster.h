// GoogleTest fixtures for end-to-end tests against the real local control plane
// (`make cluster-up`). They talk to the cluster through the matching kubectl, found on PATH
// (`make test` puts the pinned one first), using the kubeconfig in KUBECONFIG.
//
// Failures are reported to GoogleTest as they happen (ADD_FAILURE), so helpers return plain
// values and tests stay readable; a helper that fails returns an empty/false value.
//
// Threading: a Kubectl may be shared between threads; fixtures are owned by one test.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "test/e2e/support/subprocess.h"

namespace nmo::e2e {

using namespace std::chrono_literals;

/// The nodes of docs/design.md §8's scenarios, created by `make cluster-up`.
inline const std::vector<std::string> kControlPlaneNodes = {"node-master-01", "node-master-02",
                                                            "node-master-03"};
inline const std::vector<std::string> kWorkerNodes = {
    "node-worker-01", "node-worker-02", "node-worker-03", "node-worker-04", "node-worker-05"};

/// Fault hooks of the kwok configuration (hack/testenv/kwok-config.sh).
inline constexpr const char* kNotReadyLabel = "test.node-maintenance/not-ready";
inline constexpr const char* kSlowDeleteAnnotation = "test.node-maintenance/slow-delete";

/// Runs kubectl against the test cluster.
class Kubectl {
 public:
  /// Runs `kubectl <args>` with `input` on stdin.
  [[nodiscard]] ProcessResult run(const std::vector<std::string>& args,
                                  const std::string& input = {}) const;

  /// Runs kubectl and records a test failure (with its stderr) when it exits non-zero.
  /// Returns stdout.
  std::string must(const std::vector<std::string>& args, const std::string& input = {}) const;

  /// `kubectl apply -f -` of a YAML or JSON document; records a failure when refused.
  void apply(const std::string& manifest) const;

  /// `kubectl get <args> -o json`, parsed. Empty when the object does not exist.
  [[nodiscard]] std::optional<boost::json::value> get_json(
      const std::vector<std::string>& args) const;
};

/// The test cluster's Kubernetes minor (27 for v1.27.16), read once from GET /version; 0 (and a
/// test failure) when it cannot be read.
int server_minor(const Kubectl& kubectl);

/// deploy/'s CRD kustomization for the test cluster, relative to the checkout: deploy/crd, or
/// deploy/before-1.31/crd for a server without field selectors on custom resources.
std::string crd_kustomization(const Kubectl& kubectl);

/// authentication.k8s.io's SelfSubjectReview ("who am I") on the test cluster: the apiVersion
/// (authentication.k8s.io/v1 from 1.28, v1beta1 before) and its collection path.
std::string self_subject_review_api_version(const Kubectl& kubectl);
std::string self_subject_review_path(const Kubectl& kubectl);

/// Base fixture of every end-to-end test: fails the test at once (instead of letting it time
/// out) when KUBECONFIG is not set, so a test never falls back to whatever cluster kubectl
/// would pick by default.
class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override;

  Kubectl kubectl_;
};

/// Polls `condition` until it is true or `timeout` passes. On timeout records a failure
/// naming `what`, plus `describe()` (the state last seen) when given. Returns the outcome.
bool wait_until(const std::string& what, std::chrono::milliseconds timeout,
                const std::function<bool()>& condition,
                const std::function<std::string()>& describe = {});

/// A fresh namespace with a unique name, deleted (without waiting) when the fixture ends.
/// The constructor returns once the namespace's default ServiceAccount exists.
class TestNamespace {
 public:
  TestNamespace(const Kubectl& kubectl, const std::string& prefix);
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;
  ~TestNamespace();

  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  const Kubectl& kubectl_;
  std::string name_;
};

/// Makes `node` NotReady until the label is removed: labels it with kNotReadyLabel (kwok then
/// leaves its Ready condition alone) and sets the condition to False.
void make_not_ready(const Kubectl& kubectl, const std::string& node);

/// make_not_ready(), then waits up to `timeout` until the API server shows the node's Ready
/// condition False; false (and a test failure naming the node) when it does not.
bool make_not_ready_and_wait(const Kubectl& kubectl, const std::string& node,
                             std::chrono::milliseconds timeout);

/// Restores a node when the test ends: uncordons it and removes the labels, annotations
/// and taints the test added, so one test's changes never leak into the next.
class NodeGuard {
 public:
  NodeGuard(const Kubectl& kubectl, std::string node);
  NodeGuard(const NodeGuard&) = delete;
  NodeGuard& operator=(const NodeGuard&) = delete;
  ~NodeGuard();

 private:
  const Kubectl& kubectl_;
  std::string node_;
};

/// A name unique within this test run: `<prefix>-<random hex>`.
std::string unique_name(const std::string& prefix);

/// Manifest builders (JSON) for the workloads tests create.
std::string deployment_manifest(const std::string& ns, const std::string& name, int replicas,
                                const std::string& app_label);
std::string daemonset_manifest(const std::string& ns, const std::string& name,
                               const std::string& app_label);
std::string pdb_manifest(const std::string& ns, const std::string& name, int min_available,
                         const std::string& app_label);

/// A bare pod (no controller) bound to `node` directly, so no scheduler is involved.
/// `annotations` are added as given (e.g. kSlowDeleteAnnotation, or the mirror annotation).
std::string pod_manifest(const std::string& ns, const std::string& name, const std::string& node,
                         const std::vector<std::pair<std::string, std::string>>& annotations = {},
                         int termination_grace_period_seconds = 1);

/// An extra Node (kwok makes it Ready). Tests that create nodes delete them at the end.
std::string node_manifest(const std::string& name,
                          const std::vector<std::pair<std::string, std::string>>& labels = {});

/// Pods of namespace `ns` matching the label selector, as JSON objects.
std::vector<boost::json::object> list_pods(const Kubectl& kubectl, const std::string& ns,
                                           const std::string& selector);

/// Waits (90 s) until exactly `count` pods match `selector` in `ns`, all Running and Ready
/// (pod_running_ready()); on timeout records a failure and returns false.
bool wait_running_pods(const Kubectl& kubectl, const std::string& ns, const std::string& selector,
                       std::size_t count);

/// The `field` ("status", "reason", "message") of the status condition `type` of `object`, or ""
/// when it has no such condition.
std::string condition_field(const boost::json::value& object, const std::string& type,
                            const std::string& field);

/// True when the pod is Running, has a Ready condition True and is not terminating.
bool pod_running_ready(const boost::json::object& pod);

/// The node's Ready condition status ("True", "False", "Unknown"), or "" when absent.
std::string node_ready_status(const boost::json::object& node);

/// Reads a string at a JSON pointer, or "" when absent or not a string.
std::string string_at(const boost::json::value& v, const std::string& pointer);

/// Reads an integer at a JSON pointer, or nullopt when absent.
std::optional<std::int64_t> int_at(const boost::json::value& v, const std::string& pointer);

/// Compacts the local cluster's etcd at its current revision, so that every older resource
/// version is gone for good (the API server answers watches from them with 410 Gone, whether
/// it serves them from its watch cache or from etcd). Needs NMO_ETCD_URL, which `make test`
/// and `make cluster-env` export. Returns false and records a failure when it cannot.
bool compact_etcd();

/// Writes `value` under `key` in the local cluster's etcd, through the same JSON gateway as
/// compact_etcd(), which moves etcd's revision on by one. Keep `key` outside /registry/, where
/// the API server keeps its objects. Returns etcd's revision after the write, or std::nullopt
/// (and records a failure) when it cannot.
std::optional<std::int64_t> put_etcd_key(const std::string& key, const std::string& value);

}  // namespace nmo::e2e
