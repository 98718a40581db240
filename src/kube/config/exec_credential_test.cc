#include "kube/config/exec_credential.h"

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/config/testing/temp_dir.h"

namespace nmo::kube {
namespace {

using std::chrono::system_clock;
using testing::TempDir;

constexpr const char* kV1 = "client.authentication.k8s.io/v1";
constexpr const char* kWhere = R"(kubeconfig /k/config: users["eks"])";

void expect_invalid(std::string_view text, const std::string& message,
                    std::string_view api_version = kV1) {
  Result<ExecCredential> parsed = parse_exec_credential(text, api_version);
  ASSERT_FALSE(parsed.has_value()) << text;
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(parsed.error().message, message);
}

TEST(ParseExecCredentialTest, TokenWithExpiry) {
  ASSERT_OK_AND_ASSIGN(const ExecCredential credential, parse_exec_credential(R"({
    "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {"token": "t0k", "expirationTimestamp": "2026-12-01T10:00:00Z"}})",
                                                                              kV1));
  EXPECT_EQ(credential.token, "t0k");
  EXPECT_TRUE(credential.client_cert_pem.empty());
  ASSERT_TRUE(credential.expiry.has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(credential.expiry->time_since_epoch())
                .count(),
            1796119200);
}

TEST(ParseExecCredentialTest, FarFutureExpiryDoesNotOverflow) {
  ASSERT_OK_AND_ASSIGN(const ExecCredential credential, parse_exec_credential(R"({
    "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {"token": "t", "expirationTimestamp": "2999-01-01T00:00:00Z"}})",
                                                                              kV1));
  ASSERT_TRUE(credential.expiry.has_value());
  EXPECT_GT(*credential.expiry, std::chrono::time_point_cast<std::chrono::microseconds>(
                                    std::chrono::system_clock::now()));
}

TEST(ParseExecCredentialTest, ClientCertificateWithoutExpiryInV1Beta1) {
  ASSERT_OK_AND_ASSIGN(const ExecCredential credential, parse_exec_credential(R"({
    "apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
    "status": {"clientCertificateData": "CERT", "clientKeyData": "KEY"}})",
                                                                              kExecApiV1Beta1));
  EXPECT_EQ(credential.client_cert_pem, "CERT");
  EXPECT_EQ(credential.client_key_pem, "KEY");
  EXPECT_FALSE(credential.expiry.has_value());
}

TEST(ParseExecCredentialTest, RefusesWhatClientGoRefuses) {
  expect_invalid("token: x", "printed no valid ExecCredential: syntax error");
  expect_invalid("[1]", "printed no valid ExecCredential: not a JSON object");
  expect_invalid(
      R"({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential"})",
      R"(returned apiVersion "client.authentication.k8s.io/v1beta1", but the kubeconfig asks for "client.authentication.k8s.io/v1")");
  expect_invalid(
      R"({"kind": "ExecCredential", "status": {"token": "t"}})",
      R"(returned apiVersion "", but the kubeconfig asks for "client.authentication.k8s.io/v1")");
  expect_invalid(R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "Secret"})",
                 R"(returned kind "Secret", not ExecCredential)");
  expect_invalid(R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"})",
                 "returned no status");
  expect_invalid(
      R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {}})",
      "returned neither a token nor a client certificate and key");
  expect_invalid(
      R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"clientCertificateData": "C"}})",
      "returned a client certificate without its key");
  expect_invalid(
      R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": 7}})",
      "returned a token that is not a string");
  expect_invalid(
      R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "t", "expirationTimestamp": "soon"}})",
      R"(returned status.expirationTimestamp "soon": invalid RFC 3339 time "soon": expected a digit at offset 0)");
}

TEST(ExecInfoTest, InteractiveFlagAndClusterWhenAsked) {
  EXPECT_EQ(
      exec_info_json(kV1, false, std::nullopt),
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}})");
  EXPECT_EQ(
      exec_info_json(kV1, true,
                     ExecClusterInfo{.server = "https://a:6443",
                                     .ca_pem = "CA PEM",
                                     .insecure_skip_tls_verify = false,
                                     .tls_server_name = "k"}),
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":true,"cluster":{"server":"https://a:6443","tls-server-name":"k","certificate-authority-data":"Q0EgUEVN"}}})");
}

// A plugin written as a shell script in a temporary directory.
class ExecPluginTest : public ::testing::Test {
 protected:
  std::string script(const std::string& name, const std::string& body) {
    const std::string path = dir_.write(name, "#!/bin/sh\n" + body);
    ::chmod(path.c_str(), 0700);
    return path;
  }

  // A plugin printing a v1 token credential `token` (with `expiry` when not empty), counting its
  // runs in <dir>/runs and saving its KUBERNETES_EXEC_INFO and argument list.
  std::string token_plugin(const std::string& token, const std::string& expiry = "") {
    const std::string expiration =
        expiry.empty() ? "" : R"(, "expirationTimestamp": ")" + expiry + R"(")";
    return script(
        "plugin",
        "echo run >> " + dir_.file("runs") + "\nprintf '%s' \"$KUBERNETES_EXEC_INFO\" > " +
            dir_.file("info") + "\necho \"$@ $PROFILE\" > " + dir_.file("args") +
            "\ncat <<'JSON'\n"
            R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": ")" +
            token + "\"" + expiration + "}}\nJSON\n");
  }

  std::size_t runs() const {
    std::ifstream in(dir_.file("runs"));
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }

  std::string read(const std::string& name) const {
    std::ifstream in(dir_.file(name));
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  Result<std::shared_ptr<ExecCredentialSource>> source(KubeconfigExec exec) {
    if (exec.api_version.empty()) exec.api_version = kV1;
    if (exec.interactive_mode.empty()) exec.interactive_mode = "Never";
    return ExecCredentialSource::create(ExecPluginOptions{.exec = std::move(exec),
                                                          .where = kWhere,
                                                          .cluster = std::nullopt,
                                                          .now = [this] { return now_.load(); },
                                                          .stdin_is_terminal = false});
  }

  void expect_failure(KubeconfigExec exec, const std::string& message) {
    ASSERT_OK_AND_ASSIGN(auto plugin, source(std::move(exec)));
    Result<std::shared_ptr<const ExecCredential>> got = plugin->credential();
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error().code, ErrorCode::kUnauthorized);
    EXPECT_EQ(got.error().message, message);
  }

  TempDir dir_;
  std::atomic<system_clock::time_point> now_{system_clock::from_time_t(1796119200)};  // 10:00Z
};

TEST_F(ExecPluginTest, RunsWithArgsEnvAndExecInfoOnceWhileNotExpired) {
  ASSERT_OK_AND_ASSIGN(auto plugin, source({.command = token_plugin("t1", "2026-12-01T10:05:00Z"),
                                            .args = {"eks", "get-token"},
                                            .env = {{"PROFILE", "ops"}}}));
  ASSERT_OK_AND_ASSIGN(auto first, plugin->credential());
  EXPECT_EQ(first->token, "t1");
  EXPECT_EQ(read("args"), "eks get-token ops\n");
  EXPECT_EQ(
      read("info"),
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}})");
  now_ = now_.load() + std::chrono::minutes(4);
  ASSERT_OK_AND_ASSIGN(auto second, plugin->credential());
  EXPECT_EQ(second, first);
  EXPECT_EQ(runs(), 1U);
  // At the expirationTimestamp the plugin runs again.
  now_ = now_.load() + std::chrono::minutes(1);
  ASSERT_OK_AND_ASSIGN(auto third, plugin->credential());
  EXPECT_NE(third, first);
  EXPECT_EQ(runs(), 2U);
}

TEST_F(ExecPluginTest, InvalidateRunsItAgainButOnlyForTheRejectedCredential) {
  ASSERT_OK_AND_ASSIGN(auto plugin, source({.command = token_plugin("t1")}));
  ASSERT_OK_AND_ASSIGN(auto first, plugin->credential());
  ASSERT_OK_AND_ASSIGN(auto cached, plugin->credential());
  EXPECT_EQ(runs(), 1U);
  plugin->invalidate(first);
  ASSERT_OK_AND_ASSIGN(auto fresh, plugin->credential());
  EXPECT_EQ(runs(), 2U);
  plugin->invalidate(first);  // a late 401 for the old one does not throw the fresh one away
  ASSERT_OK_AND_ASSIGN(auto still, plugin->credential());
  EXPECT_EQ(still, fresh);
  EXPECT_EQ(runs(), 2U);
}

TEST_F(ExecPluginTest, MissingCommandNamesItWithTheInstallHint) {
  expect_failure(
      {.command = "nmo-no-such-plugin",
       .install_hint = "Install it:\n  apt-get install nmo-plugin\n"},
      R"(kubeconfig /k/config: users["eks"]: exec plugin "nmo-no-such-plugin" is not installed (not found on PATH): Install it: apt-get install nmo-plugin)");
  expect_failure({.command = dir_.file("missing")}, std::string(kWhere) + ": exec plugin \"" +
                                                        dir_.file("missing") +
                                                        "\" is not installed (no such file)");
}

TEST_F(ExecPluginTest, FailuresNameTheCommandAndSayWhy) {
  const std::string failing = script("failing",
                                     "echo 'error: the SSO session has expired' >&2\n"
                                     "echo 'run aws sso login' >&2\nexit 255\n");
  expect_failure({.command = failing},
                 std::string(kWhere) + ": exec plugin \"" + failing +
                     "\" exited with status 255: error: the SSO session has expired run aws sso "
                     "login");
  const std::string garbage = script("garbage", "echo not json\n");
  expect_failure({.command = garbage}, std::string(kWhere) + ": exec plugin \"" + garbage +
                                           "\" printed no valid ExecCredential: syntax error");
  const std::string old = script(
      "old",
      R"(echo '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {"token": "t"}}')"
      "\n");
  expect_failure(
      {.command = old},
      std::string(kWhere) + ": exec plugin \"" + old +
          R"(" returned apiVersion "client.authentication.k8s.io/v1beta1", but the kubeconfig asks for "client.authentication.k8s.io/v1")");
  const std::string killed = script("killed", "kill -9 $$\n");
  expect_failure({.command = killed},
                 std::string(kWhere) + ": exec plugin \"" + killed + "\" was killed by signal 9");
}

TEST_F(ExecPluginTest, ConfigurationIsCheckedUpFront) {
  auto refused = [](KubeconfigExec exec) {
    Result<std::shared_ptr<ExecCredentialSource>> made =
        ExecCredentialSource::create(ExecPluginOptions{.exec = std::move(exec),
                                                       .where = kWhere,
                                                       .cluster = std::nullopt,
                                                       .now = {},
                                                       .stdin_is_terminal = false});
    return made.has_value() ? std::string("<created>") : made.error().message;
  };
  EXPECT_EQ(
      refused({.command = "aws", .api_version = "client.authentication.k8s.io/v1alpha1"}),
      std::string(kWhere) +
          R"(.exec.apiVersion: "client.authentication.k8s.io/v1alpha1" is not supported (use client.authentication.k8s.io/v1 or v1beta1))");
  EXPECT_EQ(refused({.command = "aws", .api_version = kV1}),
            std::string(kWhere) +
                ".exec.interactiveMode: is not set (required by client.authentication.k8s.io/v1: "
                "Never, IfAvailable or Always)");
  EXPECT_EQ(refused({.command = "aws", .api_version = kV1, .interactive_mode = "Sometimes"}),
            std::string(kWhere) +
                R"(.exec.interactiveMode: "Sometimes" is not one of Never, IfAvailable, Always)");
  EXPECT_EQ(
      refused({.command = "aws", .api_version = kV1, .interactive_mode = "Always"}),
      std::string(kWhere) +
          R"(: exec plugin "aws" needs a terminal (interactiveMode Always) but standard input is not one)");
  EXPECT_EQ(refused({.api_version = kV1}), std::string(kWhere) + ".exec.command: is not set");
  // v1beta1 defaults interactiveMode to IfAvailable.
  EXPECT_EQ(refused({.command = "aws", .api_version = std::string(kExecApiV1Beta1)}), "<created>");
}

}  // namespace
}  // namespace nmo::kube
