#include "runtime/own_writes.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kube/api/lease.h"

namespace nmo::runtime {
namespace {

kube::Lease lease(const std::string& name, const std::string& version, const std::string& holder) {
  kube::Lease out;
  out.meta.namespace_ = "ns";
  out.meta.name = name;
  out.meta.resource_version = version;
  out.holder_identity = holder;
  return out;
}

std::shared_ptr<const kube::Lease> cached(const std::string& version, const std::string& holder) {
  return std::make_shared<const kube::Lease>(lease("a", version, holder));
}

TEST(OwnWritesTest, OurWriteIsReadUntilTheCacheShowsAnotherVersion) {
  OwnWrites<kube::Lease> own;
  own.wrote(lease("a", "11", "us"), "10");
  // The cache still shows the version we replaced: ours.
  EXPECT_EQ(own.fresher("ns/a", cached("10", "before"))->holder_identity, "us");
  // Our write arrived: the cache's, and the memory is gone.
  EXPECT_EQ(own.fresher("ns/a", cached("11", "us"))->meta.resource_version, "11");
  EXPECT_EQ(own.size(), 0u);
  // Even the old version is the cache's now.
  EXPECT_EQ(own.fresher("ns/a", cached("10", "before"))->holder_identity, "before");
}

TEST(OwnWritesTest, SomeoneElsesLaterWriteWinsOverOurs) {
  OwnWrites<kube::Lease> own;
  own.wrote(lease("a", "11", "us"), "10");
  EXPECT_EQ(own.fresher("ns/a", cached("12", "them"))->holder_identity, "them");
  EXPECT_EQ(own.size(), 0u);
}

TEST(OwnWritesTest, AChainOfOurWritesStaysOursWhileTheCacheShowsAnyVersionBeforeIt) {
  OwnWrites<kube::Lease> own;
  own.wrote(lease("a", "11", "us-1"), "10");
  own.wrote(lease("a", "12", "us-2"), "11");
  EXPECT_EQ(own.fresher("ns/a", cached("10", "before"))->holder_identity, "us-2");
  EXPECT_EQ(own.fresher("ns/a", cached("11", "us-1"))->holder_identity, "us-2");
  EXPECT_EQ(own.fresher("ns/a", cached("12", "us-2"))->meta.resource_version, "12");
  EXPECT_EQ(own.size(), 0u);
}

TEST(OwnWritesTest, AWriteThatDidNotFollowOursStartsAFreshChain) {
  OwnWrites<kube::Lease> own;
  own.wrote(lease("a", "11", "us-1"), "10");
  // Based on a version someone else wrote after ours.
  own.wrote(lease("a", "14", "us-2"), "13");
  EXPECT_EQ(own.fresher("ns/a", cached("10", "before"))->holder_identity, "before");
}

TEST(OwnWritesTest, ACreateIsSeenBeforeTheCacheHasItAndAStoreGetsIt) {
  OwnWrites<kube::Lease> own;
  own.wrote(lease("a", "5", "us"), "");
  EXPECT_EQ(own.fresher("ns/a", nullptr)->holder_identity, "us");
  const std::vector<std::shared_ptr<const kube::Lease>> store{
      std::make_shared<const kube::Lease>(lease("b", "3", "other"))};
  const auto all = own.fresher(store);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->meta.name, "b");
  EXPECT_EQ(all[1]->meta.name, "a");
  // Once the cache lists it, it is the cache's.
  const auto later = own.fresher({cached("5", "us"), store[0]});
  EXPECT_EQ(later.size(), 2u);
  EXPECT_EQ(own.size(), 0u);
}

TEST(OwnWritesTest, AnObjectWeWroteThatLeftTheCacheIsForgotten) {
  OwnWrites<kube::Lease> own;
  own.wrote(lease("a", "11", "us"), "10");
  EXPECT_TRUE(own.fresher(std::vector<std::shared_ptr<const kube::Lease>>{}).empty());
  EXPECT_EQ(own.size(), 0u);
  own.wrote(lease("a", "12", "us"), "");
  own.forget("ns/a");
  EXPECT_EQ(own.fresher("ns/a", nullptr), nullptr);
}

}  // namespace
}  // namespace nmo::runtime
