// TLS server verification: IP SANs for IP literals, DNS SANs for names, tls-server-name, the CA
// bundle or system trust store, and insecure_skip_verify.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

class ClientTlsVerificationTest : public ::testing::Test {
 protected:
  // A TLS server presenting the server certificate of a PKI made with `options`.
  test::TestPki start_server(const test::TestPkiOptions& options) {
    Result<test::TestPki> pki = test::make_test_pki(options);
    EXPECT_OK(pki);
    Result<std::unique_ptr<test::TestServer>> server = test::TestServer::start(
        {.handler = test::answer_with({.status = 200, .headers = {}, .body = "secure"}),
         .cert_pem = pki->server_cert_pem,
         .key_pem = pki->server_key_pem});
    EXPECT_OK(server);
    server_ = std::move(server).value();
    return std::move(pki).value();
  }

  Result<Response> get(const std::string& host, TlsOptions tls) {
    NMO_TRY_ASSIGN(
        std::unique_ptr<Client> client,
        Client::create(
            context_.get_executor(),
            {.host = host, .port = server_->port(), .tls = true, .tls_options = std::move(tls)}));
    return test::run(context_, client->send({.method = Method::kGet, .target = "/"}));
  }

  std::string handshake_error(const std::string& host, std::string_view reason) const {
    return "TLS handshake with " + host + ":" + server_->port() + ": certificate verify failed (" +
           std::string(reason) + ")";
  }

  asio::io_context context_;
  std::unique_ptr<test::TestServer> server_;
};

TEST_F(ClientTlsVerificationTest, IpSanOnlyCertificateVerifiesForItsAddress) {
  const test::TestPki pki = start_server({.server_dns_names = {}, .server_ips = {"127.0.0.1"}});
  ASSERT_OK_AND_ASSIGN(const Response response, get("127.0.0.1", {.ca_pem = pki.ca_cert_pem}));
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(response.body, "secure");
}

TEST_F(ClientTlsVerificationTest, CertificateForAnotherAddressIsRejected) {
  const test::TestPki pki = start_server({.server_dns_names = {}, .server_ips = {"127.0.0.2"}});
  const Result<Response> response = get("127.0.0.1", {.ca_pem = pki.ca_cert_pem});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable, handshake_error("127.0.0.1", "IP address mismatch")));
}

TEST_F(ClientTlsVerificationTest, DnsSanVerifiesForItsName) {
  const test::TestPki pki = start_server({.server_dns_names = {"localhost"}, .server_ips = {}});
  ASSERT_OK_AND_ASSIGN(const Response response, get("localhost", {.ca_pem = pki.ca_cert_pem}));
  EXPECT_EQ(response.body, "secure");
}

TEST_F(ClientTlsVerificationTest, CertificateForAnotherNameIsRejected) {
  const test::TestPki pki =
      start_server({.server_dns_names = {"kube.example"}, .server_ips = {"127.0.0.1"}});
  const Result<Response> response = get("localhost", {.ca_pem = pki.ca_cert_pem});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable, handshake_error("localhost", "hostname mismatch")));
}

TEST_F(ClientTlsVerificationTest, SubjectCommonNameIsNotTrusted) {
  const test::TestPki pki = start_server(
      {.server_dns_names = {}, .server_ips = {"127.0.0.2"}, .server_common_name = "localhost"});
  const Result<Response> response = get("localhost", {.ca_pem = pki.ca_cert_pem});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable, handshake_error("localhost", "hostname mismatch")));
}

TEST_F(ClientTlsVerificationTest, ServerNameOverridesTheVerifiedName) {
  const test::TestPki pki = start_server({.server_dns_names = {"kube.example"}, .server_ips = {}});
  ASSERT_OK_AND_ASSIGN(const Response response, get("127.0.0.1", {.ca_pem = pki.ca_cert_pem,
                                                                  .server_name = "kube.example"}));
  EXPECT_EQ(response.body, "secure");

  const Result<Response> wrong =
      get("127.0.0.1", {.ca_pem = pki.ca_cert_pem, .server_name = "other.example"});
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().message, handshake_error("127.0.0.1", "hostname mismatch"));
}

TEST_F(ClientTlsVerificationTest, CertificateFromAnUntrustedCaIsRejected) {
  start_server({});
  ASSERT_OK_AND_ASSIGN(const test::TestPki stranger, test::make_test_pki());
  const Result<Response> response = get("127.0.0.1", {.ca_pem = stranger.ca_cert_pem});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable,
                  handshake_error("127.0.0.1", "unable to get local issuer certificate")));
}

TEST_F(ClientTlsVerificationTest, CaBundleWithSeveralCertificatesIsUsedWhole) {
  const test::TestPki pki = start_server({});
  ASSERT_OK_AND_ASSIGN(const test::TestPki stranger, test::make_test_pki());
  ASSERT_OK_AND_ASSIGN(const Response response,
                       get("127.0.0.1", {.ca_pem = stranger.ca_cert_pem + pki.ca_cert_pem}));
  EXPECT_EQ(response.body, "secure");
}

TEST_F(ClientTlsVerificationTest, SystemTrustStoreDoesNotTrustTheTestCa) {
  start_server({});
  const Result<Response> response = get("127.0.0.1", {});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().message,
            handshake_error("127.0.0.1", "unable to get local issuer certificate"));
}

TEST_F(ClientTlsVerificationTest, InsecureSkipVerifyAcceptsAnyCertificate) {
  start_server({.server_dns_names = {"kube.example"}, .server_ips = {"127.0.0.2"}});
  ASSERT_OK_AND_ASSIGN(const Response response, get("127.0.0.1", {.insecure_skip_verify = true}));
  EXPECT_EQ(response.body, "secure");
}

}  // namespace
}  // namespace nmo::http
