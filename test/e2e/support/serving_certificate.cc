#include "test/e2e/support/serving_certificate.h"

#include <stdlib.h>  // mkdtemp

#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include "test/e2e/support/subprocess.h"

namespace nmo::e2e {
namespace {

void openssl(const std::vector<std::string>& argv) {
  const ProcessResult result = run_process(argv);
  if (!result.ok()) ADD_FAILURE() << argv[0] << " " << argv[1] << " failed: " << result.err;
}

}  // namespace

ServingCertificate::ServingCertificate() {
  std::string pattern = (std::filesystem::temp_directory_path() / "nmo-e2e-certs-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return;
  }
  dir_ = pattern;
  const std::string d = dir_.string();
  openssl({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
           "-nodes", "-days", "1", "-subj", "/CN=nmo-e2e-ca", "-keyout", d + "/ca.key", "-out",
           d + "/ca.crt"});
  openssl({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-subj", "/CN=127.0.0.1", "-keyout", d + "/tls.key", "-out", d + "/tls.csr"});
  std::ofstream(d + "/san.ext") << "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n";
  openssl({"openssl", "x509", "-req", "-in", d + "/tls.csr", "-CA", d + "/ca.crt", "-CAkey",
           d + "/ca.key", "-CAcreateserial", "-days", "1", "-extfile", d + "/san.ext", "-out",
           d + "/tls.crt"});
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

}  // namespace nmo::e2e
