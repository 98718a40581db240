#include "runtime/finalizer.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace nmo::runtime {
namespace {

constexpr const char* kOurs = "example.com/cleanup";

kube::ObjectMeta meta_with(std::vector<std::string> finalizers) {
  kube::ObjectMeta meta;
  meta.name = "x";
  meta.resource_version = "42";
  meta.finalizers = std::move(finalizers);
  return meta;
}

TEST(FinalizerTest, AddTestsTheVersionReadAndCreatesTheListWhenThereIsNone) {
  EXPECT_EQ(add_finalizer_patch(meta_with({}), kOurs), boost::json::parse(R"([
    {"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
    {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/cleanup"]}])")
                                                           .as_array());
  EXPECT_EQ(add_finalizer_patch(meta_with({"other"}), kOurs), boost::json::parse(R"([
    {"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
    {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/cleanup"}])")
                                                                  .as_array());
  EXPECT_EQ(add_finalizer_patch(meta_with({kOurs}), kOurs), std::nullopt);
}

TEST(FinalizerTest, RemoveTestsThatTheEntryIsStillOurs) {
  EXPECT_EQ(remove_finalizer_patch(meta_with({"other", kOurs}), kOurs), boost::json::parse(R"([
    {"op": "test", "path": "/metadata/finalizers/1", "value": "example.com/cleanup"},
    {"op": "remove", "path": "/metadata/finalizers/1"}])")
                                                                            .as_array());
  EXPECT_EQ(remove_finalizer_patch(meta_with({"other"}), kOurs), std::nullopt);
  EXPECT_TRUE(has_finalizer(meta_with({"other", kOurs}), kOurs));
  EXPECT_FALSE(has_finalizer(meta_with({"other"}), kOurs));
}

}  // namespace
}  // namespace nmo::runtime
