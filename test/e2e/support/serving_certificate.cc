#include "test/e2e/support/serving_certificate.h"

#include <stdlib.h>  // mkdtemp

#include <fstream>
#include <sstream>
#include <system_error>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "test/e2e/support/cluster.h"
#include "test/e2e/support/subprocess.h"

namespace nmo::e2e {
namespace {

const std::string kScript = std::string(NMO_SOURCE_DIR) + "/hack/webhook-dev.sh";

}  // namespace

ServingCertificate::ServingCertificate() {
  std::string pattern = (std::filesystem::temp_directory_path() / "nmo-e2e-certs-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return;
  }
  dir_ = pattern;
  const ProcessResult made = run_process({kScript, "certificate", dir_.string(), "1"});
  if (!made.ok()) ADD_FAILURE() << kScript << " certificate failed: " << made.err;
}

ServingCertificate::~ServingCertificate() {
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string ServingCertificate::ca_pem() const {
  std::ifstream in(dir_ / "ca.crt", std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string ServingCertificate::webhook_configuration(const std::string& url) const {
  const ProcessResult made =
      run_process({kScript, "configuration", url, (dir_ / "ca.crt").string()});
  if (!made.ok()) {
    ADD_FAILURE() << kScript << " configuration failed: " << made.err;
    return {};
  }
  return made.out;
}

std::string ServingCertificate::scoped_webhook_configuration(const std::string& url,
                                                             const std::string& name,
                                                             const std::string& label,
                                                             const std::string& object_label,
                                                             const std::string& value) const {
  const std::string made = webhook_configuration(url);
  if (made.empty()) return {};
  boost::json::object configuration = boost::json::parse(made).as_object();
  boost::json::object& metadata = configuration["metadata"].as_object();
  metadata["name"] = name;
  metadata["labels"].as_object()[label] = "true";
  boost::json::array& webhooks = configuration["webhooks"].as_array();
  if (webhooks.size() != 1U) {
    ADD_FAILURE() << "deploy/webhook has " << webhooks.size() << " webhooks, expected one";
    return {};
  }
  webhooks[0].as_object()["objectSelector"] = {{"matchLabels", {{object_label, value}}}};
  return boost::json::serialize(configuration);
}

std::string create_review(const std::string& name, const boost::json::value& object,
                          const std::string& username) {
  return boost::json::serialize(
      boost::json::object{{"apiVersion", "admission.k8s.io/v1"},
                          {"kind", "AdmissionReview"},
                          {"request",
                           {{"uid", unique_name("review")},
                            {"kind",
                             {{"group", "nodemaintenance.medik8s.io"},
                              {"version", "v1beta1"},
                              {"kind", "NodeMaintenance"}}},
                            {"resource",
                             {{"group", "nodemaintenance.medik8s.io"},
                              {"version", "v1beta1"},
                              {"resource", "nodemaintenances"}}},
                            {"name", name},
                            {"operation", "CREATE"},
                            {"userInfo",
                             {{"username", username},
                              {"uid", unique_name("uid")},
                              {"groups", boost::json::array{"system:authenticated"}}}},
                            {"object", object},
                            {"dryRun", false}}}});
}

}  // namespace nmo::e2e
