// Mutual TLS: the client certificate from in-memory PEM is presented and its subject (Kubernetes
// user and group) reaches the server; a server requiring one refuses a client without it.
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

class ClientMtlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(pki_, test::make_test_pki({.client_common_name = "system:node:worker-1",
                                                    .client_organization = "system:nodes"}));
    ASSERT_OK_AND_ASSIGN(
        server_, test::TestServer::start({.handler = test::answer_with(
                                              {.status = 200, .headers = {}, .body = "welcome"}),
                                          .cert_pem = pki_.server_cert_pem,
                                          .key_pem = pki_.server_key_pem,
                                          .client_ca_pem = pki_.ca_cert_pem}));
  }

  Result<Response> get(std::string cert_pem, std::string key_pem) {
    NMO_TRY_ASSIGN(std::unique_ptr<Client> client,
                   Client::create(context_.get_executor(),
                                  {.host = "127.0.0.1",
                                   .port = server_->port(),
                                   .tls = true,
                                   .tls_options = {.ca_pem = pki_.ca_cert_pem,
                                                   .client_cert_pem = std::move(cert_pem),
                                                   .client_key_pem = std::move(key_pem)}}));
    return test::run(context_, client->send({.method = Method::kGet, .target = "/"}));
  }

  asio::io_context context_;
  test::TestPki pki_;
  std::unique_ptr<test::TestServer> server_;
};

TEST_F(ClientMtlsTest, ClientCertificateIsPresented) {
  ASSERT_OK_AND_ASSIGN(const Response response, get(pki_.client_cert_pem, pki_.client_key_pem));
  EXPECT_EQ(response.body, "welcome");
  const std::vector<test::HandshakeInfo> handshakes = server_->handshakes();
  ASSERT_EQ(handshakes.size(), 1U);
  EXPECT_EQ(handshakes[0].client_cn, "system:node:worker-1");
  EXPECT_EQ(handshakes[0].client_org, "system:nodes");
}

TEST_F(ClientMtlsTest, ServerRefusesAClientWithoutCertificate) {
  const Result<Response> response = get("", "");
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(),
            Error(ErrorCode::kUnavailable,
                  "GET / on 127.0.0.1:" + server_->port() +
                      ": read response: tlsv13 alert certificate required (SSL routines)"));
  EXPECT_TRUE(server_->requests().empty());
}

TEST_F(ClientMtlsTest, ServerRefusesACertificateFromAnotherCa) {
  ASSERT_OK_AND_ASSIGN(const test::TestPki stranger, test::make_test_pki());
  const Result<Response> response = get(stranger.client_cert_pem, stranger.client_key_pem);
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error(), Error(ErrorCode::kUnavailable,
                                    "GET / on 127.0.0.1:" + server_->port() +
                                        ": read response: tlsv1 alert unknown ca (SSL routines)"));
  EXPECT_TRUE(server_->requests().empty());
}

}  // namespace
}  // namespace nmo::http
