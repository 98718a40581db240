// Client::create(): unusable options fail with kInvalid naming the field; usable ones succeed
// without connecting.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/internal/openssl_handles.h"
#include "http/testing/test_pki.h"

namespace nmo::http {
namespace {

using ::testing::StartsWith;

class ClientCreateTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(pki_, test::make_test_pki()); }

  Result<std::unique_ptr<Client>> create(ClientOptions options) {
    return Client::create(context_.get_executor(), std::move(options));
  }
  Result<std::unique_ptr<Client>> create_tls(TlsOptions tls) {
    return create(
        {.host = "127.0.0.1", .port = "6443", .tls = true, .tls_options = std::move(tls)});
  }

  // `key_pem` encrypted with a passphrase (as `openssl pkcs8 -topk8 -v2 aes-256-cbc` would).
  static std::string encrypt(const std::string& key_pem) {
    internal::BioPtr in = internal::make_memory_bio(key_pem);
    const internal::EvpPkeyPtr key(PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr));
    const internal::BioPtr out(BIO_new(BIO_s_mem()));
    char passphrase[] = "secret";
    PEM_write_bio_PKCS8PrivateKey(out.get(), key.get(), EVP_aes_256_cbc(), passphrase, 6, nullptr,
                                  nullptr);
    return internal::memory_bio_text(out.get());
  }

  asio::io_context context_;
  test::TestPki pki_;
};

TEST_F(ClientCreateTest, UsableOptionsCreateAClient) {
  EXPECT_OK(create_tls({.ca_pem = pki_.ca_cert_pem,
                        .client_cert_pem = pki_.client_cert_pem,
                        .client_key_pem = pki_.client_key_pem}));
  EXPECT_OK(create_tls({}));
  EXPECT_OK(create({.host = "::1", .port = "8080", .tls = false}));
}

TEST_F(ClientCreateTest, HostIsRequiredWithoutBrackets) {
  EXPECT_EQ(create({.host = "", .port = "443"}).error(),
            Error(ErrorCode::kInvalid, "host is empty"));
  EXPECT_EQ(create({.host = "[::1]", .port = "443"}).error(),
            Error(ErrorCode::kInvalid, "host \"[::1]\": give IPv6 addresses without brackets"));
}

TEST_F(ClientCreateTest, PortMustBeANumberFrom1To65535) {
  for (const std::string port : {"", "https", "0", "65536", "443x", "-1", " 443"}) {
    const Result<std::unique_ptr<Client>> client = create({.host = "127.0.0.1", .port = port});
    ASSERT_FALSE(client.has_value()) << port;
    EXPECT_EQ(client.error(),
              Error(ErrorCode::kInvalid, "port \"" + port + "\" is not a port number"));
  }
}

TEST_F(ClientCreateTest, CaPemThatIsNotPem) {
  EXPECT_EQ(create_tls({.ca_pem = "not a certificate"}).error(),
            Error(ErrorCode::kInvalid, "ca_pem: not a PEM certificate (no start line)"));
}

TEST_F(ClientCreateTest, CaPemWithDamagedContent) {
  std::string damaged = pki_.ca_cert_pem;
  damaged.replace(damaged.find('\n') + 10, 20, "!!!!!!!!!!!!!!!!!!!!");
  const Result<std::unique_ptr<Client>> client = create_tls({.ca_pem = damaged});
  ASSERT_FALSE(client.has_value());
  EXPECT_EQ(client.error().code, ErrorCode::kInvalid);
  EXPECT_THAT(client.error().message, StartsWith("ca_pem: not a PEM certificate ("));
}

TEST_F(ClientCreateTest, CaBundleWithTrailingGarbageAfterCertificates) {
  const Result<std::unique_ptr<Client>> client =
      create_tls({.ca_pem = pki_.ca_cert_pem + "-----BEGIN CERTIFICATE-----\nAAAA\n"});
  ASSERT_FALSE(client.has_value());
  EXPECT_THAT(client.error().message, StartsWith("ca_pem: not a PEM certificate bundle ("));
}

TEST_F(ClientCreateTest, ClientCertificateAndKeyGoTogether) {
  const Error expected(ErrorCode::kInvalid,
                       "client_cert_pem and client_key_pem must be set together");
  EXPECT_EQ(create_tls({.client_cert_pem = pki_.client_cert_pem}).error(), expected);
  EXPECT_EQ(create_tls({.client_key_pem = pki_.client_key_pem}).error(), expected);
}

TEST_F(ClientCreateTest, ClientCertificateThatIsNotPem) {
  EXPECT_EQ(
      create_tls({.client_cert_pem = "garbage", .client_key_pem = pki_.client_key_pem}).error(),
      Error(ErrorCode::kInvalid, "client_cert_pem: not a PEM certificate (no start line)"));
}

TEST_F(ClientCreateTest, ClientKeyThatIsNotPem) {
  const Result<std::unique_ptr<Client>> client =
      create_tls({.client_cert_pem = pki_.client_cert_pem, .client_key_pem = "garbage"});
  ASSERT_FALSE(client.has_value());
  EXPECT_EQ(client.error().code, ErrorCode::kInvalid);
  EXPECT_THAT(client.error().message,
              StartsWith("client_key_pem: not an unencrypted PEM private key ("));
}

TEST_F(ClientCreateTest, EncryptedClientKeyIsRefusedWithoutPrompting) {
  const std::string encrypted = encrypt(pki_.client_key_pem);
  ASSERT_TRUE(encrypted.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----"));
  const Result<std::unique_ptr<Client>> client =
      create_tls({.client_cert_pem = pki_.client_cert_pem, .client_key_pem = encrypted});
  ASSERT_FALSE(client.has_value());
  EXPECT_THAT(client.error().message,
              StartsWith("client_key_pem: not an unencrypted PEM private key ("));
}

TEST_F(ClientCreateTest, ClientKeyMustMatchTheCertificate) {
  EXPECT_EQ(
      create_tls({.client_cert_pem = pki_.client_cert_pem, .client_key_pem = pki_.server_key_pem})
          .error(),
      Error(ErrorCode::kInvalid, "client_key_pem does not match client_cert_pem"));
}

TEST_F(ClientCreateTest, PlainHttpIgnoresTlsOptions) {
  EXPECT_OK(create({.host = "127.0.0.1",
                    .port = "8080",
                    .tls = false,
                    .tls_options = {.ca_pem = "not used without TLS"}}));
}

}  // namespace
}  // namespace nmo::http
