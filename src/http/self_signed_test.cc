// make_self_signed_certificate(), and a Server serving the pair from memory to a client that
// pins it.
#include "http/self_signed.h"

#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/server.h"
#include "http/testing/run.h"

namespace nmo::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(SelfSignedCertificateTest, IsPemAndNamesTheAddresses) {
  ASSERT_OK_AND_ASSIGN(const CertificatePair pair,
                       make_self_signed_certificate("metrics", {"localhost"}, {"127.0.0.1"}));
  EXPECT_THAT(pair.certificate_pem, StartsWith("-----BEGIN CERTIFICATE-----\n"));
  EXPECT_THAT(pair.key_pem, StartsWith("-----BEGIN PRIVATE KEY-----\n"));
}

TEST(SelfSignedCertificateTest, RefusesAnAddressThatIsNotAnIp) {
  const auto pair = make_self_signed_certificate("metrics", {}, {"not-an-ip"});
  ASSERT_FALSE(pair.has_value());
  EXPECT_EQ(pair.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(pair.error().message, "\"not-an-ip\" is not an IP address");
}

TEST(SelfSignedCertificateTest, AServerServesItFromMemoryToAClientThatPinsIt) {
  ASSERT_OK_AND_ASSIGN(const CertificatePair pair,
                       make_self_signed_certificate("metrics", {"localhost"}, {"127.0.0.1"}));
  test::IoThread io;
  ServerOptions options;
  options.certificate_pem = pair.certificate_pem;
  options.key_pem = pair.key_pem;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Server> server,
      Server::start(io.executor(), options, [](Request) -> asio::awaitable<Response> {
        co_return Response{.status = 200, .headers = {}, .body = "ok"};
      }));
  EXPECT_EQ(server->certificate_generation(), 1U);
  asio::io_context context;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Client> client,
      Client::create(context.get_executor(), {.host = "127.0.0.1",
                                              .port = std::to_string(server->port()),
                                              .tls = true,
                                              .tls_options = {.ca_pem = pair.certificate_pem}}));
  ASSERT_OK_AND_ASSIGN(const Response response,
                       test::run(context, client->send({.method = Method::kGet, .target = "/"})));
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(response.body, "ok");
  io.spawn(server->stop(std::chrono::milliseconds(100))).get();
}

TEST(SelfSignedCertificateTest, AnUnusableInMemoryPairIsRefusedAtStart) {
  ServerOptions options;
  options.certificate_pem = "not a certificate";
  options.key_pem = "not a key";
  test::IoThread io;
  auto server = Server::start(io.executor(), options,
                              [](Request) -> asio::awaitable<Response> { co_return Response{}; });
  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error().code, ErrorCode::kInvalid);
  EXPECT_THAT(server.error().message, HasSubstr("certificate_pem: not a PEM certificate chain"));
}

}  // namespace
}  // namespace nmo::http
