// The manager binary's flags (docs/design.md §6): each also settable through the environment as
// NMO_<FLAG>, upstream NMO's own flags accepted beside ours (runtime/upstream_flags.h), OLM's
// certificate mount used when it is there, and the operator's namespace found the way upstream's
// manifests expect.
//
// Threading: called once from main() before anything else runs.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kube/config/rest_config.h"
#include "operator/controller/node_maintenance_controller.h"

namespace nmo {

// The exit status of a bad flag or configuration.
inline constexpr int kExitUsage = 2;

struct Flags {
  std::string kubeconfig;
  std::string context;
  bool leader_elect = false;
  int max_parallel = 1;
  std::string etcd_quorum_check = "auto";
  int etcd_quorum_stable_for_seconds = 30;
  // No client-side rate limit by default (docs/design.md §6).
  double qps = 0.0;
  int burst = 30;
  // Empty: json in a cluster (in-cluster service account), text elsewhere.
  std::string log_format;
  int verbosity = 0;
  int webhook_port = 9443;
  // controller-runtime's default, so manifests written for upstream NMO mount the Secret there.
  std::string webhook_cert_dir = "/tmp/k8s-webhook-server/serving-certs";
  // Where OLM mounts the webhook's certificate (apiserver.crt, apiserver.key); used when it exists
  // and --webhook-cert-dir is not given.
  std::string olm_cert_dir = "/apiserver.local.config/certificates";
  std::string webhook_cert_file = "tls.crt";
  std::string webhook_key_file = "tls.key";
  // Every address, IPv6 and IPv4 (dual stack; IPv4 only on a host without IPv6).
  std::string webhook_bind_address = "::";
  // Empty: no client certificate asked for (docs/operations.md, "Webhook client certificates").
  std::string webhook_client_ca;
  bool webhook_reject_unsafe_control_plane = false;
  std::string metrics_bind_address = ":8443";
  bool metrics_secure = true;
  std::string metrics_cert_dir;
  std::string health_probe_bind_address = ":8081";
  int healthz_max_stall_seconds = 300;
  int node_lease_renew_interval_seconds =
      static_cast<int>(std::chrono::seconds(op::kNodeLeaseRenewInterval).count());
  // How often a MaintenancePlan with nodes in progress is looked at (docs/design.md §10).
  int plan_poll_seconds = 5;
  // Whether the running MaintenancePlans taint the nodes they take later (docs/design.md §10).
  bool plan_steering_taint = true;
  // Whether --namespace (or NMO_NAMESPACE) was given; resolve_namespace() looks elsewhere if not.
  bool namespace_given = false;
  // What the upstream flags given do here, one line each, for the log.
  std::vector<std::string> upstream_notes;
  op::OperatorOptions options;
};

// Parses the command line into `flags`, with OLM's certificate mount and upstream's flags
// applied, and the operator options filled in from them. Returns std::nullopt to go on, or the
// exit status to stop with: 0 after --help or --version, kExitUsage after a usage error, which
// it has reported in one line on stderr naming the flag.
[[nodiscard]] std::optional<int> parse_flags(int argc, char** argv, Flags& flags);

// Sets flags.options.namespace_ unless --namespace was given: upstream's OPERATOR_NAMESPACE,
// else the pod's own namespace when `rest` is the in-cluster configuration, else the default.
// Returns where the namespace came from, for the log ("--namespace", "OPERATOR_NAMESPACE",
// "the pod's namespace", "default").
[[nodiscard]] std::string resolve_namespace(Flags& flags, const kube::RestConfig& rest);

// Whether `rest` is the in-cluster configuration (a ServiceAccount of a pod).
[[nodiscard]] bool in_cluster(const kube::RestConfig& rest);

// This replica's identity: $POD_NAME, else the host name.
[[nodiscard]] std::string host_identity();

}  // namespace nmo
