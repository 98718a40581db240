#include "kube/config/in_cluster.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "kube/config/testing/scoped_env.h"
#include "kube/config/testing/temp_dir.h"

namespace nmo::kube {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

// A service-account mount: token, ca.crt and, optionally, namespace.
void write_mount(const TempDir& dir, const std::optional<std::string>& ns) {
  dir.write("token", "sa-token\n");
  dir.write("ca.crt", "CLUSTER CA");
  if (ns.has_value()) {
    dir.write("namespace", *ns);
  }
}

void expect_error(const Result<RestConfig>& rest, ErrorCode code, const std::string& message) {
  ASSERT_FALSE(rest.has_value());
  EXPECT_EQ(rest.error().code, code);
  EXPECT_EQ(rest.error().message, message);
}

TEST(LoadInClusterTest, ReadsTheServiceAccountMount) {
  const TempDir dir;
  write_mount(dir, "node-maintenance\n");
  const ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  const ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, load_in_cluster({.dir = dir.path()}));
  EXPECT_EQ(rest.server, "https://10.96.0.1:443");
  EXPECT_EQ(rest.scheme, "https");
  EXPECT_EQ(rest.host, "10.96.0.1");
  EXPECT_EQ(rest.port, "443");
  EXPECT_EQ(rest.path_prefix, "");
  EXPECT_EQ(rest.ca_pem, "CLUSTER CA");
  EXPECT_FALSE(rest.insecure_skip_tls_verify);
  EXPECT_EQ(rest.default_namespace, "node-maintenance");
  EXPECT_EQ(rest.origin, "in-cluster service account");
  ASSERT_NE(rest.token, nullptr);
  ASSERT_OK_AND_ASSIGN(const std::string token, rest.token->token());
  EXPECT_EQ(token, "sa-token");
}

TEST(LoadInClusterTest, OptionsOverrideTheEnvironmentAndIpv6IsBracketed) {
  const TempDir dir;
  write_mount(dir, std::nullopt);
  const ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  const ScopedEnv port("KUBERNETES_SERVICE_PORT", std::nullopt);
  ASSERT_OK_AND_ASSIGN(
      const RestConfig rest,
      load_in_cluster({.dir = dir.path(), .host = "fd00:10:96::1", .port = "6443"}));
  EXPECT_EQ(rest.server, "https://[fd00:10:96::1]:6443");
  EXPECT_EQ(rest.host, "fd00:10:96::1");
  EXPECT_EQ(rest.default_namespace, "default");  // no namespace file
}

TEST(LoadInClusterTest, EmptyNamespaceFileMeansDefault) {
  const TempDir dir;
  write_mount(dir, " \n");
  ASSERT_OK_AND_ASSIGN(const RestConfig rest,
                       load_in_cluster({.dir = dir.path(), .host = "h", .port = "1"}));
  EXPECT_EQ(rest.default_namespace, "default");
}

TEST(LoadInClusterTest, MissingEnvironment) {
  const TempDir dir;
  write_mount(dir, std::nullopt);
  const ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  const ScopedEnv port("KUBERNETES_SERVICE_PORT", std::nullopt);
  expect_error(load_in_cluster({.dir = dir.path()}), ErrorCode::kNotFound,
               "in-cluster config: KUBERNETES_SERVICE_HOST is not set");
  expect_error(load_in_cluster({.dir = dir.path(), .host = "h"}), ErrorCode::kNotFound,
               "in-cluster config: KUBERNETES_SERVICE_PORT is not set");
  expect_error(load_in_cluster({.dir = dir.path(), .host = "h", .port = "https"}),
               ErrorCode::kInvalid,
               R"(in-cluster config: KUBERNETES_SERVICE_PORT "https" is not a port number)");
}

TEST(LoadInClusterTest, MissingFiles) {
  const TempDir dir;
  expect_error(
      load_in_cluster({.dir = dir.path(), .host = "h", .port = "443"}), ErrorCode::kNotFound,
      "in-cluster config: cannot read " + dir.file("token") + ": No such file or directory");
  dir.write("token", "t");
  expect_error(
      load_in_cluster({.dir = dir.path(), .host = "h", .port = "443"}), ErrorCode::kNotFound,
      "in-cluster config: cannot read " + dir.file("ca.crt") + ": No such file or directory");
}

}  // namespace
}  // namespace nmo::kube
