#include "http/self_signed.h"

#include <memory>

#include <boost/asio/ip/address.hpp>
#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "http/internal/openssl_handles.h"

namespace nmo::http {
namespace {

using internal::BignumPtr;
using internal::BioPtr;
using internal::EvpPkeyPtr;
using internal::X509ExtensionPtr;
using internal::X509Ptr;

Error openssl_failure(const char* what) {
  const unsigned long code = ERR_get_error();
  std::string detail = code != 0 ? ERR_error_string(code, nullptr) : "unknown error";
  ERR_clear_error();
  return Error(ErrorCode::kInternal,
               std::string("self-signed certificate: ") + what + " (" + detail + ")");
}

// Everything written to a memory BIO, as a string.
std::string drain(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : std::string();
}

}  // namespace

Result<CertificatePair> make_self_signed_certificate(const std::string& common_name,
                                                     const std::vector<std::string>& dns_names,
                                                     const std::vector<std::string>& ip_addresses,
                                                     std::chrono::hours validity) {
  std::string names;
  for (const auto& dns : dns_names) names += (names.empty() ? "DNS:" : ",DNS:") + dns;
  for (const auto& ip : ip_addresses) {
    boost::system::error_code error;
    boost::asio::ip::make_address(ip, error);
    if (error) return Error(ErrorCode::kInvalid, "\"" + ip + "\" is not an IP address");
    names += (names.empty() ? "IP:" : ",IP:") + ip;
  }
  ERR_clear_error();
  // EVP_EC_gen() is a macro whose cast trips -Wcast-qual; the context API says the same.
  const std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> keygen(
      EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr), &EVP_PKEY_CTX_free);
  EVP_PKEY* generated = nullptr;
  if (!keygen || EVP_PKEY_keygen_init(keygen.get()) <= 0 ||
      EVP_PKEY_CTX_set_group_name(keygen.get(), "P-256") <= 0 ||
      EVP_PKEY_generate(keygen.get(), &generated) <= 0) {
    return openssl_failure("cannot generate a key");
  }
  const EvpPkeyPtr key(generated);
  const X509Ptr certificate(X509_new());
  if (!certificate) return openssl_failure("cannot allocate");
  X509* cert = certificate.get();
  // A random positive 64-bit serial, so two runs never issue the same one.
  const BignumPtr serial(BN_new());
  if (!serial || BN_rand(serial.get(), 64, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert)) == nullptr) {
    return openssl_failure("cannot draw a serial number");
  }
  const long seconds = static_cast<long>(std::chrono::seconds(validity).count());
  if (X509_set_version(cert, 2) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert), -3600) == nullptr ||  // clock skew
      X509_gmtime_adj(X509_getm_notAfter(cert), seconds) == nullptr) {
    return openssl_failure("cannot set the validity");
  }
  X509_NAME* subject = X509_get_subject_name(cert);
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1 ||
      X509_set_issuer_name(cert, subject) != 1 || X509_set_pubkey(cert, key.get()) != 1) {
    return openssl_failure("cannot set the names");
  }
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, cert, cert, nullptr, nullptr, 0);
  auto add = [&](int nid, const std::string& value) {
    const X509ExtensionPtr extension(X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str()));
    return extension && X509_add_ext(cert, extension.get(), -1) == 1;
  };
  if (!add(NID_basic_constraints, "critical,CA:FALSE") ||
      !add(NID_key_usage, "critical,digitalSignature") || !add(NID_ext_key_usage, "serverAuth") ||
      (!names.empty() && !add(NID_subject_alt_name, names))) {
    return openssl_failure("cannot add the extensions");
  }
  if (X509_sign(cert, key.get(), EVP_sha256()) == 0) return openssl_failure("cannot sign");
  const BioPtr cert_bio(BIO_new(BIO_s_mem()));
  const BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (!cert_bio || !key_bio || PEM_write_bio_X509(cert_bio.get(), cert) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return openssl_failure("cannot encode");
  }
  return CertificatePair{.certificate_pem = drain(cert_bio.get()), .key_pem = drain(key_bio.get())};
}

}  // namespace nmo::http
