// Server certificate rotation: replacing tls.crt/tls.key while requests flow makes new handshakes
// present the new certificate (told apart by its CA: a client trusting only the new CA gets in,
// one trusting only the old CA does not), no request fails meanwhile, a request in flight on an
// old connection finishes, and a broken pair is logged and ignored.
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/log.h"
#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/server.h"
#include "http/testing/cert_dir.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"

namespace nmo::http {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

// Polls `condition` every 10 ms for up to 10 s.
bool eventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

class ServerCertificateRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::set_writer([this](std::string_view line) {
      const std::lock_guard lock(log_mutex_);
      log_ += std::string(line) + "\n";
    });
    ASSERT_OK_AND_ASSIGN(old_pki_, test::make_test_pki({.server_common_name = "old"}));
    ASSERT_OK_AND_ASSIGN(new_pki_, test::make_test_pki({.server_common_name = "new"}));
    certs_.write_pair(old_pki_.server_cert_pem, old_pki_.server_key_pem);
    ASSERT_OK_AND_ASSIGN(
        server_,
        Server::start(io_.executor(),
                      {.name = "rotation-test",
                       .bind_address = "127.0.0.1",
                       .cert_dir = certs_.path(),
                       .cert_reload_interval = milliseconds(20)},
                      [this](Request request) -> asio::awaitable<Response> {
                        if (request.target == "/slow") {
                          slow_entered_ = true;
                          asio::steady_timer timer(co_await asio::this_coro::executor,
                                                   milliseconds(500));
                          (void)co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
                        }
                        co_return Response{.status = 200, .headers = {}, .body = "ok"};
                      }));
  }
  void TearDown() override {
    if (server_) io_.spawn(server_->stop(std::chrono::seconds(5))).get();
    log::set_writer({});
  }

  std::unique_ptr<Client> client_trusting(const std::string& ca_pem, std::size_t max_idle = 16) {
    Result<std::unique_ptr<Client>> client =
        Client::create(client_thread_.executor(), {.host = "127.0.0.1",
                                                   .port = std::to_string(server_->port()),
                                                   .tls_options = {.ca_pem = ca_pem},
                                                   .max_idle_connections = max_idle});
    EXPECT_OK(client);
    return std::move(client).value();
  }

  Result<Response> get(Client& client, const std::string& target = "/") {
    return client_thread_.spawn(client.send({.method = Method::kGet, .target = target})).get();
  }

  std::string log() const {
    const std::lock_guard lock(log_mutex_);
    return log_;
  }

  test::TestPki old_pki_;
  test::TestPki new_pki_;
  test::CertDir certs_;
  test::IoThread io_;
  test::IoThread client_thread_;
  std::unique_ptr<Server> server_;
  std::atomic<bool> slow_entered_ = false;
  mutable std::mutex log_mutex_;
  std::string log_;
};

TEST_F(ServerCertificateRotationTest, NewHandshakesUseTheNewCertificateAndNoRequestFails) {
  const std::string both_cas = old_pki_.ca_cert_pem + new_pki_.ca_cert_pem;
  // Traffic during the rotation: one client with a fresh connection (a handshake) per request,
  // one reusing its kept-alive connection.
  std::unique_ptr<Client> fresh = client_trusting(both_cas, 0);
  std::unique_ptr<Client> pooled = client_trusting(both_cas);
  std::atomic<bool> done = false;
  std::atomic<int> succeeded = 0;
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  auto traffic = [&](Client& client) {
    return std::async(std::launch::async, [&] {
      while (!done) {
        const Result<Response> response = get(client);
        if (response && response->status == 200) {
          ++succeeded;
        } else {
          const std::lock_guard lock(failures_mutex);
          failures.push_back(response ? std::to_string(response->status)
                                      : response.error().describe());
        }
      }
    });
  };
  std::future<void> fresh_traffic = traffic(*fresh);
  std::future<void> pooled_traffic = traffic(*pooled);
  ASSERT_TRUE(eventually([&] { return succeeded >= 20; }));

  // A slow request on a connection made with the old certificate, in flight across the swap.
  std::unique_ptr<Client> old_only = client_trusting(old_pki_.ca_cert_pem);
  std::future<Result<Response>> slow =
      client_thread_.spawn(old_only->send({.method = Method::kGet, .target = "/slow"}));
  ASSERT_TRUE(eventually([&] { return slow_entered_.load(); }));

  certs_.write_pair(new_pki_.server_cert_pem, new_pki_.server_key_pem);
  ASSERT_TRUE(eventually([&] { return server_->certificate_generation() == 2; }))
      << "the server never reloaded the certificate; log:\n"
      << log();
  const int before = succeeded;
  ASSERT_TRUE(eventually([&] { return succeeded >= before + 20; }));
  done = true;
  fresh_traffic.get();
  pooled_traffic.get();
  EXPECT_THAT(failures, ::testing::IsEmpty());

  ASSERT_OK_AND_ASSIGN(const Response slow_response, slow.get());
  EXPECT_EQ(slow_response.body, "ok");

  // A new handshake presents the new certificate: only the new CA verifies it.
  std::unique_ptr<Client> new_only = client_trusting(new_pki_.ca_cert_pem);
  ASSERT_OK_AND_ASSIGN(const Response response, get(*new_only));
  EXPECT_EQ(response.body, "ok");
  std::unique_ptr<Client> old_only_fresh = client_trusting(old_pki_.ca_cert_pem);
  const Result<Response> refused = get(*old_only_fresh);
  ASSERT_FALSE(refused.has_value());
  EXPECT_THAT(refused.error().message, HasSubstr("certificate verify failed"));
  EXPECT_THAT(log(), HasSubstr("serving certificate reloaded"));
  for (Client* client :
       {fresh.get(), pooled.get(), old_only.get(), new_only.get(), old_only_fresh.get()}) {
    client->shutdown();
  }
}

TEST_F(ServerCertificateRotationTest, BrokenPairIsLoggedAndTheOldOneKept) {
  certs_.write("tls.crt", "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n");
  ASSERT_TRUE(eventually([&] {
    return log().find("serving certificate changed but cannot be loaded") != std::string::npos;
  })) << log();
  EXPECT_THAT(log(), HasSubstr("/tls.crt: not a PEM certificate chain"));
  EXPECT_EQ(server_->certificate_generation(), 1U);
  std::unique_ptr<Client> old_only = client_trusting(old_pki_.ca_cert_pem, 0);
  ASSERT_OK_AND_ASSIGN(const Response still_old, get(*old_only));
  EXPECT_EQ(still_old.status, 200U);

  // A key that does not match: also refused.
  certs_.write_pair(new_pki_.server_cert_pem, old_pki_.server_key_pem);
  ASSERT_TRUE(eventually([&] {
    return log().find("/tls.key: does not match the certificate in") != std::string::npos;
  })) << log();
  EXPECT_EQ(server_->certificate_generation(), 1U);

  // The key arrives: the pair is complete and taken.
  certs_.write("tls.key", new_pki_.server_key_pem);
  ASSERT_TRUE(eventually([&] { return server_->certificate_generation() == 2; })) << log();
  std::unique_ptr<Client> new_only = client_trusting(new_pki_.ca_cert_pem, 0);
  ASSERT_OK_AND_ASSIGN(const Response now_new, get(*new_only));
  EXPECT_EQ(now_new.status, 200U);
  old_only->shutdown();
  new_only->shutdown();
}

}  // namespace
}  // namespace nmo::http
