#include "kube/config/kubeconfig_loader.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/config/testing/scoped_env.h"
#include "kube/config/testing/temp_dir.h"

namespace nmo::kube {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

constexpr const char* kOrigin = "/tmp/x/config";

Result<RestConfig> resolve(const std::string& yaml, std::string_view context = "") {
  Result<Kubeconfig> config = parse_kubeconfig(yaml, kOrigin);
  if (!config.has_value()) {
    return std::move(config).error();
  }
  return resolve_kubeconfig(*config, context);
}

void expect_error(const Result<RestConfig>& rest, ErrorCode code, const std::string& message) {
  ASSERT_FALSE(rest.has_value());
  EXPECT_EQ(rest.error().code, code);
  EXPECT_EQ(rest.error().message, message);
}

std::string token_of(const RestConfig& rest) {
  if (rest.token == nullptr) {
    return "<none>";
  }
  Result<std::string> token = rest.token->token();
  return token.has_value() ? *token : "<error: " + token.error().message + ">";
}

constexpr const char* kTwoContexts = R"(
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/prefix
    certificate-authority-data: Q0EgUEVN
    tls-server-name: kubernetes
- name: plain
  cluster: {server: "http://localhost:8080", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {client-certificate-data: Q0VSVCBQRU0=, client-key-data: S0VZIFBFTQ==, token: t0k}
contexts:
- name: local
  context: {cluster: local, user: admin, namespace: ops}
- name: staging
  context: {cluster: plain}
current-context: local
)";

TEST(ResolveKubeconfigTest, CurrentContext) {
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, resolve(kTwoContexts));
  EXPECT_EQ(rest.server, "https://127.0.0.1:6443/prefix");
  EXPECT_EQ(rest.scheme, "https");
  EXPECT_EQ(rest.host, "127.0.0.1");
  EXPECT_EQ(rest.port, "6443");
  EXPECT_EQ(rest.path_prefix, "/prefix");
  EXPECT_EQ(rest.ca_pem, "CA PEM");
  EXPECT_EQ(rest.client_cert_pem, "CERT PEM");
  EXPECT_EQ(rest.client_key_pem, "KEY PEM");
  EXPECT_FALSE(rest.insecure_skip_tls_verify);
  EXPECT_EQ(rest.tls_server_name, "kubernetes");
  EXPECT_EQ(token_of(rest), "t0k");
  EXPECT_EQ(rest.default_namespace, "ops");
  EXPECT_EQ(rest.origin, R"(kubeconfig /tmp/x/config (context "local"))");
}

TEST(ResolveKubeconfigTest, ExplicitContextWithoutUser) {
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, resolve(kTwoContexts, "staging"));
  EXPECT_EQ(rest.scheme, "http");
  EXPECT_EQ(rest.host, "localhost");
  EXPECT_EQ(rest.port, "8080");
  EXPECT_TRUE(rest.insecure_skip_tls_verify);
  EXPECT_EQ(rest.ca_pem, "");
  EXPECT_EQ(rest.token, nullptr);
  EXPECT_EQ(rest.client_cert_pem, "");
  EXPECT_EQ(rest.default_namespace, "default");
  EXPECT_EQ(rest.origin, R"(kubeconfig /tmp/x/config (context "staging"))");
}

TEST(ResolveKubeconfigTest, ContextErrors) {
  expect_error(
      resolve(kTwoContexts, "prod"), ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: context "prod" not found (available: "local", "staging"))");
  expect_error(resolve("clusters: []\n"), ErrorCode::kInvalid,
               "kubeconfig /tmp/x/config: current-context is not set and no --context was given");
  expect_error(resolve("current-context: a\n"), ErrorCode::kInvalid,
               R"(kubeconfig /tmp/x/config: context "a" not found (no contexts are defined))");
  expect_error(resolve("contexts: [{name: a, context: {user: u}}]\ncurrent-context: a\n"),
               ErrorCode::kInvalid,
               R"(kubeconfig /tmp/x/config: contexts["a"].cluster: is not set)");
  expect_error(resolve("contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n"),
               ErrorCode::kInvalid,
               R"(kubeconfig /tmp/x/config: contexts["a"].cluster: cluster "c" not found)");
  expect_error(resolve(R"(
clusters: [{name: c, cluster: {server: "https://a"}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
current-context: a
)"),
               ErrorCode::kInvalid,
               R"(kubeconfig /tmp/x/config: contexts["a"].user: user "u" not found)");
}

TEST(ResolveKubeconfigTest, ServerErrorsNameTheCluster) {
  expect_error(
      resolve(R"(
clusters: [{name: x, cluster: {server: "127.0.0.1:6443"}}]
contexts: [{name: a, context: {cluster: x}}]
current-context: a
)"),
      ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: clusters["x"].server: "127.0.0.1:6443" has no scheme (expected https://host[:port]))");
  expect_error(resolve(R"(
clusters: [{name: x, cluster: {certificate-authority-data: Q0EgUEVN}}]
contexts: [{name: a, context: {cluster: x}}]
current-context: a
)"),
               ErrorCode::kInvalid,
               R"(kubeconfig /tmp/x/config: clusters["x"].server: is not set)");
}

TEST(ResolveKubeconfigTest, RefusesUnsupportedClusterSettings) {
  expect_error(resolve(R"(
clusters: [{name: x, cluster: {server: "https://a", proxy-url: "http://proxy:3128"}}]
contexts: [{name: a, context: {cluster: x}}]
current-context: a
)"),
               ErrorCode::kInvalid,
               R"(kubeconfig /tmp/x/config: clusters["x"].proxy-url: not supported)");
  expect_error(
      resolve(R"(
clusters:
- name: x
  cluster: {server: "https://a", insecure-skip-tls-verify: true, certificate-authority-data: Q0EgUEVN}
contexts: [{name: a, context: {cluster: x}}]
current-context: a
)"),
      ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: clusters["x"]: insecure-skip-tls-verify cannot be combined with certificate-authority)");
}

TEST(ResolveKubeconfigTest, RefusesUnsupportedUserSettingsNamingTheField) {
  const std::string clusters = R"(
clusters: [{name: c, cluster: {server: "https://a"}}]
contexts: [{name: a, context: {cluster: c, user: x}}]
current-context: a
)";
  expect_error(
      resolve(clusters + "users: [{name: x, user: {exec: {command: aws}}}]\n"), ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: users["x"].exec.apiVersion: is not set (use client.authentication.k8s.io/v1))");
  expect_error(
      resolve(clusters + "users: [{name: x, user: {auth-provider: {name: gcp}}}]\n"),
      ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: users["x"]: auth-provider "gcp" is not supported: use an exec credential plugin instead (users[].user.exec, e.g. gke-gcloud-auth-plugin, kubelogin, kubectl oidc-login))");
  expect_error(
      resolve(clusters + "users: [{name: x, user: {username: a, password: b}}]\n"),
      ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: users["x"]: username/password (basic authentication) is not supported)");
  expect_error(
      resolve(clusters + "users: [{name: x, user: {token: t, as-groups: [g]}}]\n"),
      ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: users["x"]: impersonation (as-groups) is not supported)");
  expect_error(
      resolve(clusters + "users: [{name: x, user: {client-certificate-data: Q0VSVCBQRU0=}}]\n"),
      ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: users["x"]: has a client certificate but no client-key or client-key-data)");
  expect_error(
      resolve(clusters + "users: [{name: x, user: {client-key-data: S0VZIFBFTQ==}}]\n"),
      ErrorCode::kInvalid,
      R"(kubeconfig /tmp/x/config: users["x"]: has a client key but no client-certificate or client-certificate-data)");
}

TEST(ResolveKubeconfigTest, UnsupportedUserOfAnotherContextDoesNotMatter) {
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, resolve(R"(
clusters: [{name: c, cluster: {server: "https://a"}}]
users:
- {name: gke, user: {exec: {command: gke-gcloud-auth-plugin}}}
- {name: robot, user: {token: t}}
contexts:
- {name: cloud, context: {cluster: c, user: gke}}
- {name: mine, context: {cluster: c, user: robot}}
current-context: mine
)"));
  EXPECT_EQ(token_of(rest), "t");
}

constexpr const char* kRelativePaths = R"(
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: pki/ca.crt}
users:
- name: admin
  user: {client-certificate: pki/admin.crt, client-key: ./pki/admin.key, tokenFile: token, token: ignored}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
)";

TEST(LoadKubeconfigTest, ResolvesRelativePathsAgainstTheFilesDirectory) {
  const TempDir dir;
  const std::string path = dir.write("conf/config", kRelativePaths);
  dir.write("conf/pki/ca.crt", "CA FILE");
  dir.write("conf/pki/admin.crt", "CERT FILE");
  dir.write("conf/pki/admin.key", "KEY FILE");
  dir.write("conf/token", "file-token\n");
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, load_kubeconfig({.path = path}));
  EXPECT_EQ(rest.ca_pem, "CA FILE");
  EXPECT_EQ(rest.client_cert_pem, "CERT FILE");
  EXPECT_EQ(rest.client_key_pem, "KEY FILE");
  EXPECT_EQ(token_of(rest), "file-token");  // tokenFile wins over token, as in client-go
  EXPECT_EQ(rest.origin, "kubeconfig " + path + R"( (context "local"))");
}

TEST(LoadKubeconfigTest, InlineDataWinsOverFiles) {
  const TempDir dir;
  const std::string path = dir.write("config", R"(
clusters:
- name: c
  cluster: {server: "https://a", certificate-authority: missing.crt, certificate-authority-data: Q0EgUEVN}
contexts: [{name: a, context: {cluster: c}}]
current-context: a
)");
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, load_kubeconfig({.path = path}));
  EXPECT_EQ(rest.ca_pem, "CA PEM");
}

TEST(LoadKubeconfigTest, MissingReferencedFilesNameFieldAndPath) {
  const TempDir dir;
  const std::string path = dir.write("config", kRelativePaths);
  expect_error(load_kubeconfig({.path = path}), ErrorCode::kNotFound,
               "kubeconfig " + path + R"(: clusters["local"].certificate-authority: cannot read )" +
                   dir.file("pki/ca.crt") + ": No such file or directory");
  dir.write("pki/ca.crt", "CA FILE");
  expect_error(load_kubeconfig({.path = path}), ErrorCode::kNotFound,
               "kubeconfig " + path + R"(: users["admin"].client-certificate: cannot read )" +
                   dir.file("pki/admin.crt") + ": No such file or directory");
  dir.write("pki/admin.crt", "CERT FILE");
  dir.write("pki/admin.key", "KEY FILE");
  expect_error(load_kubeconfig({.path = path}), ErrorCode::kNotFound,
               "kubeconfig " + path + R"(: users["admin"].tokenFile: cannot read )" +
                   dir.file("token") + ": No such file or directory");
}

TEST(LoadKubeconfigTest, ExplicitPathMustExist) {
  const TempDir dir;
  const std::string path = dir.file("nope");
  expect_error(load_kubeconfig({.path = path}), ErrorCode::kNotFound,
               "kubeconfig " + path + ": cannot read " + path + ": No such file or directory");
}

TEST(LoadKubeconfigTest, ParseErrorsNameTheFile) {
  const TempDir dir;
  const std::string path = dir.write("config", "clusters: {a: b}\n");
  expect_error(load_kubeconfig({.path = path}), ErrorCode::kInvalid,
               "kubeconfig " + path + ": clusters: expected a list");
}

TEST(LoadKubeconfigTest, MergesTheKubeconfigList) {
  const TempDir dir;
  const std::string first = dir.write("a/config", R"(
clusters:
- {name: shared, cluster: {server: "https://first:6443"}}
users:
- {name: me, user: {tokenFile: token}}
contexts:
- {name: dev, context: {cluster: shared, user: me, namespace: first-ns}}
)");
  dir.write("a/token", "token-from-a");
  const std::string second = dir.write("b/config", R"(
clusters:
- {name: shared, cluster: {server: "https://second:6443"}}
- {name: other, cluster: {server: "https://other:6443"}}
users:
- {name: me, user: {token: token-from-b}}
contexts:
- {name: dev, context: {cluster: other, user: me}}
- {name: ops, context: {cluster: other, user: me}}
current-context: dev
)");
  const ScopedEnv env("KUBECONFIG",
                      dir.file("missing") + ":" + first + "::" + second + ":" + first);
  ASSERT_OK_AND_ASSIGN(const RestConfig dev, load_kubeconfig({}));
  EXPECT_EQ(dev.server, "https://first:6443");
  EXPECT_EQ(dev.default_namespace, "first-ns");
  EXPECT_EQ(token_of(dev), "token-from-a");  // a's tokenFile, resolved in a/
  EXPECT_EQ(dev.origin, "kubeconfig " + first + R"( (context "dev"))");

  ASSERT_OK_AND_ASSIGN(const RestConfig ops, load_kubeconfig({.context = "ops"}));
  EXPECT_EQ(ops.server, "https://other:6443");
  EXPECT_EQ(token_of(ops), "token-from-a");  // user "me" comes from the first file
  EXPECT_EQ(ops.origin, "kubeconfig " + second + R"( (context "ops"))");

  expect_error(load_kubeconfig({.context = "prod"}), ErrorCode::kInvalid,
               "kubeconfig " + first + ":" + second +
                   R"(: context "prod" not found (available: "dev", "ops"))");
}

TEST(LoadKubeconfigTest, KubeconfigListWithOnlyMissingFiles) {
  const TempDir dir;
  const std::string list = dir.file("x") + ":" + dir.file("y");
  const ScopedEnv env("KUBECONFIG", list);
  expect_error(load_kubeconfig({}), ErrorCode::kNotFound,
               "kubeconfig KUBECONFIG=" + list + ": none of the listed files exists");
}

TEST(LoadKubeconfigTest, KubeconfigListStopsAtABrokenFile) {
  const TempDir dir;
  const std::string good = dir.write("good", "current-context: a\n");
  const std::string bad = dir.write("bad", "users: [{name: u, user: {client-key-data: '!'}}]\n");
  const ScopedEnv env("KUBECONFIG", good + ":" + bad);
  expect_error(load_kubeconfig({}), ErrorCode::kInvalid,
               "kubeconfig " + bad + R"(: users["u"].client-key-data: not valid base64)");
}

TEST(LoadKubeconfigTest, FallsBackToHomeKubeConfig) {
  const TempDir dir;
  dir.write(".kube/config", R"(
clusters: [{name: c, cluster: {server: "https://home:6443"}}]
contexts: [{name: a, context: {cluster: c}}]
current-context: a
)");
  const ScopedEnv kubeconfig("KUBECONFIG", std::nullopt);
  const ScopedEnv home("HOME", dir.path());
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, load_kubeconfig({}));
  EXPECT_EQ(rest.host, "home");
  EXPECT_EQ(rest.origin, "kubeconfig " + dir.file(".kube/config") + R"( (context "a"))");
}

TEST(LoadKubeconfigTest, NoKubeconfigAnywhere) {
  const ScopedEnv kubeconfig("KUBECONFIG", "");
  const ScopedEnv home("HOME", std::nullopt);
  expect_error(load_kubeconfig({}), ErrorCode::kNotFound,
               "kubeconfig: no --kubeconfig given and neither KUBECONFIG nor HOME is set");
}

}  // namespace
}  // namespace nmo::kube

namespace nmo::kube {
namespace {

TEST(ApplyOverridesTest, KubectlFlagsReplaceTheChosenEntries) {
  ASSERT_OK_AND_ASSIGN(RestConfig rest, resolve(kTwoContexts));
  ASSERT_OK(apply_overrides(rest, ConfigOverrides{.server = "https://10.1.2.3:8443/x",
                                                  .token = "flag-token",
                                                  .insecure_skip_tls_verify = true,
                                                  .impersonate_user = "jane",
                                                  .impersonate_groups = {"ops", "dev"}}));
  EXPECT_EQ(rest.server, "https://10.1.2.3:8443/x");
  EXPECT_EQ(rest.host, "10.1.2.3");
  EXPECT_EQ(rest.port, "8443");
  EXPECT_EQ(rest.path_prefix, "/x");
  EXPECT_TRUE(rest.insecure_skip_tls_verify);
  EXPECT_EQ(rest.ca_pem, "");
  EXPECT_EQ(token_of(rest), "flag-token");
  EXPECT_EQ(rest.client_cert_pem, "CERT PEM");  // kept, as kubectl keeps it
  EXPECT_EQ(rest.impersonate_user, "jane");
  EXPECT_EQ(rest.impersonate_groups, (std::vector<std::string>{"ops", "dev"}));
}

TEST(ApplyOverridesTest, AnExecPluginIsToldTheClusterTheFlagsChose) {
  ASSERT_OK_AND_ASSIGN(RestConfig rest, resolve(R"(
clusters: [{name: c, cluster: {server: "https://a:6443", certificate-authority-data: Q0EgUEVN}}]
users:
- name: eks
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Never,
           provideClusterInfo: true}
contexts: [{name: a, context: {cluster: c, user: eks}}]
current-context: a
)"));
  ASSERT_NE(rest.exec, nullptr);
  ASSERT_TRUE(rest.exec->options().cluster.has_value());
  EXPECT_EQ(rest.exec->options().cluster->server, "https://a:6443");
  ASSERT_OK(apply_overrides(
      rest, ConfigOverrides{.server = "https://b:7443", .insecure_skip_tls_verify = true}));
  ASSERT_NE(rest.exec, nullptr);
  ASSERT_TRUE(rest.exec->options().cluster.has_value());
  EXPECT_EQ(rest.exec->options().cluster->server, "https://b:7443");
  EXPECT_EQ(rest.exec->options().cluster->ca_pem, "");
  EXPECT_TRUE(rest.exec->options().cluster->insecure_skip_tls_verify);
}

TEST(ApplyOverridesTest, RefusesABadServerAndGroupsWithoutAUser) {
  ASSERT_OK_AND_ASSIGN(RestConfig rest, resolve(kTwoContexts));
  Result<void> bad = apply_overrides(rest, ConfigOverrides{.server = "127.0.0.1:6443"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalid);
  EXPECT_TRUE(bad.error().message.starts_with(R"(--server "127.0.0.1:6443": )"))
      << bad.error().message;
  Result<void> groups = apply_overrides(rest, ConfigOverrides{.impersonate_groups = {"ops"}});
  ASSERT_FALSE(groups.has_value());
  EXPECT_EQ(groups.error().message, "--as-group needs --as (the user to impersonate)");
}

}  // namespace
}  // namespace nmo::kube
