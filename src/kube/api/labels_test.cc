#include "kube/api/labels.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace nmo::kube {
namespace {

std::vector<Labels::Entry> entries_of(const Labels& labels) {
  return {labels.begin(), labels.end()};
}

TEST(LabelsTest, EmptyByDefault) {
  const Labels labels;
  EXPECT_TRUE(labels.empty());
  EXPECT_EQ(labels.size(), 0U);
  EXPECT_EQ(labels.find("app"), nullptr);
  EXPECT_FALSE(labels.contains("app"));
}

TEST(LabelsTest, SortsByKeyAndFinds) {
  const Labels labels{{"tier", "db"}, {"app", "web"}, {"app.kubernetes.io/name", "cart"}};
  EXPECT_EQ(entries_of(labels),
            (std::vector<Labels::Entry>{
                {"app", "web"}, {"app.kubernetes.io/name", "cart"}, {"tier", "db"}}));
  ASSERT_NE(labels.find("tier"), nullptr);
  EXPECT_EQ(*labels.find("tier"), "db");
  EXPECT_EQ(*labels.find("app"), "web");
  EXPECT_EQ(labels.find("ap"), nullptr);
  EXPECT_EQ(labels.find("zzz"), nullptr);
  EXPECT_TRUE(labels.contains("app.kubernetes.io/name"));
}

TEST(LabelsTest, EmptyValueIsPresent) {
  const Labels labels{{"node-role.kubernetes.io/control-plane", ""}};
  ASSERT_NE(labels.find("node-role.kubernetes.io/control-plane"), nullptr);
  EXPECT_EQ(*labels.find("node-role.kubernetes.io/control-plane"), "");
}

TEST(LabelsTest, LaterDuplicateWins) {
  const Labels labels{{"b", "1"}, {"a", "x"}, {"b", "2"}, {"a", "y"}, {"c", "3"}};
  EXPECT_EQ(entries_of(labels), (std::vector<Labels::Entry>{{"a", "y"}, {"b", "2"}, {"c", "3"}}));
}

TEST(LabelsTest, SetInsertsInOrderAndReplaces) {
  Labels labels{{"b", "1"}};
  labels.set("c", "3");
  labels.set("a", "0");
  labels.set("b", "2");
  EXPECT_EQ(entries_of(labels), (std::vector<Labels::Entry>{{"a", "0"}, {"b", "2"}, {"c", "3"}}));
}

TEST(LabelsTest, Equality) {
  EXPECT_EQ((Labels{{"a", "1"}, {"b", "2"}}), (Labels{{"b", "2"}, {"a", "1"}}));
  EXPECT_NE((Labels{{"a", "1"}}), (Labels{{"a", "2"}}));
}

}  // namespace
}  // namespace nmo::kube
