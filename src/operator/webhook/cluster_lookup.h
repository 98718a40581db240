// ClusterLookup: the two questions the webhook's rules ask the cluster, behind an interface so
// the rules can be tested without one. live_lookup.h answers them from the API server.
//
// Threading: implementations may be awaited concurrently from coroutines on any executor.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "http/asio.h"
#include "kube/api/time.h"

namespace nmo::op::webhook {

// A NodeMaintenance that already exists, as the duplicate rule needs it.
struct ExistingMaintenance {
  std::string name;
  std::optional<kube::Time> created;  // metadata.creationTimestamp
  bool deleting = false;              // metadata.deletionTimestamp is set

  friend bool operator==(const ExistingMaintenance&, const ExistingMaintenance&) = default;
};

class ClusterLookup {
 public:
  virtual ~ClusterLookup() = default;

  // Whether the Node `node` exists. An Error only when the cluster could not be asked.
  virtual asio::awaitable<Result<bool>> node_exists(std::string node) = 0;

  // Every NodeMaintenance whose spec.nodeName is `node`, including those being deleted.
  virtual asio::awaitable<Result<std::vector<ExistingMaintenance>>> maintenances_for_node(
      std::string node) = 0;
  // Whether taking `node` down now keeps etcd quorum (docs/design.md §2.2's stacked-etcd rule; true
  // for a node that is not control-plane and when no etcd member pods exist). Asked only with
  // --webhook-reject-unsafe-control-plane. The default answers true.
  virtual asio::awaitable<Result<bool>> etcd_quorum_safe(std::string node) {
    (void)node;
    co_return true;
  }
};

}  // namespace nmo::op::webhook
