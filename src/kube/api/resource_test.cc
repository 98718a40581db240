#include "kube/api/resource.h"

#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include "kube/api/node.h"
#include "kube/api/pod.h"

namespace nmo::kube {
namespace {

static_assert(!Resource<int>, "a type without a ResourceInfo specialisation is not a Resource");

TEST(ResourcePathTest, CoreAndNamedGroups) {
  EXPECT_EQ(internal::api_root("", "v1"), "/api/v1");
  EXPECT_EQ(internal::api_root("apps", "v1"), "/apis/apps/v1");
  EXPECT_EQ(internal::resource_path("", "v1", "pods", true, "", ""), "/api/v1/pods");
  EXPECT_EQ(internal::resource_path("", "v1", "pods", true, "ns", "p"),
            "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(internal::resource_path("events.k8s.io", "v1", "events", true, "ns", ""),
            "/apis/events.k8s.io/v1/namespaces/ns/events");
}

TEST(ResourcePathTest, PathsOfAResource) {
  EXPECT_EQ(api_root_path<Node>(), "/api/v1");
  EXPECT_EQ(collection_path<Node>(), "/api/v1/nodes");
  EXPECT_EQ(object_path<Pod>("shop", "web-0"), "/api/v1/namespaces/shop/pods/web-0");
}

TEST(ResourcePathDeathTest, NamespaceForClusterScopedKindIsABug) {
  EXPECT_DEATH((void)collection_path<Node>("default"),
               "a namespace was given for the cluster-scoped resource nodes");
}

TEST(ResourceInfoTest, DecodeGoesThroughTheProjection) {
  const Result<Pod> pod = ResourceInfo<Pod>::decode(boost::json::value(nullptr));
  ASSERT_FALSE(pod.has_value());
  EXPECT_EQ(pod.error().message, "expected an object, got null");
}

}  // namespace
}  // namespace nmo::kube
