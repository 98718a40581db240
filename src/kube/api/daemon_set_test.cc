#include "kube/api/daemon_set.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

TEST(DecodeDaemonSetTest, MetadataOnly) {
  ASSERT_OK_AND_ASSIGN(const DaemonSet ds, decode_daemon_set(boost::json::parse(R"json({
    "apiVersion": "apps/v1", "kind": "DaemonSet",
    "metadata": {"generation": 1, "labels": {"k8s-app": "kube-proxy"}, "name": "kube-proxy",
                 "namespace": "kube-system", "uid": "d5e6f7a8-b9c0-4d1e-8f2a-3b4c5d6e7f80"},
    "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
             "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                          "spec": {"containers": [{"name": "kube-proxy"}]}}},
    "status": {"currentNumberScheduled": 8, "desiredNumberScheduled": 8, "numberReady": 8}})json")));
  EXPECT_EQ(ds.meta.name, "kube-proxy");
  EXPECT_EQ(ds.meta.namespace_, "kube-system");
  EXPECT_EQ(ds.meta.uid, "d5e6f7a8-b9c0-4d1e-8f2a-3b4c5d6e7f80");
}

TEST(DecodeDaemonSetTest, WrongKind) {
  const Result<DaemonSet> ds = decode_daemon_set(boost::json::parse(R"({"kind": "ReplicaSet"})"));
  ASSERT_FALSE(ds.has_value());
  EXPECT_EQ(ds.error().message, R"(expected kind "DaemonSet", got "ReplicaSet")");
}

TEST(DaemonSetResourceTest, Paths) {
  static_assert(Resource<DaemonSet>);
  EXPECT_EQ(api_version<DaemonSet>(), "apps/v1");
  EXPECT_EQ(object_path<DaemonSet>("kube-system", "kube-proxy"),
            "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy");
}

}  // namespace
}  // namespace nmo::kube
