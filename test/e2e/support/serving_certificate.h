// A CA and a serving certificate for 127.0.0.1 in a temporary directory (tls.crt, tls.key,
// ca.crt), made by hack/webhook-dev.sh as `make run` makes its own, for admission webhooks the
// local API server calls; and the dev webhook configuration of deploy/webhook pointing at one.
// Test support only.
//
// Threading: not shared; one owner.
#pragma once

#include <filesystem>
#include <string>

#include <boost/json/value.hpp>

namespace nmo::e2e {

class ServingCertificate {
 public:
  /// Records a test failure when the certificate cannot be made.
  ServingCertificate();
  ServingCertificate(const ServingCertificate&) = delete;
  ServingCertificate& operator=(const ServingCertificate&) = delete;
  /// Removes the directory.
  ~ServingCertificate();

  /// The directory with tls.crt and tls.key (a --webhook-cert-dir).
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  /// The CA certificate (PEM), for a webhook configuration's caBundle (base64 of it).
  [[nodiscard]] std::string ca_pem() const;
  /// deploy/webhook's ValidatingWebhookConfiguration (JSON) with clientConfig pointing at `url`
  /// and this CA as caBundle (hack/webhook-dev.sh configuration); "" (and a failure) when it
  /// cannot be made.
  [[nodiscard]] std::string webhook_configuration(const std::string& url) const;
  /// webhook_configuration(url) named `name`, labelled `label`=true (so that a run can remove
  /// the ones a crashed run left), and calling the webhook only for objects labelled
  /// `object_label`=`value`, so that no other test's objects reach it. JSON; "" (and a failure)
  /// when it cannot be made.
  [[nodiscard]] std::string scoped_webhook_configuration(const std::string& url,
                                                         const std::string& name,
                                                         const std::string& label,
                                                         const std::string& object_label,
                                                         const std::string& value) const;

 private:
  std::filesystem::path dir_;
};

/// An AdmissionReview (admission.k8s.io/v1) CREATE of the NodeMaintenance `object` named
/// `name` by `username` (a fresh uid, group system:authenticated), as the API server sends it
/// to the webhook; for tests that post reviews straight to the webhook port. JSON.
[[nodiscard]] std::string create_review(const std::string& name, const boost::json::value& object,
                                        const std::string& username);

}  // namespace nmo::e2e
