#include "http/internal/server_certificates.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "http/internal/openssl_handles.h"

namespace nmo::http::internal {
namespace {

// A certificate chain or key file is a few KB; anything this large is not one.
constexpr std::streamoff kMaxPemFileBytes = std::streamoff{1} << 20;

// TLS 1.2 suites with forward secrecy and AEAD only, the set Go's crypto/tls offers by default
// (TLS 1.3 suites are all acceptable and configured separately by OpenSSL).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// PEM password callback that refuses: an encrypted key fails to load instead of OpenSSL's
// default callback prompting on the terminal.
int refuse_password(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return 0; }

std::int64_t nanoseconds(const timespec& time) {
  return static_cast<std::int64_t>(time.tv_sec) * 1'000'000'000 + time.tv_nsec;
}

std::string reason_of(const boost::system::error_code& error) {
  std::string text = openssl_error_text("");
  return text.empty() ? error.message() : text;
}

}  // namespace

Result<std::string> read_pem_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return Error(ErrorCode::kInvalid, path + ": cannot read: " + std::strerror(errno));
  }
  file.seekg(0, std::ios::end);
  const std::streamoff size = file.tellg();
  if (size > kMaxPemFileBytes) {
    return Error(ErrorCode::kInvalid,
                 path + ": too large for a PEM file (" + std::to_string(size) + " bytes)");
  }
  file.seekg(0, std::ios::beg);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (text.empty()) {
    return Error(ErrorCode::kInvalid, path + ": empty");
  }
  return text;
}

Result<std::shared_ptr<asio::ssl::context>> make_server_tls_context(
    std::string_view cert_pem, std::string_view key_pem, std::string_view cert_name,
    std::string_view key_name, std::string_view client_ca_pem, std::string_view client_ca_name) {
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* native = context->native_handle();
  ERR_clear_error();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
    return Error(ErrorCode::kInternal, "cannot configure TLS: " + openssl_error_text());
  }
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_default_passwd_cb(native, refuse_password);

  boost::system::error_code error;
  context->use_certificate_chain(asio::buffer(cert_pem.data(), cert_pem.size()), error);
  if (error) {
    return Error(ErrorCode::kInvalid, std::string(cert_name) + ": not a PEM certificate chain (" +
                                          reason_of(error) + ")");
  }
  ERR_clear_error();
  BioPtr bio = make_memory_bio(key_pem);
  const EvpPkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, refuse_password, nullptr)
                           : nullptr);
  if (!key) {
    return Error(ErrorCode::kInvalid, std::string(key_name) +
                                          ": not an unencrypted PEM private key (" +
                                          openssl_error_text() + ")");
  }
  X509* leaf = SSL_CTX_get0_certificate(native);
  if (leaf == nullptr || X509_check_private_key(leaf, key.get()) != 1) {
    ERR_clear_error();
    return Error(
        ErrorCode::kInvalid,
        std::string(key_name) + ": does not match the certificate in " + std::string(cert_name));
  }
  if (SSL_CTX_use_PrivateKey(native, key.get()) != 1) {
    return Error(ErrorCode::kInvalid,
                 std::string(key_name) + ": unusable private key (" + openssl_error_text() + ")");
  }
  if (!client_ca_pem.empty()) {
    ERR_clear_error();
    context->add_certificate_authority(asio::buffer(client_ca_pem.data(), client_ca_pem.size()),
                                       error);
    if (error) {
      return Error(
          ErrorCode::kInvalid,
          std::string(client_ca_name) + ": not a PEM CA certificate (" + reason_of(error) + ")");
    }
    // Without a certificate that chains to the CA the handshake fails: nothing unauthenticated
    // reaches HTTP. No CA names are sent in the request, so a Go client offers its one
    // certificate whatever it was issued by, and a wrong one fails here, visibly.
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    // Session resumption with client verification needs a context id (OpenSSL refuses to resume
    // otherwise).
    static constexpr unsigned char kSessionContext[] = "nmo-http-server";
    SSL_CTX_set_session_id_context(native, kSessionContext, sizeof(kSessionContext) - 1);
  }
  return context;
}

FileStamp stamp_of(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return {};
  }
  return {.exists = true,
          .device = info.st_dev,
          .inode = info.st_ino,
          .size = info.st_size,
          .modified_ns = nanoseconds(info.st_mtim),
          .changed_ns = nanoseconds(info.st_ctim)};
}

Result<std::unique_ptr<ServerCertificates>> ServerCertificates::load(std::string cert_path,
                                                                     std::string key_path,
                                                                     ClientCa client_ca) {
  std::unique_ptr<ServerCertificates> certificates(
      new ServerCertificates(std::move(cert_path), std::move(key_path), std::move(client_ca)));
  certificates->cert_stamp_ = stamp_of(certificates->cert_path_);
  certificates->key_stamp_ = stamp_of(certificates->key_path_);
  NMO_TRY_ASSIGN(certificates->current_, certificates->read_pair());
  certificates->generation_ = 1;
  return certificates;
}

Result<std::unique_ptr<ServerCertificates>> ServerCertificates::from_memory(
    std::string_view cert_pem, std::string_view key_pem, ClientCa client_ca) {
  std::unique_ptr<ServerCertificates> certificates(
      new ServerCertificates("", "", std::move(client_ca)));
  const ClientCa& ca = certificates->client_ca_;
  NMO_TRY_ASSIGN(
      certificates->current_,
      make_server_tls_context(cert_pem, key_pem, "certificate_pem", "key_pem", ca.pem, ca.name));
  certificates->generation_ = 1;
  return certificates;
}

std::shared_ptr<asio::ssl::context> ServerCertificates::current() const {
  const std::lock_guard lock(mutex_);
  return current_;
}

ServerCertificates::PollResult ServerCertificates::poll() {
  // Stamps first, contents second: a file replaced in between is read new under an old stamp,
  // which only means one more (harmless) reload at the next poll.
  FileStamp cert_stamp = stamp_of(cert_path_);
  FileStamp key_stamp = stamp_of(key_path_);
  if (cert_stamp == cert_stamp_ && key_stamp == key_stamp_) {
    return PollResult::kUnchanged;
  }
  cert_stamp_ = cert_stamp;
  key_stamp_ = key_stamp;
  Result<std::shared_ptr<asio::ssl::context>> context = read_pair();
  if (!context) {
    last_error_ = context.error().message;
    return PollResult::kFailed;
  }
  {
    const std::lock_guard lock(mutex_);
    current_ = std::move(context).value();
  }
  ++generation_;
  return PollResult::kReloaded;
}

Result<std::shared_ptr<asio::ssl::context>> ServerCertificates::read_pair() const {
  NMO_TRY_ASSIGN(const std::string cert_pem, read_pem_file(cert_path_));
  NMO_TRY_ASSIGN(const std::string key_pem, read_pem_file(key_path_));
  return make_server_tls_context(cert_pem, key_pem, cert_path_, key_path_, client_ca_.pem,
                                 client_ca_.name);
}

}  // namespace nmo::http::internal
