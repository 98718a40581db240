// LiveClusterLookup: ClusterLookup answered by the API server at the moment of the review, not
// from a cache (docs/design.md §4: a cache could miss a NodeMaintenance created a moment ago): GET
// the Node, and LIST NodeMaintenances with fieldSelector spec.nodeName=<node>, which the CRD's
// selectableFields make the API server filter.
//
// Threading: like kube::Client, awaitable concurrently from any executor.
#pragma once

#include "kube/client/client.h"
#include "operator/webhook/cluster_lookup.h"

namespace nmo::op::webhook {

class LiveClusterLookup final : public ClusterLookup {
 public:
  // `client` must outlive the lookup.
  explicit LiveClusterLookup(kube::Client& client) : client_(client) {}

  asio::awaitable<Result<bool>> node_exists(std::string node) override;
  asio::awaitable<Result<std::vector<ExistingMaintenance>>> maintenances_for_node(
      std::string node) override;
  // GETs the node; for a control-plane node, asks the controller's quorum rule: on OpenShift
  // (config.openshift.io served) the guard PDB and guard pods of openshift-etcd, elsewhere the
  // etcd mirror pods of kube-system and the readiness of their nodes.
  asio::awaitable<Result<bool>> etcd_quorum_safe(std::string node) override;

 private:
  asio::awaitable<Result<bool>> openshift_quorum_safe(std::string node);

  kube::Client& client_;
};

}  // namespace nmo::op::webhook
