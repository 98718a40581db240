#include "flags.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include <CLI/CLI.hpp>

#include "operator/api/server_support.h"
#include "runtime/upstream_flags.h"

#ifndef NMO_VERSION
#error "NMO_VERSION must be defined by the build (cmd/node-maintenance-operator/CMakeLists.txt)"
#endif

namespace nmo {

namespace {

// Upstream NMO's own flags (controller-runtime's) as given, so its Deployment and CSV run this
// binary unchanged (runtime/upstream_flags.h says what each does here). The two booleans count
// only when given (apply_upstream_flags()).
struct GivenUpstreamFlags {
  runtime::UpstreamFlags values;
  bool zap_devel = false;
  bool enable_http2 = false;
};

constexpr const char* kUpstreamGroup = "Upstream NMO's flags (accepted; docs/operations.md)";

// Which cluster, which namespaces, and how much the operator may do at once.
void add_cluster_flags(CLI::App& app, Flags& flags) {
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, in-cluster, then ~/.kube/config)")
      ->envname("NMO_KUBECONFIG");
  app.add_option("--context", flags.context, "kubeconfig context (default: current-context)")
      ->envname("NMO_CONTEXT");
  app.add_option("--namespace", flags.options.namespace_,
                 "the operator's namespace: budget slot Leases and the leader Lease")
      ->envname("NMO_NAMESPACE")
      ->capture_default_str();
  app.add_flag("--leader-elect", flags.leader_elect,
               "elect a leader among replicas; only the leader reconciles")
      ->envname("NMO_LEADER_ELECT");
  app.add_option("--max-parallel-maintenances", flags.max_parallel,
                 "how many nodes may be under maintenance at once")
      ->envname("NMO_MAX_PARALLEL_MAINTENANCES")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--lease-namespace", flags.options.lease_namespace,
                 "namespace of the medik8s node leases shared with NHC/SNR")
      ->envname("LEASE_NAMESPACE")
      ->capture_default_str();
  app.add_option("--etcd-quorum-check", flags.etcd_quorum_check,
                 "keep control-plane nodes Pending while etcd quorum would be lost: auto|off")
      ->envname("NMO_ETCD_QUORUM_CHECK")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  app.add_option("--etcd-quorum-stable-for", flags.etcd_quorum_stable_for_seconds,
                 "seconds etcd quorum must have stayed safe before a control-plane node is taken")
      ->envname("NMO_ETCD_QUORUM_STABLE_FOR")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  app.add_option("--kube-api-qps", flags.qps,
                 "client-side rate limit towards the API server; 0 or less: none (the API "
                 "server's Priority and Fairness is the brake)")
      ->envname("NMO_KUBE_API_QPS")
      ->check(CLI::Range(-100000.0, 100000.0))
      ->capture_default_str();
  app.add_option("--kube-api-burst", flags.burst,
                 "client-side burst towards the API server (with --kube-api-qps above 0)")
      ->envname("NMO_KUBE_API_BURST")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--evictions-in-flight", flags.options.evictions_in_flight,
                 "eviction requests awaiting their answer at once, per node")
      ->envname("NMO_EVICTIONS_IN_FLIGHT")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--evictions-in-flight-total", flags.options.evictions_in_flight_total,
                 "eviction requests awaiting their answer at once, across every maintenance")
      ->envname("NMO_EVICTIONS_IN_FLIGHT_TOTAL")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--node-lifecycle-conditions", flags.options.node_lifecycle_conditions,
                 "write MaintenanceInProgress, DrainInProgress and Drained on the node of each "
                 "maintenance; false: write none, and remove ours")
      ->envname("NMO_NODE_LIFECYCLE_CONDITIONS")
      ->capture_default_str();
  app.add_option("--plan-steering-taint", flags.plan_steering_taint,
                 "taint the nodes a running MaintenancePlan takes later with "
                 "nodemaintenance.medik8s.io/planned:PreferNoSchedule; false: none, and remove "
                 "ours")
      ->envname("NMO_PLAN_STEERING_TAINT")
      ->capture_default_str();
}

// The webhook, /metrics and the probes.
void add_server_flags(CLI::App& app, Flags& flags) {
  app.add_option("--webhook-port", flags.webhook_port,
                 "HTTPS port of the validating admission webhook; 0 disables it")
      ->envname("NMO_WEBHOOK_PORT")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--webhook-cert-dir", flags.webhook_cert_dir,
                 "directory with the webhook's tls.crt and tls.key (reloaded when they change)")
      ->envname("NMO_WEBHOOK_CERT_DIR")
      ->capture_default_str();
  app.add_option("--olm-cert-dir", flags.olm_cert_dir,
                 "where OLM mounts the webhook's apiserver.crt and apiserver.key; used when they "
                 "exist and --webhook-cert-dir is not given")
      ->envname("NMO_OLM_CERT_DIR")
      ->capture_default_str();
  app.add_flag("--webhook-reject-unsafe-control-plane", flags.webhook_reject_unsafe_control_plane,
               "refuse to create a NodeMaintenance for a control-plane node whose loss would "
               "break etcd quorum (upstream's behaviour), instead of keeping it Pending")
      ->envname("NMO_WEBHOOK_REJECT_UNSAFE_CONTROL_PLANE");
  app.add_option("--webhook-bind-address", flags.webhook_bind_address,
                 "IP address the webhook listens on")
      ->envname("NMO_WEBHOOK_BIND_ADDRESS")
      ->capture_default_str();
  app.add_option("--webhook-client-ca", flags.webhook_client_ca,
                 "PEM CA file: the webhook then requires a client certificate it signed (the API "
                 "server's, from its admission configuration); empty: none asked for")
      ->envname("NMO_WEBHOOK_CLIENT_CA");
  app.add_option("--metrics-bind-address", flags.metrics_bind_address,
                 "where /metrics listens (host:port, :port; 0 disables it)")
      ->envname("NMO_METRICS_BIND_ADDRESS")
      ->capture_default_str();
  app.add_option("--metrics-secure", flags.metrics_secure,
                 "serve /metrics over HTTPS to callers allowed by TokenReview and "
                 "SubjectAccessReview; false: plain HTTP to anyone")
      ->envname("NMO_METRICS_SECURE")
      ->capture_default_str();
  app.add_option("--metrics-cert-dir", flags.metrics_cert_dir,
                 "directory with tls.crt and tls.key for /metrics (default: a self-signed "
                 "certificate made at start)")
      ->envname("NMO_METRICS_CERT_DIR");
  app.add_option("--health-probe-bind-address", flags.health_probe_bind_address,
                 "where /healthz and /readyz listen (plain HTTP; 0 disables them)")
      ->envname("NMO_HEALTH_PROBE_BIND_ADDRESS")
      ->capture_default_str();
  app.add_option("--healthz-max-stall", flags.healthz_max_stall_seconds,
                 "seconds one reconcile may run before /healthz reports the loop as wedged")
      ->envname("NMO_HEALTHZ_MAX_STALL")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
}

void add_test_hooks(CLI::App& app, Flags& flags) {
  // For the end-to-end test of /healthz only; not shown in --help.
  app.add_option("--test-hook-wedge-reconcile", flags.options.wedge_reconcile_of)->group("");
  // For the end-to-end test of the node lease renewal only; not shown in --help.
  app.add_option("--test-hook-node-lease-renew-interval", flags.node_lease_renew_interval_seconds)
      ->check(CLI::Range(1, 86400))
      ->group("");
  // For the end-to-end tests of MaintenancePlans only; not shown in --help.
  app.add_option("--test-hook-plan-poll", flags.plan_poll_seconds)
      ->check(CLI::Range(1, 3600))
      ->group("");
}

void add_log_flags(CLI::App& app, Flags& flags) {
  app.add_option("--log-format", flags.log_format,
                 "json or text (default: json in a cluster, text elsewhere)")
      ->envname("NMO_LOG_FORMAT")
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("-v,--log-level", flags.verbosity, "debug verbosity (0 = decisions only)")
      ->envname("NMO_LOG_LEVEL")
      ->check(CLI::Range(0, 10))
      ->capture_default_str();
}

void add_upstream_flags(CLI::App& app, GivenUpstreamFlags& upstream) {
  app.add_flag("--zap-devel", upstream.zap_devel, "text logs at -v 1; =false: JSON logs")
      ->group(kUpstreamGroup);
  app.add_option("--zap-encoder", upstream.values.zap_encoder, "json|console: the log format")
      ->group(kUpstreamGroup);
  app.add_option("--zap-log-level", upstream.values.zap_log_level,
                 "debug|info|error|panic or N > 0: the verbosity")
      ->group(kUpstreamGroup);
  app.add_option("--zap-stacktrace-level", upstream.values.zap_stacktrace_level,
                 "info|error|panic: ignored (no stack traces)")
      ->group(kUpstreamGroup);
  app.add_option("--zap-time-encoding", upstream.values.zap_time_encoding,
                 "epoch|millis|nanos|iso8601|rfc3339|rfc3339nano: ignored (RFC 3339 always)")
      ->group(kUpstreamGroup);
  app.add_flag("--enable-http2", upstream.enable_http2, "ignored: the servers speak HTTP/1.1 only")
      ->group(kUpstreamGroup);
}

// OLM's certificate mount, when there is one and no other directory was asked for.
void use_olm_certificate_mount(const CLI::App& app, Flags& flags) {
  if (app.get_option("--webhook-cert-dir")->count() == 0 &&
      std::filesystem::exists(std::filesystem::path(flags.olm_cert_dir) / "apiserver.crt")) {
    flags.webhook_cert_dir = flags.olm_cert_dir;
    flags.webhook_cert_file = "apiserver.crt";
    flags.webhook_key_file = "apiserver.key";
  }
}

// The log format and verbosity the zap flags ask for, where ours were not given, and the notes
// saying what each upstream flag does here. std::nullopt to go on, or kExitUsage after a value
// zap would refuse, reported on stderr.
std::optional<int> apply_upstream_flags(const CLI::App& app, GivenUpstreamFlags upstream,
                                        Flags& flags) {
  if (app.get_option("--zap-devel")->count() > 0) upstream.values.zap_devel = upstream.zap_devel;
  if (app.get_option("--enable-http2")->count() > 0) {
    upstream.values.enable_http2 = upstream.enable_http2;
  }
  auto upstream_effects = runtime::map_upstream_flags(upstream.values);
  if (!upstream_effects) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n",
                 upstream_effects.error().message.c_str());
    return kExitUsage;
  }
  // Ours win over the zap flags.
  if (flags.log_format.empty()) flags.log_format = upstream_effects->log_format;
  if (app.get_option("--log-level")->count() == 0 && upstream_effects->verbosity) {
    flags.verbosity = *upstream_effects->verbosity;
  }
  flags.upstream_notes = std::move(upstream_effects->notes);
  return std::nullopt;
}

// The operator options that follow from the flags.
void derive_operator_options(const CLI::App& app, Flags& flags) {
  flags.namespace_given = app.get_option("--namespace")->count() > 0;
  flags.options.max_parallel_maintenances = flags.max_parallel;
  flags.options.etcd_quorum_check = flags.etcd_quorum_check == "auto";
  flags.options.etcd_quorum_stable_for = std::chrono::seconds(flags.etcd_quorum_stable_for_seconds);
  flags.options.identity = host_identity();
  flags.options.node_lease_renew_interval =
      std::chrono::seconds(flags.node_lease_renew_interval_seconds);
}

}  // namespace

std::optional<int> parse_flags(int argc, char** argv, Flags& flags) {
  CLI::App app{
      "Kubernetes Node Maintenance Operator: cordons and drains nodes requested by "
      "NodeMaintenance objects. Tested on Kubernetes " +
          op::tested_range() +
          "; at start it logs the API server's version and what an older one lacks.",
      "node-maintenance-operator"};
  app.set_version_flag("--version", std::string("node-maintenance-operator ") + NMO_VERSION);
  add_cluster_flags(app, flags);
  add_server_flags(app, flags);
  add_test_hooks(app, flags);
  add_log_flags(app, flags);
  GivenUpstreamFlags upstream;
  add_upstream_flags(app, upstream);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    // One line naming the flag, and the exit status of every other usage error.
    std::fprintf(stderr, "node-maintenance-operator: %s (see --help)\n", error.what());
    return kExitUsage;
  }
  use_olm_certificate_mount(app, flags);
  if (const std::optional<int> stop = apply_upstream_flags(app, std::move(upstream), flags)) {
    return stop;
  }
  derive_operator_options(app, flags);
  return std::nullopt;
}

bool in_cluster(const kube::RestConfig& rest) { return rest.origin.rfind("in-cluster", 0) == 0; }

std::string resolve_namespace(Flags& flags, const kube::RestConfig& rest) {
  if (flags.namespace_given) return "--namespace";
  if (const char* from_env = std::getenv("OPERATOR_NAMESPACE");
      from_env != nullptr && *from_env != '\0') {
    flags.options.namespace_ = from_env;
    return "OPERATOR_NAMESPACE";
  }
  if (in_cluster(rest) && !rest.default_namespace.empty()) {
    flags.options.namespace_ = rest.default_namespace;
    return "the pod's namespace";
  }
  return "default";
}

std::string host_identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) == 0) return name.data();
  return "node-maintenance-operator";
}

}  // namespace nmo
