// The validating admission webhook against the real local cluster, through kubectl (docs/design.md
// §4, scenario S6 of docs/design.md §8): each test starts the operator with its webhook on
// 127.0.0.1 and a free port, serving a certificate for 127.0.0.1 made by hack/webhook-dev.sh, and
// registers deploy/webhook's ValidatingWebhookConfiguration pointing at it (clientConfig.url +
// caBundle), like `make run`.
//
// Isolation: the configuration gets a unique name and an objectSelector on a label only this
// test's NodeMaintenances carry, so other tests' objects never reach this webhook, and a
// configuration left behind by a crashed run (failurePolicy Fail) harms nobody. The
// NodeMaintenances name two Nodes made for the test (kwok runs them), so maintenances other
// tests hold on the shared workers never collide with the duplicate rule, and draining them
// touches nothing shared. TearDown always deletes the configuration first, then the test's
// NodeMaintenances (the operator started here removes their finalizers), then stops the
// operator and deletes the Nodes.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/asio.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_pki.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_fixture.h"
#include "test/e2e/support/operator_process.h"
#include "test/e2e/support/scenarios.h"
#include "test/e2e/support/serving_certificate.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

constexpr const char* kValidatePath =
    "/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance";
constexpr const char* kDenied =
    "admission webhook \"nodemaintenance-validation.medik8s.io\" denied the request: ";
// The denials: our words, then upstream NMO's (docs/design.md §4).
constexpr const char* kImmutable =
    "nodeName is immutable and cannot be changed after creation; updating spec.NodeName isn't "
    "allowed";
std::string missing_node(const std::string& node) {
  return "node \"" + node + "\" not found in cluster; invalid nodeName, no node with name " + node +
         " found";
}
std::string already_held(const std::string& node, const std::string& other) {
  return "node \"" + node + "\" is already under maintenance by NodeMaintenance \"" + other +
         "\"; invalid nodeName, a NodeMaintenance for node " + node + " already exists";
}
// Marks the configurations this test registers (stale ones are removed at start).
constexpr const char* kConfigLabel = "test.node-maintenance/webhook-e2e";
// Carried by this test's NodeMaintenances; the configuration selects on it (value: the run).
constexpr const char* kRunLabel = "test.node-maintenance/webhook-run";
// Holds a NodeMaintenance in deletion after the operator removed its own finalizer.
constexpr const char* kHoldFinalizer = "test.node-maintenance/hold";

// Marks the Nodes this test creates (stale ones are removed at start).
constexpr const char* kNodeLabel = "test.node-maintenance/webhook-e2e-node";

// A free TCP port on 127.0.0.1 (free when asked; the operator binds it right after).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

// The error line kubectl printed: the first line of `text` that is not a warning.
std::string error_line(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Warning: ", 0) == 0 || line.empty()) continue;
    return line;
  }
  return {};
}

class WebhookTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    install_operator_prerequisites(kubectl_);
    ASSERT_FALSE(HasFailure()) << "the operator's prerequisites could not be installed";
    (void)kubectl_.run(
        {"delete", "validatingwebhookconfigurations", "-l", kConfigLabel, "--ignore-not-found"});
    (void)kubectl_.run({"delete", "nodes", "-l", kNodeLabel, "--ignore-not-found", "--wait=false"});
    node_a_ = unique_name("webhook-e2e-a");
    node_b_ = unique_name("webhook-e2e-b");
    for (const std::string& node : {node_a_, node_b_}) {
      kubectl_.apply(node_manifest(node, {{kNodeLabel, "true"}}));
    }

    port_ = free_port();
    ASSERT_NE(port_, 0);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::vector<std::string> flags{"--webhook-port", std::to_string(port_),
                                   "--webhook-bind-address", "127.0.0.1"};
    for (const std::string& flag : certificate_flags()) flags.push_back(flag);
    for (const std::string& flag : extra_flags()) flags.push_back(flag);
    operator_ = std::make_unique<OperatorProcess>(
        std::string(info->test_suite_name()) + "." + info->name(), flags);
    ASSERT_TRUE(operator_->wait_for_log("serving server=webhook", 30s))
        << "the operator's webhook did not start:\n"
        << operator_->log_tail(30);

    run_ = unique_name("run");
    if (!api_server_calls_it()) return;
    configuration_ = unique_name("nmo-e2e-webhook");
    register_webhook("https://127.0.0.1:" + std::to_string(port_) + kValidatePath);
    // The API server picks new configurations up asynchronously: ready once a dry-run create
    // is answered by the webhook.
    wait_until(
        "the webhook to answer a dry-run create", 30s,
        [&] {
          const ProcessResult r = kubectl_.run({"create", "--dry-run=server", "-f", "-"},
                                               manifest(unique_name("probe"), "node-nowhere"));
          return r.err.find(kDenied) != std::string::npos;
        },
        [&] { return operator_->log_tail(10); });
  }

  void TearDown() override {
    if (HasFailure() && operator_) {
      std::cerr << "---- operator log " << operator_->log_path() << " (last 60 lines)\n"
                << operator_->log_tail(60) << "---- end\n";
    }
    // First, whatever happened: a configuration with failurePolicy Fail must not outlive us.
    if (!configuration_.empty()) {
      (void)kubectl_.run(
          {"delete", "validatingwebhookconfiguration", configuration_, "--ignore-not-found"});
    }
    if (!run_.empty()) {
      for (const std::string& name : held_) release_hold(name);
      (void)kubectl_.run({"delete", "nm", "-l", std::string(kRunLabel) + "=" + run_, "--wait=false",
                          "--ignore-not-found"});
      const bool gone = wait_until(
          "the test's NodeMaintenances to be gone (the operator removes its finalizer)", 90s,
          [&] { return remaining().empty(); },
          [&] {
            std::string names;
            for (const auto& n : remaining()) names += n + " ";
            return names;
          });
      if (!gone) {
        for (const auto& name : remaining()) {
          (void)kubectl_.run(
              {"patch", "nm", name, "--type=merge", "-p", R"({"metadata":{"finalizers":null})"});
        }
      }
    }
    if (operator_ && operator_->running()) {
      EXPECT_EQ(operator_->stop(), 0)
          << "the operator did not stop cleanly; log " << operator_->log_path();
    }
    for (const std::string& node : {node_a_, node_b_}) {
      if (!node.empty()) (void)kubectl_.run({"delete", "node", node, "--ignore-not-found"});
    }
  }

  // Flags the operator gets besides the webhook's.
  virtual std::vector<std::string> extra_flags() const { return {}; }

  // Whether the local API server can call this operator's webhook (not when it asks for a client
  // certificate: the shared cluster's API server has no admission configuration that presents
  // one), so SetUp registers it and waits for its first answer.
  virtual bool api_server_calls_it() const { return true; }

  // A client of the operator's webhook port, as anyone who reaches it could make one; with a
  // client certificate when given.
  std::unique_ptr<http::Client> webhook_client(std::string client_cert_pem = {},
                                               std::string client_key_pem = {}) {
    Result<std::unique_ptr<http::Client>> client = http::Client::create(
        io_.get_executor(), {.host = "127.0.0.1",
                             .port = std::to_string(port_),
                             .tls = true,
                             .tls_options = {.ca_pem = certificate_.ca_pem(),
                                             .client_cert_pem = std::move(client_cert_pem),
                                             .client_key_pem = std::move(client_key_pem)},
                             .max_idle_connections = 0});
    EXPECT_TRUE(client.has_value()) << client.error().describe();
    return client ? std::move(client).value() : nullptr;
  }

  // An AdmissionReview CREATE of NodeMaintenance `name` for `node`, sent by `username` as the
  // API server would send it, posted straight to the webhook port.
  Result<http::Response> post_review(http::Client& client, const std::string& name,
                                     const std::string& node, const std::string& username) {
    http::Request request{.method = http::Method::kPost,
                          .target = kValidatePath,
                          .headers = {{"Content-Type", "application/json"}},
                          .body = create_review(name, json::parse(manifest(name, node)), username),
                          .timeout = std::chrono::seconds(10)};
    return http::test::run(io_, client.send(std::move(request)));
  }

  // response.allowed of an answered review (false, with a failure, when it is no review).
  static bool allowed_in(const http::Response& answer) {
    boost::system::error_code error;
    const json::value body = json::parse(answer.body, error);
    if (error || !body.is_object()) {
      ADD_FAILURE() << "not a JSON answer: " << answer.body;
      return false;
    }
    const json::value* allowed = body.find_pointer("/response/allowed", error);
    if (allowed == nullptr || !allowed->is_bool()) {
      ADD_FAILURE() << "no response.allowed in: " << answer.body;
      return false;
    }
    return allowed->as_bool();
  }

  // Where the operator finds the serving certificate.
  virtual std::vector<std::string> certificate_flags() {
    return {"--webhook-cert-dir", certificate_.dir().string()};
  }

  // A NodeMaintenance carrying this run's label (so the webhook sees it).
  std::string manifest(const std::string& name, const std::string& node,
                       const std::string& reason = "e2e webhook test") const {
    return json::serialize(
        json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                     {"kind", "NodeMaintenance"},
                     {"metadata", {{"name", name}, {"labels", {{kRunLabel, run_}}}}},
                     {"spec", {{"nodeName", node}, {"reason", reason}}}});
  }

  ProcessResult create(const std::string& name, const std::string& node) const {
    return kubectl_.run({"create", "-f", "-"}, manifest(name, node));
  }

  // deploy/webhook's configuration (hack/webhook-dev.sh), under this test's name and label,
  // selecting only this run's NodeMaintenances.
  void register_webhook(const std::string& url) {
    const std::string made = certificate_.scoped_webhook_configuration(
        url, configuration_, kConfigLabel, kRunLabel, run_);
    ASSERT_FALSE(made.empty());
    kubectl_.apply(made);
  }

  // Names of this run's NodeMaintenances.
  std::vector<std::string> remaining() const {
    std::vector<std::string> names;
    const ProcessResult r = kubectl_.run({"get", "nm", "-l", std::string(kRunLabel) + "=" + run_,
                                          "-o", "jsonpath={.items[*].metadata.name}"});
    std::istringstream in(r.out);
    for (std::string name; in >> name;) names.push_back(name);
    return names;
  }

  void hold(const std::string& name) {
    kubectl_.must({"patch", "nm", name, "--type=json", "-p",
                   std::string(R"([{"op":"add","path":"/metadata/finalizers/-","value":")") +
                       kHoldFinalizer + "\"}]"});
    held_.push_back(name);
  }
  void release_hold(const std::string& name) {
    const auto nm = kubectl_.get_json({"nm", name});
    if (!nm) return;
    json::array kept;
    if (const auto* finalizers =
            nm->as_object().at("metadata").as_object().if_contains("finalizers")) {
      for (const auto& f : finalizers->as_array()) {
        if (f != kHoldFinalizer) kept.push_back(f);
      }
    }
    (void)kubectl_.run({"patch", "nm", name, "--type=merge", "-p",
                        json::serialize(json::object{{"metadata", {{"finalizers", kept}}}})});
  }

  std::string node_name_of(const std::string& name) const {
    const auto nm = kubectl_.get_json({"nm", name});
    return nm ? string_at(*nm, "/spec/nodeName") : "";
  }

  ServingCertificate certificate_;
  asio::io_context io_;  // the webhook clients', run on the test thread
  int port_ = 0;
  std::string run_;
  std::string configuration_;
  std::unique_ptr<OperatorProcess> operator_;
  std::string node_a_;
  std::string node_b_;
  std::vector<std::string> held_;
};

// docs/design.md §8 (S6): an admin tries to move a maintenance to another node.
TEST_F(WebhookTest, ChangingNodeNameIsDeniedWithTheStorysMessage) {
  const std::string name = unique_name("maintenance-a");
  ASSERT_TRUE(create(name, node_a_).ok());
  const ProcessResult patch = kubectl_.run(
      {"patch", "nm", name, "--type", "merge", "-p", R"({"spec":{"nodeName":"node-worker-05"}})"});
  EXPECT_EQ(patch.exit_code, 1);
  EXPECT_EQ(error_line(patch.err),
            std::string("Error from server (Forbidden): ") + kDenied + kImmutable);
  EXPECT_EQ(node_name_of(name), node_a_);
}

TEST_F(WebhookTest, ChangingNodeNameIsDeniedWhileTheMaintenanceIsBeingDeleted) {
  const std::string name = unique_name("maintenance-a");
  ASSERT_TRUE(create(name, node_a_).ok());
  hold(name);
  kubectl_.must({"delete", "nm", name, "--wait=false"});
  const ProcessResult patch = kubectl_.run(
      {"patch", "nm", name, "--type", "merge", "-p", R"({"spec":{"nodeName":"node-worker-05"}})"});
  EXPECT_EQ(error_line(patch.err),
            std::string("Error from server (Forbidden): ") + kDenied + kImmutable);
}

TEST_F(WebhookTest, MaintenanceForANodeThatDoesNotExistIsDenied) {
  const ProcessResult apply =
      kubectl_.run({"apply", "-f", "-"},
                   manifest(unique_name("maintenance-missing"), "node-that-does-not-exist"));
  EXPECT_EQ(apply.exit_code, 1);
  EXPECT_EQ(error_line(apply.err),
            std::string("Error from server (Forbidden): error when creating \"STDIN\": ") +
                kDenied + missing_node("node-that-does-not-exist"));
  EXPECT_THAT(remaining(), ::testing::IsEmpty());
}

// The certificate where OLM mounts it (apiserver.crt and apiserver.key in
// /apiserver.local.config/certificates; --olm-cert-dir points at a copy), no --webhook-cert-dir.
class OlmCertificateWebhookTest : public WebhookTest {
 protected:
  std::vector<std::string> certificate_flags() override {
    const std::filesystem::path& dir = certificate_.dir();
    std::filesystem::copy_file(dir / "tls.crt", dir / "apiserver.crt");
    std::filesystem::copy_file(dir / "tls.key", dir / "apiserver.key");
    std::filesystem::remove(dir / "tls.crt");
    std::filesystem::remove(dir / "tls.key");
    return {"--olm-cert-dir", dir.string()};
  }
};

TEST_F(OlmCertificateWebhookTest, ServesWithTheCertificateOlmMounts) {
  const ProcessResult missing = create(unique_name("maintenance-nowhere"), "node-nowhere");
  EXPECT_EQ(error_line(missing.err),
            std::string("Error from server (Forbidden): error when creating \"STDIN\": ") +
                kDenied + missing_node("node-nowhere"));
}

// An OLM certificate path that exists but cannot be read stops the start, naming the file.
TEST(OlmCertificateTest, UnreadableKeyIsAnErrorAtStartNamingTheFile) {
  const ServingCertificate certificate;
  const std::filesystem::path& dir = certificate.dir();
  std::filesystem::copy_file(dir / "tls.crt", dir / "apiserver.crt");
  std::filesystem::create_directory(dir / "apiserver.key");  // there, but not a readable file
  OperatorProcess op("OlmCertificateTest.UnreadableKeyIsAnErrorAtStartNamingTheFile",
                     {"--webhook-port", std::to_string(free_port()), "--webhook-bind-address",
                      "127.0.0.1", "--olm-cert-dir", dir.string()});
  EXPECT_TRUE(wait_until("the operator to exit", 30s, [&] { return !op.running(); }));
  EXPECT_EQ(op.stop(), 2);
  EXPECT_NE(op.log().find((dir / "apiserver.key").string()), std::string::npos) << op.log_tail(10);
}

// --webhook-reject-unsafe-control-plane asks the controller's quorum rule, on OpenShift too.
class UnsafeControlPlaneWebhookTest : public WebhookTest {
 protected:
  std::vector<std::string> extra_flags() const override {
    return {"--webhook-reject-unsafe-control-plane"};
  }
};

TEST_F(UnsafeControlPlaneWebhookTest, OpenShiftGuardPdbRefusesAControlPlaneNodeItWouldBreak) {
  kubectl_.must({"label", "node", node_a_, "node-role.kubernetes.io/control-plane="});
  // Both guards healthy and none may go: node_a_'s member is needed for quorum.
  OpenShiftEtcd openshift(kubectl_, {node_a_, node_b_}, 2);
  ASSERT_TRUE(openshift.ready());
  const ProcessResult refused = create(unique_name("maintenance-cp"), node_a_);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(error_line(refused.err),
            "Error from server (Forbidden): error when creating \"STDIN\": admission webhook "
            "\"nodemaintenance-validation.medik8s.io\" denied the request: can not put "
            "master/control-plane node into maintenance at this moment, disrupting node " +
                node_a_ + " will violate etcd quorum");
  EXPECT_THAT(remaining(), ::testing::IsEmpty());

  // One disruption allowed: the same create goes through.
  openshift.set_min_available(1);
  const ProcessResult allowed = create(unique_name("maintenance-cp"), node_a_);
  EXPECT_TRUE(allowed.ok()) << allowed.err;
}

TEST_F(WebhookTest, SecondMaintenanceForANodeIsDeniedNamingTheFirst) {
  const std::string first = unique_name("maintenance-a");
  ASSERT_TRUE(create(first, node_a_).ok());
  const ProcessResult second = create(unique_name("maintenance-a-again"), node_a_);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_EQ(error_line(second.err),
            std::string("Error from server (Forbidden): error when creating \"STDIN\": ") +
                kDenied + already_held(node_a_, first));
  // Another node is not affected.
  EXPECT_TRUE(create(unique_name("maintenance-b"), node_b_).ok());
}

// Anyone who reaches the webhook port can post a review. A forged CREATE for a real node (from
// another requester) must not hold the node against the admin's real create: before, the
// reservation refused it for 10 s ("already under maintenance"). The admin's create is admitted
// at once; the forger's object was never stored, so nothing else is left to settle.
TEST_F(WebhookTest, ForgedReviewFromAnotherRequesterDoesNotDenyTheAdminsCreate) {
  std::unique_ptr<http::Client> forger = webhook_client();
  ASSERT_NE(forger, nullptr);
  const std::string forged = unique_name("forged");
  ASSERT_OK_AND_ASSIGN(const http::Response answer,
                       post_review(*forger, forged, node_a_, "mallory"));
  ASSERT_EQ(answer.status, 200U) << answer.body;
  EXPECT_TRUE(allowed_in(answer));  // a real node nobody maintains: the forgery is admitted

  // Right away (well within the reservation's 10 s), the real create through the API server.
  const std::string real = unique_name("maintenance-a");
  const ProcessResult created = create(real, node_a_);
  EXPECT_TRUE(created.ok()) << created.err;
  EXPECT_EQ(remaining(), std::vector<std::string>{real});
  // And the real one, once the lookup sees it stored, holds the node against everyone.
  std::string last;
  EXPECT_TRUE(wait_until(
      "a forged review to be denied now that the real maintenance exists", 30s,
      [&] {
        Result<http::Response> again =
            post_review(*forger, unique_name("forged"), node_a_, "mallory");
        if (!again) return false;
        last = again->body;
        // The message, JSON-escaped in the body, names the real maintenance.
        return again->status == 200 && !allowed_in(*again) &&
               again->body.find("by NodeMaintenance \\\"" + real + "\\\"") != std::string::npos;
      },
      [&] { return last; }));
}

// --webhook-client-ca: reviews need a client certificate the CA signed (mTLS). The shared
// cluster's API server presents none (its admission configuration is not ours to change), so the
// caller here is our own client, with and without the certificate.
class ClientCaWebhookTest : public WebhookTest {
 protected:
  ClientCaWebhookTest() {
    Result<http::test::TestPki> pki = http::test::make_test_pki();
    if (!pki) {
      ADD_FAILURE() << pki.error().describe();
      return;
    }
    pki_ = std::move(pki).value();
    ca_file_ = certificate_.dir() / "client-ca.crt";
    std::ofstream(ca_file_) << pki_.ca_cert_pem;
  }
  std::vector<std::string> extra_flags() const override {
    return {"--webhook-client-ca", ca_file_.string()};
  }
  bool api_server_calls_it() const override { return false; }

  http::test::TestPki pki_;
  std::filesystem::path ca_file_;
};

TEST_F(ClientCaWebhookTest, ReviewsWithoutTheClientCertificateAreRefusedAtTls) {
  std::unique_ptr<http::Client> anonymous = webhook_client();
  ASSERT_NE(anonymous, nullptr);
  const Result<http::Response> refused =
      post_review(*anonymous, unique_name("forged"), node_a_, "mallory");
  EXPECT_FALSE(refused.has_value())
      << "answered without a client certificate: " << refused.value().status << " "
      << refused.value().body;

  std::unique_ptr<http::Client> holder = webhook_client(pki_.client_cert_pem, pki_.client_key_pem);
  ASSERT_NE(holder, nullptr);
  ASSERT_OK_AND_ASSIGN(const http::Response answer,
                       post_review(*holder, unique_name("maintenance-a"), node_a_, "admin"));
  EXPECT_EQ(answer.status, 200U) << answer.body;
  EXPECT_TRUE(allowed_in(answer));
  // The missing node is still denied: the rules run behind the certificate check.
  ASSERT_OK_AND_ASSIGN(const http::Response missing,
                       post_review(*holder, unique_name("maintenance-x"), "node-nowhere", "admin"));
  EXPECT_FALSE(allowed_in(missing)) << missing.body;
}

// At start the operator names the server's version and, on an older one, what it lacks and what
// it does instead (docs/operations.md, "Supported Kubernetes versions").
TEST_F(WebhookTest, StartLogsTheServersVersionAndWhatItLacks) {
  const int minor = server_minor(kubectl_);
  EXPECT_TRUE(operator_->wait_for_log(
      "API server controller=manager kubernetes=v1." + std::to_string(minor) + ".", 10s))
      << operator_->log_tail(20);
  if (minor < 28) {
    EXPECT_TRUE(operator_->wait_for_log(
        "the API server lacks matchConditions in admission webhooks controller=manager "
        "since=1.28",
        10s));
  }
  if (minor < 31) {
    EXPECT_TRUE(operator_->wait_for_log(
        "the API server lacks field selectors on custom resources (CRD selectableFields) "
        "controller=manager since=1.31",
        10s));
    EXPECT_TRUE(operator_->wait_for_log(
        "the webhook finds a node's NodeMaintenances in a watched cache instead", 10s));
  } else {
    EXPECT_TRUE(
        operator_->wait_for_log("the API server filters NodeMaintenances by spec.nodeName", 10s));
  }
}

// The CRD replaced by the variant without selectableFields while the operator runs (as applying
// deploy/before-1.31 would): the first review whose field selector the API server refuses switches
// the webhook to its watched cache, and a second maintenance of a node is still denied.
TEST_F(WebhookTest, CrdWithoutSelectableFieldsSwitchesTheLookupToItsCache) {
  const std::string first = unique_name("maintenance-a");
  ASSERT_TRUE(create(first, node_a_).ok());
  struct RestoreCrd {
    const Kubectl& kubectl;
    ~RestoreCrd() {
      (void)kubectl.run({"apply", "-k", (source_dir() / crd_kustomization(kubectl)).string()});
    }
  } restore{kubectl_};
  kubectl_.must({"apply", "-k", (source_dir() / "deploy/before-1.31/crd").string()});
  ASSERT_TRUE(wait_until("the API server to refuse the spec.nodeName field selector", 30s, [&] {
    const ProcessResult r =
        kubectl_.run({"get", "nm", "--field-selector", "spec.nodeName=" + node_a_});
    return r.err.find("field label not supported: spec.nodeName") != std::string::npos;
  }));
  const ProcessResult second = create(unique_name("maintenance-a-again"), node_a_);
  EXPECT_EQ(error_line(second.err),
            std::string("Error from server (Forbidden): error when creating \"STDIN\": ") +
                kDenied + already_held(node_a_, first));
  EXPECT_TRUE(operator_->wait_for_log(
      "the webhook finds a node's NodeMaintenances in a watched cache instead", 10s))
      << operator_->log_tail(20);
  EXPECT_TRUE(create(unique_name("maintenance-b"), node_b_).ok());
}

TEST_F(WebhookTest, MaintenanceBeingDeletedStillBlocksItsNode) {
  const std::string first = unique_name("maintenance-a");
  ASSERT_TRUE(create(first, node_a_).ok());
  hold(first);
  kubectl_.must({"delete", "nm", first, "--wait=false"});
  ASSERT_TRUE(wait_until("the first maintenance to be marked for deletion", 30s, [&] {
    const auto nm = kubectl_.get_json({"nm", first});
    return nm && !string_at(*nm, "/metadata/deletionTimestamp").empty();
  }));
  const ProcessResult second = create(unique_name("maintenance-a-next"), node_a_);
  EXPECT_EQ(error_line(second.err),
            std::string("Error from server (Forbidden): error when creating \"STDIN\": ") +
                kDenied + already_held(node_a_, first));
}

TEST_F(WebhookTest, ChangingTheReasonIsAllowed) {
  const std::string name = unique_name("maintenance-a");
  ASSERT_TRUE(create(name, node_a_).ok());
  const ProcessResult patch = kubectl_.run(
      {"patch", "nm", name, "--type", "merge", "-p", R"({"spec":{"reason":"firmware update"}})"});
  EXPECT_TRUE(patch.ok()) << patch.err;
  const auto nm = kubectl_.get_json({"nm", name});
  ASSERT_TRUE(nm);
  EXPECT_EQ(string_at(*nm, "/spec/reason"), "firmware update");
}

TEST_F(WebhookTest, DeletingWorksAndFinishesEvenWhileTheWebhookIsDown) {
  const std::string kept = unique_name("maintenance-a");
  ASSERT_TRUE(create(kept, node_a_).ok());
  const std::string deleted = unique_name("maintenance-b");
  ASSERT_TRUE(create(deleted, node_b_).ok());
  EXPECT_TRUE(kubectl_.run({"delete", "nm", deleted, "--timeout=60s"}).ok());

  // Nothing listens on the configured port any more: creates fail closed...
  register_webhook("https://127.0.0.1:" + std::to_string(free_port()) + kValidatePath);
  ASSERT_TRUE(wait_until("creates to fail while the webhook is unreachable", 30s, [&] {
    const ProcessResult r = kubectl_.run({"create", "--dry-run=server", "-f", "-"},
                                         manifest(unique_name("probe"), node_b_));
    return r.err.find("failed calling webhook") != std::string::npos;
  }));
  if (server_minor(kubectl_) >= 28) {
    // ... but deletion never needs the webhook (DELETE is not in its rules, and the operator's
    // finalizer update leaves nodeName alone, so matchConditions skip it).
    const ProcessResult removal = kubectl_.run({"delete", "nm", kept, "--timeout=60s"});
    EXPECT_TRUE(removal.ok()) << removal.err;
    EXPECT_THAT(remaining(), ::testing::IsEmpty());
    return;
  }
  // Before 1.28 the API server has no matchConditions, so it calls the webhook for the
  // operator's finalizer update too (docs/operations.md, "Supported Kubernetes versions"): the
  // node is restored at once, the object goes once a replica answers again.
  const auto cordoned = [&] {
    const auto node = kubectl_.get_json({"node", node_a_});
    return node && node->as_object().at("spec").as_object().contains("unschedulable");
  };
  ASSERT_TRUE(wait_until("the node to be cordoned", 60s, cordoned));
  kubectl_.must({"delete", "nm", kept, "--wait=false"});
  ASSERT_TRUE(wait_until("the node to be uncordoned", 60s, [&] { return !cordoned(); }));
  EXPECT_THAT(remaining(), ::testing::Contains(kept));
  register_webhook("https://127.0.0.1:" + std::to_string(port_) + kValidatePath);
  EXPECT_TRUE(wait_until("the maintenance to be gone once the webhook answers", 90s,
                         [&] { return remaining().empty(); }));
}

TEST_F(WebhookTest, TwentySimultaneousCreatesForOneNodeAdmitExactlyOne) {
  constexpr int kCreates = 20;
  std::vector<std::string> names;
  std::vector<std::future<ProcessResult>> results;
  for (int i = 0; i < kCreates; ++i) names.push_back(unique_name("race-" + std::to_string(i)));
  for (const std::string& name : names) {
    results.push_back(
        std::async(std::launch::async, [this, name] { return create(name, node_b_); }));
  }
  std::vector<std::string> admitted;
  std::vector<std::string> denials;
  for (int i = 0; i < kCreates; ++i) {
    const ProcessResult r = results[static_cast<std::size_t>(i)].get();
    if (r.ok()) {
      admitted.push_back(names[static_cast<std::size_t>(i)]);
    } else {
      denials.push_back(error_line(r.err));
    }
  }
  ASSERT_EQ(admitted.size(), 1U) << "admitted: " << ::testing::PrintToString(admitted);
  const std::string expected =
      std::string("Error from server (Forbidden): error when creating \"STDIN\": ") + kDenied +
      already_held(node_b_, admitted.front());
  for (const std::string& denial : denials) EXPECT_EQ(denial, expected);
  EXPECT_EQ(remaining(), admitted);
}

// Without the webhook (these objects lack the label it selects on, as if the configuration were
// removed), simultaneous creates are all stored, and the controller lets only the oldest act.
TEST_F(WebhookTest, WithoutTheWebhookTheControllerLeavesOneActive) {
  constexpr int kCreates = 5;
  std::vector<std::string> names;
  std::vector<std::future<ProcessResult>> results;
  for (int i = 0; i < kCreates; ++i) names.push_back(unique_name("bypass-" + std::to_string(i)));
  const std::string bypass_label = unique_name("bypass");
  for (const std::string& name : names) {
    json::value nm = json::parse(manifest(name, node_b_));
    nm.as_object()["metadata"].as_object()["labels"] = json::object{{kRunLabel, bypass_label}};
    results.push_back(std::async(std::launch::async, [this, doc = json::serialize(nm)] {
      return kubectl_.run({"create", "-f", "-"}, doc);
    }));
  }
  for (auto& result : results) EXPECT_TRUE(result.get().ok());
  // Cleaned up with this run's objects.
  (void)kubectl_.run({"label", "nm", "-l", std::string(kRunLabel) + "=" + bypass_label,
                      std::string(kRunLabel) + "=" + run_, "--overwrite"});

  // The losers' lastError settles last: each names the oldest maintenance the controller knew
  // of when it failed it, and is corrected (at most once a second, docs/design.md §2.4) as the
  // cache fills.
  std::map<std::string, std::pair<std::string, std::string>> seen;  // name -> phase, lastError
  const auto blames = [&](const std::string& winner) {
    return "node \"" + node_b_ + "\" is already under maintenance by NodeMaintenance \"" + winner +
           "\"";
  };
  ASSERT_TRUE(wait_until(
      "exactly one NodeMaintenance not Failed, every other one's lastError naming it", 60s,
      [&] {
        seen.clear();
        std::vector<std::string> active;
        for (const std::string& name : names) {
          const auto nm = kubectl_.get_json({"nm", name});
          if (!nm) return false;
          const std::string phase = phase_of(*nm);
          if (phase.empty()) return false;
          if (phase != "Failed") active.push_back(name);
          seen[name] = {phase, maintenance_of(*nm).status.last_error};
        }
        if (active.size() != 1) return false;
        return std::all_of(seen.begin(), seen.end(), [&](const auto& entry) {
          return entry.first == active.front() || entry.second.second == blames(active.front());
        });
      },
      [&] {
        std::string text;
        for (const auto& [name, state] : seen) {
          text += name + "=" + state.first + " (" + state.second + ") ";
        }
        return text;
      }));
}

}  // namespace
}  // namespace nmo::e2e
