// medik8s Node Health Check (NHC) run beside the operator by end-to-end tests, to prove the node
// lease contract (docs/design.md §3.1) against NHC itself rather than a hand-written Lease.
//
// NHC's manager, its CRD and Self Node Remediation's CRDs are a test fixture outside the
// repository (test/README.md): $NMO_NHC_DIR, else the directory the build compiled in (the CMake
// cache variable NMO_NHC_DIR, by default shared/nhc beside the checkout). Its `manager.xz` is
// unpacked into a temporary directory and run as a child process with the admin kubeconfig (NHC is
// a neighbour, not the operator), without leader election, its metrics and probe servers off, its
// webhook server on a throwaway certificate where controller-runtime looks for it
// ($TMPDIR/k8s-webhook-server/serving-certs) and on port 9443, which nothing calls: no webhook
// configuration points at it. Self Node Remediation's controller does not run (it reboots
// machines); tests play its part by making the node Ready again.
//
// Threading: one owner, the test's thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_process.h"
#include "test/e2e/support/serving_certificate.h"

namespace nmo::e2e {

/// The fixture directory (manager.xz, crds/).
std::filesystem::path nhc_fixture();

/// Whether the fixture is complete enough to run NHC.
bool nhc_fixture_present();

/// Self Node Remediation's API, the remediation the tests' NodeHealthChecks create.
inline constexpr const char* kSnrApiVersion = "self-node-remediation.medik8s.io/v1alpha1";
inline constexpr const char* kSnrResource = "selfnoderemediations.self-node-remediation.medik8s.io";

/// NHC's Events about a NodeHealthCheck (its utils.EventReason* values).
inline constexpr const char* kRemediationSkipped = "RemediationSkipped";
inline constexpr const char* kRemediationCreated = "RemediationCreated";

/// Applies NHC's and SNR's CRDs from the fixture (idempotent; left installed: nothing else in
/// the suite uses their groups) and waits until they are Established. Records a failure when
/// it cannot.
void install_nhc_crds(const Kubectl& kubectl);

/// A NodeHealthCheck named `name` over the nodes labelled `selector_key`=`selector_value`: a node
/// is unhealthy once Ready has been False or Unknown for `duration`; minHealthy 0, so a selection
/// of a few test nodes is always remediated; SNR's template `template_name` in `template_ns`.
std::string node_health_check_manifest(const std::string& name, const std::string& selector_key,
                                       const std::string& selector_value,
                                       std::chrono::seconds duration,
                                       const std::string& template_ns,
                                       const std::string& template_name);

/// A SelfNodeRemediationTemplate (strategy Automatic, SNR's default).
std::string snr_template_manifest(const std::string& ns, const std::string& name);

/// The holder identity NHC writes into the node Leases it takes (its lease manager:
/// "NodeHealthCheck-<NodeHealthCheck name>").
std::string nhc_lease_holder(const std::string& node_health_check);

/// NHC's manager, running. Starts in the constructor (unpacks the fixture into a temporary
/// directory first) and returns once its NodeHealthCheck controller runs its workers; stopped
/// and its directory removed by the destructor.
class NhcProcess {
 public:
  /// `deployment_namespace` must exist (NHC exits otherwise). Records a failure when NHC cannot
  /// be started; running() is then false.
  NhcProcess(const std::string& log_name, const std::string& deployment_namespace);
  NhcProcess(const NhcProcess&) = delete;
  NhcProcess& operator=(const NhcProcess&) = delete;
  ~NhcProcess();

  [[nodiscard]] bool running();
  /// SIGTERM, as its Deployment would be stopped; returns the exit status.
  int stop();
  /// SIGKILL, as a crash or a node failure ends its pod: nothing is cleaned up.
  int kill();
  [[nodiscard]] std::string log_tail(std::size_t lines) const;
  [[nodiscard]] std::filesystem::path log_path() const;

 private:
  std::filesystem::path work_;
  ServingCertificate certificate_;
  std::unique_ptr<OperatorProcess> process_;
};

}  // namespace nmo::e2e
