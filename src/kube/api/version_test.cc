#include "kube/api/version.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

TEST(DecodeServerVersionTest, PlainKubernetes) {
  ASSERT_OK_AND_ASSIGN(const ServerVersion version, decode_server_version(boost::json::parse(R"({
    "major": "1", "minor": "27", "gitVersion": "v1.27.16", "gitCommit": "cbb86e0d",
    "gitTreeState": "clean", "buildDate": "2024-07-17T01:44:26Z", "goVersion": "go1.22.5",
    "compiler": "gc", "platform": "linux/amd64"})")));
  EXPECT_EQ(version, (ServerVersion{.major = 1, .minor = 27, .git_version = "v1.27.16"}));
  EXPECT_EQ(version.minor_version(), "1.27");
}

TEST(DecodeServerVersionTest, DistributionsDecorateTheMinor) {
  ASSERT_OK_AND_ASSIGN(const ServerVersion eks, decode_server_version(boost::json::parse(
                                                    R"({"major": "1", "minor": "30+",
                                                        "gitVersion": "v1.30.4-eks-a737599"})")));
  EXPECT_EQ(eks.minor, 30);
  ASSERT_OK_AND_ASSIGN(const ServerVersion openshift,
                       decode_server_version(boost::json::parse(
                           R"({"major": "", "minor": "", "gitVersion": "v1.27.16+03a907c"})")));
  EXPECT_EQ(openshift.major, 1);
  EXPECT_EQ(openshift.minor, 27);
}

TEST(DecodeServerVersionTest, Errors) {
  const Result<ServerVersion> devel = decode_server_version(
      boost::json::parse(R"({"major": "", "minor": "", "gitVersion": "devel"})"));
  ASSERT_FALSE(devel.has_value());
  EXPECT_EQ(devel.error().message,
            R"(no Kubernetes version in major "", minor "", gitVersion "devel")");
  const Result<ServerVersion> typed =
      decode_server_version(boost::json::parse(R"({"major": "1", "minor": 27})"));
  ASSERT_FALSE(typed.has_value());
  EXPECT_EQ(typed.error().message, "minor: expected a string, got number");
  const Result<ServerVersion> list = decode_server_version(boost::json::parse("[]"));
  ASSERT_FALSE(list.has_value());
  EXPECT_EQ(list.error().message, "expected an object, got array");
}

TEST(ServerVersionTest, AtLeast) {
  const ServerVersion v127{.major = 1, .minor = 27};
  EXPECT_TRUE(v127.at_least(1, 27));
  EXPECT_TRUE(v127.at_least(1, 20));
  EXPECT_FALSE(v127.at_least(1, 31));
  EXPECT_FALSE(v127.at_least(2, 0));
  EXPECT_TRUE((ServerVersion{.major = 2, .minor = 0}).at_least(1, 40));
}

}  // namespace
}  // namespace nmo::kube
