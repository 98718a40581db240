#include "kube/config/load_rest_config.h"

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

// A kubeconfig whose only cluster is at https://<host>:6443.
std::string kubeconfig_for(const std::string& host) {
  return "clusters: [{name: c, cluster: {server: \"https://" + host +
         ":6443\"}}]\ncontexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n";
}

// Sets up HOME, KUBECONFIG and the in-cluster variable for one case; restores them afterwards.
class LoadRestConfigTest : public ::testing::Test {
 protected:
  LoadRestConfigTest() {
    dir_.write("home/.kube/config", kubeconfig_for("home"));
    dir_.write("env-config", kubeconfig_for("env"));
    flag_path_ = dir_.write("flag-config", kubeconfig_for("flag"));
  }

  TempDir dir_;
  std::string flag_path_;
  ScopedEnv home_{"HOME", dir_.file("home")};
};

TEST_F(LoadRestConfigTest, ExplicitPathComesFirst) {
  const ScopedEnv kubeconfig("KUBECONFIG", dir_.file("env-config"));
  const ScopedEnv service("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, load_rest_config({.path = flag_path_}));
  EXPECT_EQ(rest.host, "flag");
}

TEST_F(LoadRestConfigTest, KubeconfigEnvComesBeforeInCluster) {
  const ScopedEnv kubeconfig("KUBECONFIG", dir_.file("env-config"));
  const ScopedEnv service("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, load_rest_config({}));
  EXPECT_EQ(rest.host, "env");
}

TEST_F(LoadRestConfigTest, InClusterWhenServiceHostIsSet) {
  dir_.write("sa/token", "sa-token");
  dir_.write("sa/ca.crt", "CA");
  const ScopedEnv kubeconfig("KUBECONFIG", std::nullopt);
  const ScopedEnv service("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  const ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, load_rest_config({}, {.dir = dir_.file("sa")}));
  EXPECT_EQ(rest.host, "10.96.0.1");
  EXPECT_EQ(rest.origin, "in-cluster service account");
}

TEST_F(LoadRestConfigTest, InClusterErrorsAreNotHiddenByAFallback) {
  const ScopedEnv kubeconfig("KUBECONFIG", std::nullopt);
  const ScopedEnv service("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  const ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  const Result<RestConfig> rest = load_rest_config({}, {.dir = dir_.file("no-mount")});
  ASSERT_FALSE(rest.has_value());
  EXPECT_EQ(rest.error().message, "in-cluster config: cannot read " + dir_.file("no-mount/token") +
                                      ": No such file or directory");
}

TEST_F(LoadRestConfigTest, HomeConfigLast) {
  const ScopedEnv kubeconfig("KUBECONFIG", std::nullopt);
  const ScopedEnv service("KUBERNETES_SERVICE_HOST", std::nullopt);
  ASSERT_OK_AND_ASSIGN(const RestConfig rest, load_rest_config({}));
  EXPECT_EQ(rest.host, "home");
}

}  // namespace
}  // namespace nmo::kube
