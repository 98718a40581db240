#include "kube/api/namespace.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

TEST(DecodeNamespaceTest, TerminatingNamespace) {
  ASSERT_OK_AND_ASSIGN(const Namespace ns, decode_namespace(boost::json::parse(R"json({
    "apiVersion": "v1", "kind": "Namespace",
    "metadata": {"creationTimestamp": "2026-11-30T08:00:00Z",
                 "deletionTimestamp": "2026-11-30T10:00:00Z",
                 "labels": {"kubernetes.io/metadata.name": "shop"}, "name": "shop",
                 "resourceVersion": "8812", "uid": "0a1b2c3d-4e5f-4061-8273-8495a6b7c8d9"},
    "spec": {"finalizers": ["kubernetes"]},
    "status": {"conditions": [{"type": "NamespaceContentRemaining", "status": "True"}],
               "phase": "Terminating"}})json")));
  EXPECT_EQ(ns.meta.name, "shop");
  EXPECT_TRUE(ns.meta.deletion_timestamp.has_value());
  EXPECT_EQ(ns.phase, "Terminating");
}

TEST(DecodeNamespaceTest, Errors) {
  const Result<Namespace> ns = decode_namespace(boost::json::parse(R"({"status": {"phase": 1}})"));
  ASSERT_FALSE(ns.has_value());
  EXPECT_EQ(ns.error().message, "status.phase: expected a string, got number");
}

TEST(NamespaceResourceTest, Paths) {
  static_assert(Resource<Namespace>);
  EXPECT_EQ(object_path<Namespace>("", "shop"), "/api/v1/namespaces/shop");
}

}  // namespace
}  // namespace nmo::kube
