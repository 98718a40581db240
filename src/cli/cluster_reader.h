// ClusterReader: what the plugin reads of a cluster, one typed read per fact, every failure
// already a one-line message with its exit status (outcome.h). ApiClusterReader reads it from
// an API server through kube::Client; the plugin's commands and their unit tests (against the
// in-memory API server of kube/client/testing) use the same one, so a test sees the requests
// the plugin really makes.
//
// Threading: used by one command coroutine on the io_context's single thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/diagnosis.h"
#include "cli/outcome.h"
#include "http/asio.h"
#include "kube/api/daemon_set.h"
#include "kube/api/lease.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/version.h"
#include "kube/client/client.h"
#include "operator/api/node_maintenance.h"
#include "operator/kubevirt/vm_policy.h"

namespace nmo::cli {

class ClusterReader {
 public:
  virtual ~ClusterReader() = default;

  // The Node `name`; std::nullopt when it does not exist.
  virtual asio::awaitable<Outcome<std::optional<kube::Node>>> node(std::string name) = 0;
  // The Nodes carrying the label key `label` (any value).
  virtual asio::awaitable<Outcome<std::vector<kube::Node>>> nodes_labelled(std::string label) = 0;
  // The pods bound to `node`, in every namespace.
  virtual asio::awaitable<Outcome<std::vector<kube::Pod>>> pods_on(std::string node) = 0;
  // The pods of namespace `ns` matching `label_selector` ("" selects all).
  virtual asio::awaitable<Outcome<std::vector<kube::Pod>>> pods(std::string ns,
                                                                std::string label_selector) = 0;
  // The DaemonSet `ns`/`name`; std::nullopt when it does not exist.
  virtual asio::awaitable<Outcome<std::optional<kube::DaemonSet>>> daemon_set(std::string ns,
                                                                              std::string name) = 0;
  virtual asio::awaitable<Outcome<std::vector<kube::PodDisruptionBudget>>> pdbs(std::string ns) = 0;
  virtual asio::awaitable<Outcome<std::vector<kube::Lease>>> leases(std::string ns) = 0;
  // Every NodeMaintenance, oldest first; a missing NodeMaintenance API is exit 4.
  virtual asio::awaitable<Outcome<std::vector<op::NodeMaintenance>>> maintenances() = 0;
  // Whether the API group/version root `path` ("/apis/kubevirt.io/v1") is served.
  virtual asio::awaitable<Outcome<bool>> served(std::string path) = 0;
  // The VirtualMachineInstance `ns`/`name`; std::nullopt when it does not exist.
  virtual asio::awaitable<Outcome<std::optional<op::Vmi>>> vmi(std::string ns,
                                                               std::string name) = 0;
  // The KubeVirt CR's default eviction strategy for VMIs, when one is set.
  virtual asio::awaitable<Outcome<std::optional<std::string>>> kubevirt_eviction_strategy() = 0;
  // The NodeMaintenance `name`; std::nullopt when it does not exist.
  virtual asio::awaitable<Outcome<std::optional<op::NodeMaintenance>>> maintenance(
      std::string name) = 0;
  // The Lease `ns`/`name`; std::nullopt when it does not exist.
  virtual asio::awaitable<Outcome<std::optional<kube::Lease>>> lease(std::string ns,
                                                                     std::string name) = 0;
  // The Pod `ns`/`name`; std::nullopt when it does not exist.
  virtual asio::awaitable<Outcome<std::optional<kube::Pod>>> pod(std::string ns,
                                                                 std::string name) = 0;
  // The Events the operator recorded (in `default`) about the `kind` object `name`, oldest first.
  virtual asio::awaitable<Outcome<std::vector<EventLine>>> operator_events(std::string kind,
                                                                           std::string name) = 0;
  // The API server's version; std::nullopt when it cannot be read (it only adds context).
  virtual asio::awaitable<std::optional<kube::ServerVersion>> server_version() = 0;
};

class ApiClusterReader final : public ClusterReader {
 public:
  // `server` names the API server in failure messages.
  ApiClusterReader(kube::Client& client, std::string server);

  asio::awaitable<Outcome<std::optional<kube::Node>>> node(std::string name) override;
  asio::awaitable<Outcome<std::vector<kube::Node>>> nodes_labelled(std::string label) override;
  asio::awaitable<Outcome<std::vector<kube::Pod>>> pods_on(std::string node) override;
  asio::awaitable<Outcome<std::vector<kube::Pod>>> pods(std::string ns,
                                                        std::string label_selector) override;
  asio::awaitable<Outcome<std::optional<kube::DaemonSet>>> daemon_set(std::string ns,
                                                                      std::string name) override;
  asio::awaitable<Outcome<std::vector<kube::PodDisruptionBudget>>> pdbs(std::string ns) override;
  asio::awaitable<Outcome<std::vector<kube::Lease>>> leases(std::string ns) override;
  asio::awaitable<Outcome<std::vector<op::NodeMaintenance>>> maintenances() override;
  asio::awaitable<Outcome<bool>> served(std::string path) override;
  asio::awaitable<Outcome<std::optional<op::Vmi>>> vmi(std::string ns, std::string name) override;
  asio::awaitable<Outcome<std::optional<std::string>>> kubevirt_eviction_strategy() override;
  asio::awaitable<Outcome<std::optional<op::NodeMaintenance>>> maintenance(
      std::string name) override;
  asio::awaitable<Outcome<std::optional<kube::Lease>>> lease(std::string ns,
                                                             std::string name) override;
  asio::awaitable<Outcome<std::optional<kube::Pod>>> pod(std::string ns, std::string name) override;
  asio::awaitable<Outcome<std::vector<EventLine>>> operator_events(std::string kind,
                                                                   std::string name) override;
  asio::awaitable<std::optional<kube::ServerVersion>> server_version() override;

  // GET `path`; std::nullopt on 404.
  asio::awaitable<Outcome<std::optional<boost::json::value>>> get_optional(std::string path);

 private:
  // The object at `path` as `decode` reads it; std::nullopt on 404.
  template <typename T>
  asio::awaitable<Outcome<std::optional<T>>> object(std::string path,
                                                    Result<T> (*decode)(const boost::json::value&));
  template <typename T>
  asio::awaitable<Outcome<std::vector<T>>> list(std::string ns, kube::ListOptions options);

  kube::Client& client_;
  std::string server_;
};

}  // namespace nmo::cli
