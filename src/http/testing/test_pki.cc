#include "http/testing/test_pki.h"

#include <string_view>
#include <utility>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "http/internal/openssl_handles.h"

namespace nmo::http::test {
namespace {

using internal::BignumPtr;
using internal::BioPtr;
using internal::EvpPkeyPtr;
using internal::X509ExtensionPtr;
using internal::X509Ptr;

constexpr long kValidFromSeconds = -3600;     // an hour of clock skew tolerated
constexpr long kValidForSeconds = 24 * 3600;  // longer than any test run

Error openssl_failure(std::string_view what) {
  return {ErrorCode::kInternal, std::string(what) + ": " + internal::openssl_error_text()};
}

Result<EvpPkeyPtr> new_key() {
  EvpPkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) {
    return openssl_failure("generate a P-256 key");
  }
  return key;
}

// What distinguishes the three certificates.
struct CertificateSpec {
  std::string common_name;
  std::string organization;                             // empty: none
  std::vector<std::pair<int, std::string>> extensions;  // (NID, value in openssl.cnf syntax)
};

Result<void> add_name_entry(X509_NAME* name, const char* field, const std::string& value) {
  if (value.empty()) {
    return {};
  }
  if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                 0) != 1) {
    return openssl_failure(std::string("set subject ") + field);
  }
  return {};
}

// A certificate for `key` signed by `issuer_key`; `issuer` is null for a self-signed one.
Result<X509Ptr> new_certificate(const CertificateSpec& spec, EVP_PKEY* key, X509* issuer,
                                EVP_PKEY* issuer_key) {
  X509Ptr certificate(X509_new());
  const BignumPtr serial(BN_new());
  if (!certificate || !serial || X509_set_version(certificate.get(), X509_VERSION_3) != 1 ||
      BN_rand(serial.get(), 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(certificate.get())) == nullptr ||
      X509_gmtime_adj(X509_getm_notBefore(certificate.get()), kValidFromSeconds) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(certificate.get()), kValidForSeconds) == nullptr ||
      X509_set_pubkey(certificate.get(), key) != 1) {
    return openssl_failure("create certificate");
  }
  X509_NAME* subject = X509_get_subject_name(certificate.get());
  NMO_TRY(add_name_entry(subject, "O", spec.organization));
  NMO_TRY(add_name_entry(subject, "CN", spec.common_name));
  X509* const signer = issuer != nullptr ? issuer : certificate.get();
  if (X509_set_issuer_name(certificate.get(), X509_get_subject_name(signer)) != 1) {
    return openssl_failure("set issuer");
  }

  X509V3_CTX context;
  X509V3_set_ctx(&context, signer, certificate.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : spec.extensions) {
    const X509ExtensionPtr extension(X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str()));
    if (!extension || X509_add_ext(certificate.get(), extension.get(), -1) != 1) {
      return openssl_failure("add extension " + std::string(OBJ_nid2sn(nid)) + "=" + value);
    }
  }
  if (X509_sign(certificate.get(), issuer_key, EVP_sha256()) == 0) {
    return openssl_failure("sign certificate");
  }
  return certificate;
}

Result<std::string> certificate_pem(X509* certificate) {
  const BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), certificate) != 1) {
    return openssl_failure("write certificate PEM");
  }
  return internal::memory_bio_text(bio.get());
}

Result<std::string> key_pem(EVP_PKEY* key) {
  const BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return openssl_failure("write key PEM");
  }
  return internal::memory_bio_text(bio.get());
}

std::string subject_alt_names(const TestPkiOptions& options) {
  std::string names;
  for (const std::string& name : options.server_dns_names) {
    names += (names.empty() ? "DNS:" : ",DNS:") + name;
  }
  for (const std::string& ip : options.server_ips) {
    names += (names.empty() ? "IP:" : ",IP:") + ip;
  }
  return names;
}

}  // namespace

Result<TestPki> make_test_pki(const TestPkiOptions& options) {
  NMO_TRY_ASSIGN(const EvpPkeyPtr ca_key, new_key());
  NMO_TRY_ASSIGN(const EvpPkeyPtr server_key, new_key());
  NMO_TRY_ASSIGN(const EvpPkeyPtr client_key, new_key());

  const CertificateSpec ca_spec{.common_name = "nmo-test-ca",
                                .organization = "",
                                .extensions = {{NID_basic_constraints, "critical,CA:TRUE"},
                                               {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                               {NID_subject_key_identifier, "hash"}}};
  NMO_TRY_ASSIGN(const X509Ptr ca, new_certificate(ca_spec, ca_key.get(), nullptr, ca_key.get()));

  CertificateSpec server_spec{
      .common_name = options.server_common_name,
      .organization = "",
      .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                     {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                     {NID_ext_key_usage, "serverAuth"},
                     {NID_authority_key_identifier, "keyid"}}};
  if (const std::string names = subject_alt_names(options); !names.empty()) {
    server_spec.extensions.emplace_back(NID_subject_alt_name, names);
  }
  NMO_TRY_ASSIGN(const X509Ptr server,
                 new_certificate(server_spec, server_key.get(), ca.get(), ca_key.get()));

  const CertificateSpec client_spec{
      .common_name = options.client_common_name,
      .organization = options.client_organization,
      .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                     {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                     {NID_ext_key_usage, "clientAuth"},
                     {NID_authority_key_identifier, "keyid"}}};
  NMO_TRY_ASSIGN(const X509Ptr client,
                 new_certificate(client_spec, client_key.get(), ca.get(), ca_key.get()));

  TestPki pki;
  NMO_TRY_ASSIGN(pki.ca_cert_pem, certificate_pem(ca.get()));
  NMO_TRY_ASSIGN(pki.ca_key_pem, key_pem(ca_key.get()));
  NMO_TRY_ASSIGN(pki.server_cert_pem, certificate_pem(server.get()));
  NMO_TRY_ASSIGN(pki.server_key_pem, key_pem(server_key.get()));
  NMO_TRY_ASSIGN(pki.client_cert_pem, certificate_pem(client.get()));
  NMO_TRY_ASSIGN(pki.client_key_pem, key_pem(client_key.get()));
  return pki;
}

}  // namespace nmo::http::test
