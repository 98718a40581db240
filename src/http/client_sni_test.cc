// SNI: the host name (or tls-server-name) is sent; IP literals are not (RFC 6066 section 3).
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

class ClientSniTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(pki_,
                         test::make_test_pki({.server_dns_names = {"localhost", "kube.example"},
                                              .server_ips = {"127.0.0.1"}}));
    ASSERT_OK_AND_ASSIGN(server_, test::TestServer::start({.handler = test::answer_with({}),
                                                           .cert_pem = pki_.server_cert_pem,
                                                           .key_pem = pki_.server_key_pem}));
  }

  // The SNI the server saw for one request from a client configured with `host` and `tls`.
  std::optional<std::string> sni_for(const std::string& host, TlsOptions tls) {
    tls.ca_pem = pki_.ca_cert_pem;
    Result<std::unique_ptr<Client>> client = Client::create(
        context_.get_executor(),
        {.host = host, .port = server_->port(), .tls = true, .tls_options = std::move(tls)});
    EXPECT_OK(client);
    EXPECT_OK(test::run(context_, (*client)->send({.method = Method::kGet, .target = "/"})));
    const std::vector<test::HandshakeInfo> handshakes = server_->handshakes();
    EXPECT_FALSE(handshakes.empty());
    return handshakes.empty() ? std::nullopt : handshakes.back().sni;
  }

  asio::io_context context_;
  test::TestPki pki_;
  std::unique_ptr<test::TestServer> server_;
};

TEST_F(ClientSniTest, HostNameIsSent) { EXPECT_EQ(sni_for("localhost", {}), "localhost"); }

TEST_F(ClientSniTest, ServerNameOverrideIsSent) {
  EXPECT_EQ(sni_for("127.0.0.1", {.server_name = "kube.example"}), "kube.example");
}

TEST_F(ClientSniTest, IpLiteralIsNotSent) { EXPECT_EQ(sni_for("127.0.0.1", {}), std::nullopt); }

TEST_F(ClientSniTest, SentEvenWhenVerificationIsSkipped) {
  EXPECT_EQ(sni_for("localhost", {.insecure_skip_verify = true}), "localhost");
}

}  // namespace
}  // namespace nmo::http
