// Exec credential plugins against the real local API server: small plugins written by the test
// (shell scripts) hand out a ServiceAccount token from the TokenRequest API or a client
// certificate signed by the cluster's client CA (.cluster/pki), and the API server says who we
// are (SelfSubjectReview). Covers the cache until expirationTimestamp, a new certificate on a
// new connection, the run after a 401 (requests and watches), and a failing plugin.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/strings.h"
#include "kube/client/client.h"
#include "kube/config/base64.h"
#include "kube/config/kubeconfig_loader.h"
#include "kube/config/testing/temp_dir.h"
#include "test/e2e/support/cluster.h"
#include "test/integration/support/run.h"

namespace nmo::kube {
namespace {

namespace json = boost::json;
using e2e::ClusterTest;
using e2e::TestNamespace;
using nmo::testing::run;
using namespace std::chrono_literals;

constexpr const char* kFarFuture = "2999-01-01T00:00:00Z";
constexpr const char* kPast = "2000-01-01T00:00:00Z";

std::string token_credential(const std::string& token, const std::string& expiry) {
  json::object status{{"token", token}};
  if (!expiry.empty()) status["expirationTimestamp"] = expiry;
  return json::serialize(json::object{{"apiVersion", "client.authentication.k8s.io/v1"},
                                      {"kind", "ExecCredential"},
                                      {"status", std::move(status)}});
}

std::string certificate_credential(const std::string& cert, const std::string& key,
                                   const std::string& expiry) {
  return json::serialize(json::object{{"apiVersion", "client.authentication.k8s.io/v1"},
                                      {"kind", "ExecCredential"},
                                      {"status",
                                       {{"clientCertificateData", cert},
                                        {"clientKeyData", key},
                                        {"expirationTimestamp", expiry}}}});
}

class ExecCredentialTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    auto admin = load_kubeconfig({});
    ASSERT_TRUE(admin) << admin.error().describe();
    admin_ = std::move(*admin);
  }

  // A plugin that prints cred.<n>.json on its n-th run (the last one again after that), counts
  // its runs and keeps its last KUBERNETES_EXEC_INFO; `credentials` are the files' contents.
  void write_plugin(const std::vector<std::string>& credentials) {
    for (std::size_t i = 0; i < credentials.size(); ++i) {
      dir_.write("cred." + std::to_string(i + 1) + ".json", credentials[i]);
    }
    const std::string d = dir_.path();
    const std::string path =
        dir_.write("plugin.sh", "#!/bin/sh\necho run >> " + d + "/runs\nn=$(wc -l < " + d +
                                    "/runs)\n[ \"$n\" -gt " + std::to_string(credentials.size()) +
                                    " ] && n=" + std::to_string(credentials.size()) +
                                    "\nprintf '%s' \"$KUBERNETES_EXEC_INFO\" > " + d +
                                    "/info\ncat " + d + "/cred.$n.json\n");
    ::chmod(path.c_str(), 0700);
  }

  // A kubeconfig for the local cluster whose user is `exec` (a YAML mapping).
  Result<RestConfig> exec_config(const std::string& exec) {
    const std::string path = dir_.write("config", R"(apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: )" + admin_.server + R"(
    certificate-authority-data: )" + base64_encode(admin_.ca_pem) +
                                                      R"(
users:
- name: plugin
  user:
    exec:
)" + exec + R"(
contexts:
- {name: local, context: {cluster: local, user: plugin}}
current-context: local
)");
    return load_kubeconfig({.path = path, .context = {}});
  }

  Result<RestConfig> plugin_config() {
    return exec_config(
        "      apiVersion: client.authentication.k8s.io/v1\n"
        "      command: ./plugin.sh\n"
        "      interactiveMode: Never\n"
        "      provideClusterInfo: true");
  }

  std::unique_ptr<Client> client_for(RestConfig config) {
    auto client = Client::create(io_.get_executor(), std::move(config));
    EXPECT_TRUE(client) << client.error().describe();
    return client ? std::move(*client) : nullptr;
  }

  // Who the API server says we are (SelfSubjectReview), or the error's description.
  std::string whoami(Client& client) {
    const e2e::Kubectl kubectl;
    const std::string path = e2e::self_subject_review_path(kubectl);
    json::value review = json::object{{"apiVersion", e2e::self_subject_review_api_version(kubectl)},
                                      {"kind", "SelfSubjectReview"}};
    auto answer = run(io_, [&](auto) { return client.create(path, review); });
    if (!answer) return "<" + answer.error().describe() + ">";
    return e2e::string_at(*answer, "/status/userInfo/username");
  }

  std::size_t runs() const {
    std::ifstream in(dir_.file("runs"));
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }

  // A ServiceAccount token of `account` in `ns` from the TokenRequest API.
  std::string service_account_token(const std::string& ns, const std::string& account) {
    if (account != "default") kubectl_.must({"create", "serviceaccount", "-n", ns, account});
    return std::string(
        trim(kubectl_.must({"create", "token", "-n", ns, account, "--duration=1h"})));
  }

  // A client certificate for user `name`, signed by the local cluster's client CA.
  std::pair<std::string, std::string> client_certificate(const std::string& name) {
    const char* kubeconfig = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
    const std::string pki = std::filesystem::path(kubeconfig).parent_path().string() + "/pki";
    const std::string key = dir_.file(name + ".key");
    const std::string csr = dir_.file(name + ".csr");
    const std::string crt = dir_.file(name + ".crt");
    for (const std::vector<std::string>& argv :
         {std::vector<std::string>{"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout",
                                   key, "-out", csr, "-subj", "/CN=" + name},
          std::vector<std::string>{"openssl", "x509", "-req", "-in", csr, "-CA", pki + "/ca.crt",
                                   "-CAkey", pki + "/ca.key", "-CAcreateserial", "-CAserial",
                                   dir_.file("ca.srl"), "-days", "1", "-out", crt}}) {
      const e2e::ProcessResult made = e2e::run_process(argv);
      EXPECT_TRUE(made.ok()) << made.err;
    }
    auto slurp = [](const std::string& path) {
      std::ifstream in(path);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    return {slurp(crt), slurp(key)};
  }

  RestConfig admin_;
  kube::testing::TempDir dir_;
  asio::io_context io_;
};

TEST_F(ExecCredentialTest, TokenFromThePluginIsTheServiceAccountsAndCachedUntilItExpires) {
  TestNamespace ns(kubectl_, "itest-exec");
  write_plugin({token_credential(service_account_token(ns.name(), "default"), kFarFuture)});
  auto config = plugin_config();
  ASSERT_TRUE(config) << config.error().describe();
  auto client = client_for(std::move(*config));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(whoami(*client), "system:serviceaccount:" + ns.name() + ":default");
  EXPECT_EQ(whoami(*client), "system:serviceaccount:" + ns.name() + ":default");
  EXPECT_EQ(runs(), 1U);
  // provideClusterInfo: the plugin was told the server and its CA.
  std::ifstream info_file(dir_.file("info"));
  const json::value info = json::parse(
      std::string(std::istreambuf_iterator<char>(info_file), std::istreambuf_iterator<char>()));
  EXPECT_EQ(e2e::string_at(info, "/apiVersion"), "client.authentication.k8s.io/v1");
  EXPECT_EQ(info.at_pointer("/spec/interactive"), json::value(false));
  EXPECT_EQ(e2e::string_at(info, "/spec/cluster/server"), admin_.server);
  EXPECT_EQ(e2e::string_at(info, "/spec/cluster/certificate-authority-data"),
            base64_encode(admin_.ca_pem));
}

TEST_F(ExecCredentialTest, ExpiredTokenIsFetchedAgain) {
  TestNamespace ns(kubectl_, "itest-exec");
  write_plugin({token_credential(service_account_token(ns.name(), "first"), kPast),
                token_credential(service_account_token(ns.name(), "second"), kFarFuture)});
  auto config = plugin_config();
  ASSERT_TRUE(config) << config.error().describe();
  auto client = client_for(std::move(*config));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(whoami(*client), "system:serviceaccount:" + ns.name() + ":first");
  EXPECT_EQ(whoami(*client), "system:serviceaccount:" + ns.name() + ":second");
  EXPECT_EQ(whoami(*client), "system:serviceaccount:" + ns.name() + ":second");
  EXPECT_EQ(runs(), 2U);
}

TEST_F(ExecCredentialTest, ClientCertificatesFromThePluginAndANewOneWhenItExpires) {
  const auto [cert1, key1] = client_certificate("nmo-exec-first");
  const auto [cert2, key2] = client_certificate("nmo-exec-second");
  write_plugin({certificate_credential(cert1, key1, kPast),
                certificate_credential(cert2, key2, kFarFuture)});
  auto config = plugin_config();
  ASSERT_TRUE(config) << config.error().describe();
  auto client = client_for(std::move(*config));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(whoami(*client), "nmo-exec-first");
  EXPECT_EQ(whoami(*client), "nmo-exec-second");
  EXPECT_EQ(whoami(*client), "nmo-exec-second");
  EXPECT_EQ(runs(), 2U);
}

TEST_F(ExecCredentialTest, RefusedTokenRunsThePluginAgainForRequestsAndWatches) {
  TestNamespace ns(kubectl_, "itest-exec");
  const std::string good = service_account_token(ns.name(), "default");
  write_plugin({token_credential("not-a-token", ""), token_credential(good, "")});
  auto config = plugin_config();
  ASSERT_TRUE(config) << config.error().describe();
  auto client = client_for(std::move(*config));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(whoami(*client), "system:serviceaccount:" + ns.name() + ":default");
  EXPECT_EQ(runs(), 2U);

  write_plugin({token_credential("not-a-token", ""), token_credential(good, "")});
  std::filesystem::remove(dir_.file("runs"));
  auto watched_config = plugin_config();
  ASSERT_TRUE(watched_config) << watched_config.error().describe();
  auto watched = client_for(std::move(*watched_config));
  ASSERT_NE(watched, nullptr);
  // The default ServiceAccount may not watch ConfigMaps: a 403 shows the token was accepted
  // (a refused one is a 401).
  const std::string path = "/api/v1/namespaces/" + ns.name() + "/configmaps";
  auto stream = run(io_, [&](auto) { return watched->watch(path, WatchOptions{}); });
  ASSERT_FALSE(stream);
  EXPECT_EQ(stream.error().code, ErrorCode::kForbidden) << stream.error().describe();
  EXPECT_EQ(runs(), 2U);
}

TEST_F(ExecCredentialTest, AlwaysRefusedTokenEndsAs401AfterOneMoreRun) {
  write_plugin({token_credential("not-a-token", "")});
  auto config = plugin_config();
  ASSERT_TRUE(config) << config.error().describe();
  auto client = client_for(std::move(*config));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(whoami(*client), "<Unauthorized (401): Unauthorized>");
  EXPECT_EQ(runs(), 2U);
}

TEST_F(ExecCredentialTest, FailingPluginIsTheRequestsErrorNamingKubeconfigUserAndCommand) {
  const std::string path =
      dir_.write("plugin.sh", "#!/bin/sh\necho 'token expired: log in' >&2\nexit 3\n");
  ::chmod(path.c_str(), 0700);
  auto config = plugin_config();
  ASSERT_TRUE(config) << config.error().describe();
  auto client = client_for(std::move(*config));
  ASSERT_NE(client, nullptr);
  auto got = run(io_, [&](auto) { return client->get_json("/api/v1/namespaces/default"); });
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, ErrorCode::kUnauthorized);
  EXPECT_EQ(got.error().message,
            "kubeconfig " + dir_.file("config") + ": users[\"plugin\"]: exec plugin \"" +
                dir_.file("plugin.sh") + "\" exited with status 3: token expired: log in");
}

}  // namespace
}  // namespace nmo::kube
