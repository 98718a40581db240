#include "cli/jsonpath.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace nmo::cli {
namespace {

const boost::json::value kList = boost::json::parse(R"({
  "kind": "NodeMaintenanceList",
  "items": [
    {"metadata": {"name": "m1", "labels": {"app.kubernetes.io/name": "x"}},
     "spec": {"nodeName": "node-1"}, "status": {"phase": "Running", "drainProgress": 50}},
    {"metadata": {"name": "m2"}, "spec": {"nodeName": "node-2"},
     "status": {"phase": "Succeeded", "drainProgress": 100}},
    {"metadata": {"name": "m3"}, "spec": {"nodeName": "node-3"}}
  ]})");

std::string render(std::string_view text) {
  auto path = JsonPath::parse(text);
  if (!path) return "<" + path.error().message + ">";
  return path->render(kList);
}

TEST(JsonPathTest, FieldsIndexesSlicesAndWildcards) {
  EXPECT_EQ(render("{.kind}"), "NodeMaintenanceList");
  EXPECT_EQ(render("kind={.kind}!"), "kind=NodeMaintenanceList!");
  EXPECT_EQ(render("{.items[0].metadata.name}"), "m1");
  EXPECT_EQ(render("{.items[-1].metadata.name}"), "m3");
  EXPECT_EQ(render("{.items[1:].metadata.name}"), "m2 m3");
  EXPECT_EQ(render("{.items[*].spec.nodeName}"), "node-1 node-2 node-3");
  EXPECT_EQ(render("{.items[*]['metadata']['name']}"), "m1 m2 m3");
  EXPECT_EQ(render(R"({.items[0].metadata.labels.app\.kubernetes\.io/name})"), "x");
  EXPECT_EQ(render("{.items[0].status}"), R"({"phase":"Running","drainProgress":50})");
  EXPECT_EQ(render("{$.items[1].status.drainProgress}"), "100");
}

TEST(JsonPathTest, MissingFieldsPrintNothing) {
  EXPECT_EQ(render("[{.items[2].status.phase}]"), "[]");
  EXPECT_EQ(render("{.items[7].metadata.name}"), "");
}

TEST(JsonPathTest, FiltersAndRanges) {
  EXPECT_EQ(render(R"({.items[?(@.spec.nodeName=="node-2")].metadata.name})"), "m2");
  EXPECT_EQ(render(R"({.items[?(@.status.drainProgress==50)].metadata.name})"), "m1");
  EXPECT_EQ(render(R"({.items[?(@.status.phase!='Running')].metadata.name})"), "m2 m3");
  EXPECT_EQ(render("{.items[?(@.status)].metadata.name}"), "m1 m2");
  EXPECT_EQ(render(R"({range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end})"),
            "m1\tRunning\nm2\tSucceeded\nm3\t\n");
}

TEST(JsonPathTest, BadTemplatesSayWhy) {
  EXPECT_EQ(render("{.items"), "<unclosed action at byte 0>");
  EXPECT_EQ(render("a}"), R"(<unexpected "}" outside an action>)");
  EXPECT_EQ(render("{end}"), "<{end} without {range}>");
  EXPECT_EQ(render("{range .items[*]}x"), "<{range} without {end}>");
  EXPECT_EQ(render("{..name}"), "<{..name}: recursive descent (..) is not supported>");
  EXPECT_EQ(render("{.items[x]}"), "<{.items[x]}: [x]: not an index>");
}

}  // namespace
}  // namespace nmo::cli
