// LiveClusterLookup: ClusterLookup answered by the API server at the moment of the review, not
// from a cache (docs/design.md §4: a cache could miss a NodeMaintenance created a moment ago): GET
// the Node, and LIST NodeMaintenances with fieldSelector spec.nodeName=<node>, which the CRD's
// selectableFields make the API server filter.
//
// Servers before Kubernetes 1.31 (and a CRD installed without selectableFields) refuse that
// selector ("400 field label not supported: spec.nodeName"). start() asks once; then, and on the
// first such 400 of a review, the lookup answers from the NodeMaintenance informer of the
// process's shared cache (runtime/cache.h, indexed by node) instead, never from a full list per
// review. The cache can be a moment behind a create on another replica; the controller's
// older-wins rule settles that (docs/design.md §4).
//
// Threading: like kube::Client, awaitable concurrently from any executor. start() and stop() are
// called once each, in that order (the Manager does, via the Runnable interface).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/client/client.h"
#include "operator/api/node_maintenance.h"
#include "operator/webhook/cluster_lookup.h"
#include "runtime/cache.h"
#include "runtime/reflector.h"
#include "runtime/runnable.h"
#include "runtime/store.h"

namespace nmo::op::webhook {

class LiveClusterLookup final : public ClusterLookup, public runtime::Runnable {
 public:
  // `client` and `cache` must outlive the lookup; declares its NodeMaintenance informer in
  // `cache`, so it is made before the cache starts.
  LiveClusterLookup(kube::Client& client, runtime::Cache& cache);
  ~LiveClusterLookup() override;

  // Asks the API server whether it filters NodeMaintenances by spec.nodeName (one LIST with that
  // selector and limit 1); when it does not, waits for the shared cache's first list (and
  // fails when that list does not come within 8 s). When the question gets no answer, logs it
  // and leaves the decision to the first review.
  asio::awaitable<Result<void>> start() override;
  // Reviews after this that would need the cache are refused.
  asio::awaitable<void> stop() override;

  // Whether reviews ask the API server with the field selector (false: the cache answers).
  [[nodiscard]] bool filters_on_server() const {
    return filters_on_server_.load(std::memory_order_acquire);
  }

  asio::awaitable<Result<bool>> node_exists(std::string node) override;
  asio::awaitable<Result<std::vector<ExistingMaintenance>>> maintenances_for_node(
      std::string node) override;
  // GETs the node; for a control-plane node, asks the controller's quorum rule: on OpenShift
  // (config.openshift.io served) the guard PDB and guard pods of openshift-etcd, elsewhere the
  // etcd mirror pods of kube-system and the readiness of their nodes.
  asio::awaitable<Result<bool>> etcd_quorum_safe(std::string node) override;

 private:
  // LIST with the field selector; kBadRequest "field label not supported" when not served.
  asio::awaitable<Result<std::vector<ExistingMaintenance>>> list_on_server(std::string node);
  // Switches to the cache after the API server's `refusal` of the selector (logged once) and
  // waits until it has listed. Refused before start() and after stop().
  asio::awaitable<Result<void>> use_cache(Error refusal);
  asio::awaitable<Result<bool>> openshift_quorum_safe(std::string node);

  kube::Client& client_;
  runtime::Reflector<NodeMaintenance>& informer_;
  std::atomic<bool> filters_on_server_{true};
  std::mutex mutex_;  // guards the two below, never held across a co_await
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace nmo::op::webhook
