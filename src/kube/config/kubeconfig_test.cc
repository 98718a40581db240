#include "kube/config/kubeconfig.h"

#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

constexpr const char* kOrigin = "/tmp/x/config";

// base64("CA PEM"), base64("CERT PEM"), base64("KEY PEM").
constexpr const char* kFull = R"(apiVersion: v1
kind: Config
preferences: {}
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0EgUEVN
    tls-server-name: kubernetes
- name: staging
  cluster:
    server: https://staging.example.com
    certificate-authority: ca.crt
    insecure-skip-tls-verify: false
    proxy-url: http://proxy:3128
users:
- name: admin
  user:
    client-certificate-data: Q0VSVCBQRU0=
    client-key-data: S0VZIFBFTQ==
- name: robot
  user:
    token: abc
    tokenFile: token
    client-certificate: robot.crt
    client-key: robot.key
- name: gke
  user:
    exec:
      command: gke-gcloud-auth-plugin
contexts:
- name: local
  context:
    cluster: local
    user: admin
    namespace: kube-system
- name: staging
  context:
    cluster: staging
    user: robot
current-context: local
)";

Result<Kubeconfig> parse(const std::string& yaml) { return parse_kubeconfig(yaml, kOrigin); }

void expect_invalid(const std::string& yaml, const std::string& message) {
  const Result<Kubeconfig> config = parse(yaml);
  ASSERT_FALSE(config.has_value()) << yaml;
  EXPECT_EQ(config.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(config.error().message, message);
}

TEST(ParseKubeconfigTest, ReadsEveryField) {
  ASSERT_OK_AND_ASSIGN(const Kubeconfig config, parse(kFull));
  EXPECT_EQ(config.origin, kOrigin);
  EXPECT_EQ(config.current_context, "local");
  ASSERT_EQ(config.clusters.size(), 2U);
  const KubeconfigCluster& local = config.clusters.at("local");
  EXPECT_EQ(local.server, "https://127.0.0.1:6443");
  EXPECT_EQ(local.certificate_authority_data, "CA PEM");
  EXPECT_EQ(local.certificate_authority, "");
  EXPECT_EQ(local.tls_server_name, "kubernetes");
  EXPECT_FALSE(local.insecure_skip_tls_verify);
  EXPECT_EQ(local.origin, kOrigin);
  const KubeconfigCluster& staging = config.clusters.at("staging");
  EXPECT_EQ(staging.certificate_authority, "ca.crt");  // relative paths stay as written here
  EXPECT_EQ(staging.proxy_url, "http://proxy:3128");

  ASSERT_EQ(config.users.size(), 3U);
  const KubeconfigUser& admin = config.users.at("admin");
  EXPECT_EQ(admin.client_certificate_data, "CERT PEM");
  EXPECT_EQ(admin.client_key_data, "KEY PEM");
  EXPECT_EQ(admin.unsupported_field, "");
  const KubeconfigUser& robot = config.users.at("robot");
  EXPECT_EQ(robot.token, "abc");
  EXPECT_EQ(robot.token_file, "token");
  EXPECT_EQ(robot.client_certificate, "robot.crt");
  EXPECT_EQ(robot.client_key, "robot.key");
  const KubeconfigUser& gke = config.users.at("gke");
  EXPECT_EQ(gke.unsupported_field, "");
  ASSERT_TRUE(gke.exec.has_value());
  EXPECT_EQ(gke.exec->command, "gke-gcloud-auth-plugin");

  ASSERT_EQ(config.contexts.size(), 2U);
  const KubeconfigContext& context = config.contexts.at("local");
  EXPECT_EQ(context.cluster, "local");
  EXPECT_EQ(context.user, "admin");
  EXPECT_EQ(context.namespace_name, "kube-system");
  EXPECT_EQ(config.contexts.at("staging").namespace_name, "");
}

TEST(ParseKubeconfigTest, EmptyDocumentIsAnEmptyConfig) {
  for (const char* yaml : {"", "\n", "# only a comment\n", "---\n", "~\n"}) {
    ASSERT_OK_AND_ASSIGN(const Kubeconfig config, parse(yaml));
    EXPECT_TRUE(config.clusters.empty() && config.users.empty() && config.contexts.empty());
    EXPECT_EQ(config.current_context, "");
  }
}

TEST(ParseKubeconfigTest, IgnoresUnknownKeysLikeKubectl) {
  ASSERT_OK_AND_ASSIGN(const Kubeconfig config, parse(R"(
clusters:
- name: c
  cluster:
    server: https://a
    certificate-authority-dat: Q0EgUEVN
    extensions: [{name: x, extension: {}}]
  color: blue
)"));
  EXPECT_EQ(config.clusters.at("c").server, "https://a");
  EXPECT_EQ(config.clusters.at("c").certificate_authority_data, "");
}

TEST(ParseKubeconfigTest, NullListsAndBodiesAreEmpty) {
  ASSERT_OK_AND_ASSIGN(const Kubeconfig config, parse(R"(
clusters:
users:
- name: nobody
  user:
contexts:
- name: bare
current-context: ""
)"));
  EXPECT_TRUE(config.clusters.empty());
  EXPECT_EQ(config.users.at("nobody"), (KubeconfigUser{.origin = kOrigin}));
  EXPECT_EQ(config.contexts.at("bare"), (KubeconfigContext{.origin = kOrigin}));
}

TEST(ParseKubeconfigTest, ParsesInsecureSkipTlsVerify) {
  ASSERT_OK_AND_ASSIGN(const Kubeconfig config, parse(R"(
clusters:
- {name: a, cluster: {server: "https://a", insecure-skip-tls-verify: true}}
- {name: b, cluster: {server: "https://b", insecure-skip-tls-verify: False}}
)"));
  EXPECT_TRUE(config.clusters.at("a").insecure_skip_tls_verify);
  EXPECT_FALSE(config.clusters.at("b").insecure_skip_tls_verify);
}

TEST(ParseKubeconfigTest, RecordsUnsupportedUserFieldsInOrder) {
  ASSERT_OK_AND_ASSIGN(const Kubeconfig config, parse(R"(
users:
- {name: oidc, user: {auth-provider: {name: oidc}}}
- {name: basic, user: {password: secret, username: admin}}
- {name: imp, user: {token: t, as: someone}}
- {name: empty-username, user: {token: t, username: ""}}
)"));
  EXPECT_EQ(config.users.at("oidc").unsupported_field, "auth-provider");
  EXPECT_EQ(config.users.at("basic").unsupported_field, "username");
  EXPECT_EQ(config.users.at("imp").unsupported_field, "as");
  EXPECT_EQ(config.users.at("empty-username").unsupported_field, "");
}

TEST(ParseKubeconfigTest, ExecPluginWithEveryField) {
  ASSERT_OK_AND_ASSIGN(const Kubeconfig config, parse(R"(
users:
- name: eks
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [eks, get-token, --cluster-name, prod]
      env: [{name: AWS_PROFILE, value: ops}, {name: EMPTY, value: ""}]
      installHint: install the AWS CLI
      provideClusterInfo: true
      interactiveMode: Never
)"));
  const KubeconfigExec expected{.command = "aws",
                                .args = {"eks", "get-token", "--cluster-name", "prod"},
                                .env = {{"AWS_PROFILE", "ops"}, {"EMPTY", ""}},
                                .api_version = "client.authentication.k8s.io/v1",
                                .install_hint = "install the AWS CLI",
                                .provide_cluster_info = true,
                                .interactive_mode = "Never"};
  EXPECT_EQ(config.users.at("eks").exec, expected);
}

TEST(ParseKubeconfigTest, ExecPluginOfTheWrongShape) {
  expect_invalid("users: [{name: x, user: {exec: aws}}]\n",
                 R"(kubeconfig /tmp/x/config: users["x"].exec: expected a mapping)");
  expect_invalid("users: [{name: x, user: {exec: {command: aws, args: aws}}}]\n",
                 R"(kubeconfig /tmp/x/config: users["x"].exec.args: expected a list of strings)");
  expect_invalid(
      "users: [{name: x, user: {exec: {command: aws, env: [A=b]}}}]\n",
      R"(kubeconfig /tmp/x/config: users["x"].exec.env[0]: expected a mapping with name and value)");
  expect_invalid("users: [{name: x, user: {exec: {command: aws, env: [{value: b}]}}}]\n",
                 R"(kubeconfig /tmp/x/config: users["x"].exec.env[0].name: is not set)");
}

TEST(ParseKubeconfigTest, YamlSyntaxErrorHasPosition) {
  expect_invalid("clusters:\n- name: a\n  cluster: {server: [\n",
                 "kubeconfig /tmp/x/config: line 4, column 1: end of sequence flow not found");
  expect_invalid("a: b\n c: d\n", "kubeconfig /tmp/x/config: line 2, column 3: illegal map value");
}

TEST(ParseKubeconfigTest, RejectsBadBase64NamingTheField) {
  expect_invalid(R"(
users:
- name: admin
  user:
    client-key-data: "not base64!"
)",
                 R"(kubeconfig /tmp/x/config: users["admin"].client-key-data: not valid base64)");
  expect_invalid(
      R"(
clusters:
- name: local
  cluster: {certificate-authority-data: Q0EgUEV}
)",
      R"(kubeconfig /tmp/x/config: clusters["local"].certificate-authority-data: not valid base64)");
}

TEST(ParseKubeconfigTest, RejectsWrongShapes) {
  expect_invalid("- a\n", "kubeconfig /tmp/x/config: expected a mapping at the top level");
  expect_invalid("clusters: {a: b}\n", "kubeconfig /tmp/x/config: clusters: expected a list");
  expect_invalid("users: [x]\n", "kubeconfig /tmp/x/config: users[0]: expected a mapping");
  expect_invalid("contexts: [{context: {}}]\n",
                 "kubeconfig /tmp/x/config: contexts[0].name: is not set");
  expect_invalid("contexts: [{name: [a]}]\n",
                 "kubeconfig /tmp/x/config: contexts[0].name: expected a string");
  expect_invalid("clusters: [{name: a, cluster: [x]}]\n",
                 R"(kubeconfig /tmp/x/config: clusters["a"].cluster: expected a mapping)");
  expect_invalid("clusters: [{name: a, cluster: {server: {x: 1}}}]\n",
                 R"(kubeconfig /tmp/x/config: clusters["a"].server: expected a string)");
  expect_invalid(
      "clusters: [{name: a, cluster: {insecure-skip-tls-verify: yes please}}]\n",
      R"(kubeconfig /tmp/x/config: clusters["a"].insecure-skip-tls-verify: expected true or false)");
  expect_invalid("current-context: [a]\n",
                 "kubeconfig /tmp/x/config: current-context: expected a string");
}

TEST(ParseKubeconfigTest, RejectsDuplicates) {
  expect_invalid("clusters: [{name: a}, {name: a}]\n",
                 R"(kubeconfig /tmp/x/config: clusters["a"]: duplicate name)");
  expect_invalid("users: [{name: u, user: {token: a, token: b}}]\n",
                 R"(kubeconfig /tmp/x/config: users["u"]: duplicate key "token")");
  expect_invalid("current-context: a\ncurrent-context: b\n",
                 R"(kubeconfig /tmp/x/config: top level: duplicate key "current-context")");
}

TEST(ParseKubeconfigTest, QuotesOddNamesInMessages) {
  expect_invalid("users: [{name: \"a\\\"b\\n\", user: {token: [x]}}]\n",
                 R"(kubeconfig /tmp/x/config: users["a\"b\x0a"].token: expected a string)");
}

TEST(MergeKubeconfigTest, FirstDefinitionWins) {
  ASSERT_OK_AND_ASSIGN(Kubeconfig first, parse_kubeconfig(R"(
clusters: [{name: shared, cluster: {server: "https://first"}}]
contexts: [{name: one, context: {cluster: shared}}]
)",
                                                          "/a"));
  ASSERT_OK_AND_ASSIGN(Kubeconfig second, parse_kubeconfig(R"(
clusters:
- {name: shared, cluster: {server: "https://second"}}
- {name: extra, cluster: {server: "https://extra"}}
contexts: [{name: one, context: {cluster: extra}}]
current-context: one
)",
                                                           "/b"));
  merge_kubeconfig(first, std::move(second));
  EXPECT_EQ(first.origin, "/a:/b");
  EXPECT_EQ(first.current_context, "one");
  EXPECT_EQ(first.clusters.at("shared").server, "https://first");
  EXPECT_EQ(first.clusters.at("shared").origin, "/a");
  EXPECT_EQ(first.clusters.at("extra").origin, "/b");
  EXPECT_EQ(first.contexts.at("one").cluster, "shared");
}

}  // namespace
}  // namespace nmo::kube
