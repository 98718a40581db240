#include "http/internal/tls_context.h"

#include <exception>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509_vfy.h>

#include "http/internal/openssl_handles.h"

namespace nmo::http::internal {
namespace {

// PEM password callback that refuses: an encrypted key fails to load instead of OpenSSL's
// default callback prompting on the terminal.
int refuse_password(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return 0; }

// Whether the last queued OpenSSL error is "no PEM block left": the normal end of a bundle.
bool at_end_of_pem_data() {
  const unsigned long code = ERR_peek_last_error();
  return ERR_GET_LIB(code) == ERR_LIB_PEM && ERR_GET_REASON(code) == PEM_R_NO_START_LINE;
}

// Every certificate of `pem`, in order; fails when there is none or one is damaged.
Result<std::vector<X509Ptr>> read_certificates(std::string_view field, std::string_view pem) {
  ERR_clear_error();
  BioPtr bio = make_memory_bio(pem);
  if (!bio) {
    return Error(ErrorCode::kInvalid, std::string(field) + ": too large");
  }
  std::vector<X509Ptr> certificates;
  for (;;) {
    X509Ptr certificate(PEM_read_bio_X509(bio.get(), nullptr, refuse_password, nullptr));
    if (!certificate) {
      if (!certificates.empty() && at_end_of_pem_data()) {
        ERR_clear_error();
        return certificates;
      }
      return Error(ErrorCode::kInvalid, std::string(field) + ": not a PEM certificate " +
                                            (certificates.empty() ? "" : "bundle ") + "(" +
                                            openssl_error_text() + ")");
    }
    certificates.push_back(std::move(certificate));
  }
}

Result<void> add_trusted_cas(SSL_CTX* context, std::string_view pem) {
  NMO_TRY_ASSIGN(const std::vector<X509Ptr> certificates, read_certificates("ca_pem", pem));
  X509_STORE* store = SSL_CTX_get_cert_store(context);
  for (const X509Ptr& certificate : certificates) {
    if (X509_STORE_add_cert(store, certificate.get()) != 1) {
      return Error(ErrorCode::kInvalid,
                   "ca_pem: cannot add certificate (" + openssl_error_text() + ")");
    }
  }
  return {};
}

Result<void> use_client_certificate(SSL_CTX* context, const TlsOptions& options) {
  NMO_TRY_ASSIGN(std::vector<X509Ptr> chain,
                 read_certificates("client_cert_pem", options.client_cert_pem));
  if (SSL_CTX_use_certificate(context, chain.front().get()) != 1) {
    return Error(ErrorCode::kInvalid,
                 "client_cert_pem: unusable certificate (" + openssl_error_text() + ")");
  }
  for (std::size_t i = 1; i < chain.size(); ++i) {
    // SSL_CTX_add1_chain_cert() spelled out: the macro's C-style cast breaks -Wold-style-cast.
    if (SSL_CTX_ctrl(context, SSL_CTRL_CHAIN_CERT, 1, chain[i].get()) != 1) {
      return Error(ErrorCode::kInvalid, "client_cert_pem: unusable intermediate certificate (" +
                                            openssl_error_text() + ")");
    }
  }

  ERR_clear_error();
  BioPtr bio = make_memory_bio(options.client_key_pem);
  if (!bio) {
    return Error(ErrorCode::kInvalid, "client_key_pem: too large");
  }
  const EvpPkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, refuse_password, nullptr));
  if (!key) {
    return Error(ErrorCode::kInvalid, "client_key_pem: not an unencrypted PEM private key (" +
                                          openssl_error_text() + ")");
  }
  if (SSL_CTX_use_PrivateKey(context, key.get()) != 1 || SSL_CTX_check_private_key(context) != 1) {
    ERR_clear_error();
    return Error(ErrorCode::kInvalid, "client_key_pem does not match client_cert_pem");
  }
  return {};
}

Result<void> configure(asio::ssl::context& tls, const TlsOptions& options) {
  SSL_CTX* context = tls.native_handle();
  if (SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) != 1) {
    return Error(ErrorCode::kInternal, "cannot require TLS 1.2: " + openssl_error_text());
  }
  SSL_CTX_set_options(context, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);

  if (options.client_cert_pem.empty() != options.client_key_pem.empty()) {
    return Error(ErrorCode::kInvalid, "client_cert_pem and client_key_pem must be set together");
  }
  if (!options.client_cert_pem.empty()) {
    NMO_TRY(use_client_certificate(context, options));
  }

  if (options.insecure_skip_verify) {
    SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nullptr);
    return {};
  }
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  if (options.ca_pem.empty()) {
    if (SSL_CTX_set_default_verify_paths(context) != 1) {
      return Error(ErrorCode::kInternal,
                   "cannot load the system trust store: " + openssl_error_text());
    }
    return {};
  }
  return add_trusted_cas(context, options.ca_pem);
}

}  // namespace

Result<std::shared_ptr<asio::ssl::context>> make_client_tls_context(const TlsOptions& options) {
  std::shared_ptr<asio::ssl::context> tls;
  try {
    tls = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  } catch (const std::exception& e) {
    return Error(ErrorCode::kInternal, std::string("cannot create a TLS context: ") + e.what());
  }
  NMO_TRY(configure(*tls, options));
  return tls;
}

Result<void> set_expected_peer(SSL* ssl, const std::string& name, bool verify) {
  boost::system::error_code not_an_address;
  (void)asio::ip::make_address(name, not_an_address);
  const bool is_address = !not_an_address;

  // SSL_set_tlsext_host_name() spelled out, for the same reason; OpenSSL copies the name.
  if (!is_address && SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                              const_cast<char*>(name.c_str())) != 1) {
    return Error(ErrorCode::kInvalid,
                 "cannot use \"" + name + "\" as TLS server name (" + openssl_error_text() + ")");
  }
  if (!verify) {
    return {};
  }
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  int set = 0;
  if (is_address) {
    set = X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    X509_VERIFY_PARAM_set_hostflags(
        param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    set = X509_VERIFY_PARAM_set1_host(param, name.data(), name.size());
  }
  if (set != 1) {
    return Error(ErrorCode::kInvalid,
                 "cannot verify the server as \"" + name + "\" (" + openssl_error_text() + ")");
  }
  return {};
}

std::string describe_tls_error(const boost::system::error_code& error, const SSL* ssl) {
  if (ssl != nullptr && error.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(error.value())) ==
          SSL_R_CERTIFICATE_VERIFY_FAILED) {
    return std::string("certificate verify failed (") +
           X509_verify_cert_error_string(SSL_get_verify_result(ssl)) + ")";
  }
  return error.message();
}

}  // namespace nmo::http::internal
