#include "kube/client/request_options.h"

#include <gtest/gtest.h>

namespace nmo::kube {
namespace {

TEST(RequestOptionsTest, QueryEscapeKeepsUnreservedAndEncodesTheRest) {
  EXPECT_EQ(query_escape("spec.nodeName=node-worker-01"), "spec.nodeName%3Dnode-worker-01");
  EXPECT_EQ(query_escape("tier in (a,b)"), "tier%20in%20%28a%2Cb%29");
  EXPECT_EQ(query_escape("a_b~c"), "a_b~c");
}

TEST(RequestOptionsTest, ListQueryCarriesPagingAndSelectors) {
  ListOptions options;
  options.limit = 2;
  options.continue_token = "abc=";
  options.label_selector = "app=web";
  options.field_selector = "spec.nodeName=n1";
  EXPECT_EQ(options.query(),
            "?limit=2&continue=abc%3D&labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1");
  EXPECT_EQ(ListOptions{.limit = 0}.query(), "");
}

TEST(RequestOptionsTest, WatchQueryStartsFromTheVersion) {
  WatchOptions options;
  options.resource_version = "123";
  options.field_selector = "metadata.name=n1";
  EXPECT_EQ(options.query(),
            "?watch=true&resourceVersion=123&allowWatchBookmarks=true&timeoutSeconds=290"
            "&fieldSelector=metadata.name%3Dn1");
}

TEST(RequestOptionsTest, DeleteOptionsBodyHasPreconditions) {
  DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = "u-1";
  EXPECT_EQ(options.body(), R"({"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":0,)"
                            R"("preconditions":{"uid":"u-1"}})");
  EXPECT_EQ(DeleteOptions{}.body(), R"({"apiVersion":"v1","kind":"DeleteOptions"})");
}

TEST(RequestOptionsTest, PatchContentTypes) {
  EXPECT_EQ(content_type(PatchType::kJsonPatch), "application/json-patch+json");
  EXPECT_EQ(content_type(PatchType::kMergePatch), "application/merge-patch+json");
  EXPECT_EQ(content_type(PatchType::kStrategicMerge), "application/strategic-merge-patch+json");
  EXPECT_EQ(content_type(PatchType::kApply), "application/apply-patch+yaml");
}

TEST(RequestOptionsTest, WriteQuery) {
  EXPECT_EQ((WriteOptions{.field_manager = "nmo", .force = true, .dry_run = true}.query()),
            "?fieldManager=nmo&force=true&dryRun=All");
  EXPECT_EQ(WriteOptions{}.query(), "");
}

}  // namespace
}  // namespace nmo::kube
