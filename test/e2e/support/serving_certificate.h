// A CA and a serving certificate for 127.0.0.1 in a temporary directory (tls.crt, tls.key,
// ca.crt), made with the openssl command line as a developer would (deploy/webhook/README.md),
// for admission webhooks the local API server calls. Test support only.
//
// Threading: not shared; one owner.
#pragma once

#include <filesystem>
#include <string>

namespace nmo::e2e {

class ServingCertificate {
 public:
  /// Records a test failure when openssl fails; dir() is then empty.
  ServingCertificate();
  ServingCertificate(const ServingCertificate&) = delete;
  ServingCertificate& operator=(const ServingCertificate&) = delete;
  /// Removes the directory.
  ~ServingCertificate();

  /// The directory with tls.crt and tls.key (a --webhook-cert-dir).
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  /// The CA certificate (PEM), for a webhook configuration's caBundle (base64 of it).
  [[nodiscard]] std::string ca_pem() const;

 private:
  std::filesystem::path dir_;
};

}  // namespace nmo::e2e
