#include "test/e2e/support/nhc_process.h"

#include <stdlib.h>  // mkdtemp

#include <cstdlib>
#include <system_error>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "test/e2e/support/subprocess.h"

#ifndef NMO_NHC_DIR
#error "NMO_NHC_DIR must be defined by the build (test/CMakeLists.txt)"
#endif

namespace nmo::e2e {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

// The fixture's CRDs: NHC's own, and SNR's template and remediation.
const std::vector<std::string> kCrdFiles = {
    "crds/remediation.medik8s.io_nodehealthchecks.yaml",
    "crds/self-node-remediation.medik8s.io_selfnoderemediationtemplates.yaml",
    "crds/self-node-remediation.medik8s.io_selfnoderemediations.yaml"};
const std::vector<std::string> kCrdNames = {
    "nodehealthchecks.remediation.medik8s.io",
    "selfnoderemediationtemplates.self-node-remediation.medik8s.io",
    "selfnoderemediations.self-node-remediation.medik8s.io"};

}  // namespace

fs::path nhc_fixture() {
  if (const char* dir = std::getenv("NMO_NHC_DIR"); dir != nullptr && *dir != '\0') return dir;
  return NMO_NHC_DIR;
}

bool nhc_fixture_present() {
  const fs::path dir = nhc_fixture();
  if (!fs::exists(dir / "manager.xz")) return false;
  for (const auto& file : kCrdFiles) {
    if (!fs::exists(dir / file)) return false;
  }
  return true;
}

void install_nhc_crds(const Kubectl& kubectl) {
  for (const auto& file : kCrdFiles) {
    kubectl.must({"apply", "-f", (nhc_fixture() / file).string()});
  }
  std::vector<std::string> args{"wait", "--for=condition=Established", "--timeout=60s"};
  for (const auto& name : kCrdNames) args.push_back("crd/" + name);
  const ProcessResult established = kubectl.run(args);
  if (!established.ok()) ADD_FAILURE() << "NHC's CRDs are not Established: " << established.err;
}

std::string node_health_check_manifest(const std::string& name, const std::string& selector_key,
                                       const std::string& selector_value,
                                       std::chrono::seconds duration,
                                       const std::string& template_ns,
                                       const std::string& template_name) {
  const std::string after = std::to_string(duration.count()) + "s";
  return json::serialize(json::object{
      {"apiVersion", "remediation.medik8s.io/v1alpha1"},
      {"kind", "NodeHealthCheck"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"selector", {{"matchLabels", {{selector_key, selector_value}}}}},
        {"minHealthy", 0},
        {"unhealthyConditions",
         json::array{{{"type", "Ready"}, {"status", "False"}, {"duration", after}},
                     {{"type", "Ready"}, {"status", "Unknown"}, {"duration", after}}}},
        {"remediationTemplate",
         {{"apiVersion", kSnrApiVersion},
          {"kind", "SelfNodeRemediationTemplate"},
          {"namespace", template_ns},
          {"name", template_name}}}}},
  });
}

std::string snr_template_manifest(const std::string& ns, const std::string& name) {
  return json::serialize(json::object{
      {"apiVersion", kSnrApiVersion},
      {"kind", "SelfNodeRemediationTemplate"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec", {{"template", {{"spec", {{"remediationStrategy", "Automatic"}}}}}}},
  });
}

std::string nhc_lease_holder(const std::string& node_health_check) {
  return "NodeHealthCheck-" + node_health_check;
}

NhcProcess::NhcProcess(const std::string& log_name, const std::string& deployment_namespace) {
  std::string pattern = (fs::temp_directory_path() / "nmo-e2e-nhc-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return;
  }
  work_ = pattern;
  const fs::path binary = work_ / "nhc-manager";
  const ProcessResult unpacked =
      run_process({"sh", "-c", "xz -dc \"$0\" > \"$1\" && chmod +x \"$1\"",
                   (nhc_fixture() / "manager.xz").string(), binary.string()});
  if (!unpacked.ok()) {
    ADD_FAILURE() << "unpacking NHC's manager.xz failed (is xz installed?): " << unpacked.err;
    return;
  }
  std::error_code ec;
  fs::create_directories(work_ / "tmp/k8s-webhook-server", ec);
  fs::create_symlink(certificate_.dir(), work_ / "tmp/k8s-webhook-server/serving-certs", ec);
  if (ec) {
    ADD_FAILURE() << "cannot link NHC's serving certificate: " << ec.message();
    return;
  }
  const char* kubeconfig = std::getenv("KUBECONFIG");
  process_ = std::make_unique<OperatorProcess>(
      ForeignOperator{
          .binary = binary,
          .args = {"--kubeconfig", kubeconfig != nullptr ? kubeconfig : "", "--leader-elect=false",
                   "--metrics-bind-address=0", "--health-probe-bind-address=0"},
          .env = {"TMPDIR=" + (work_ / "tmp").string(),
                  "DEPLOYMENT_NAMESPACE=" + deployment_namespace}},
      log_name);
  // controller-runtime's line once the NodeHealthCheck controller's workers run.
  if (!process_->wait_for_log("Starting workers", std::chrono::seconds(60))) {
    ADD_FAILURE() << "NHC did not start; log " << process_->log_path() << ":\n"
                  << process_->log_tail(40);
  }
}

NhcProcess::~NhcProcess() {
  (void)stop();
  std::error_code ignored;
  if (!work_.empty()) fs::remove_all(work_, ignored);
}

bool NhcProcess::running() { return process_ != nullptr && process_->running(); }

int NhcProcess::stop() { return process_ == nullptr ? -1 : process_->stop(); }

int NhcProcess::kill() { return process_ == nullptr ? -1 : process_->kill(); }

std::string NhcProcess::log_tail(std::size_t lines) const {
  return process_ == nullptr ? std::string() : process_->log_tail(lines);
}

fs::path NhcProcess::log_path() const {
  return process_ == nullptr ? fs::path() : process_->log_path();
}

}  // namespace nmo::e2e
