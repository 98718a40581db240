#include "kube/api/label_selector.h"

#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

using Req = LabelSelectorRequirement;

std::string parse_error(std::string_view text) {
  const Result<LabelSelector> selector = parse_selector(text);
  if (selector.has_value()) {
    return "parsed";
  }
  EXPECT_EQ(selector.error().code, ErrorCode::kInvalid);
  return selector.error().message;
}

std::string decode_error(const char* json) {
  const Result<LabelSelector> selector = decode_label_selector(boost::json::parse(json));
  if (selector.has_value()) {
    return "decoded";
  }
  EXPECT_EQ(selector.error().code, ErrorCode::kInvalid);
  return selector.error().message;
}

TEST(LabelSelectorTest, EmptyMatchesEverything) {
  const LabelSelector selector;
  EXPECT_TRUE(selector.empty());
  EXPECT_TRUE(selector.matches(Labels{}));
  EXPECT_TRUE(selector.matches(Labels{{"app", "web"}}));
  EXPECT_EQ(selector.to_query(), "");
}

TEST(LabelSelectorTest, MatchLabelsNeedEveryPair) {
  const LabelSelector selector{.match_labels = Labels{{"app", "web"}, {"tier", "front"}}};
  EXPECT_FALSE(selector.empty());
  EXPECT_TRUE(selector.matches(Labels{{"app", "web"}, {"tier", "front"}, {"x", "y"}}));
  EXPECT_FALSE(selector.matches(Labels{{"app", "web"}}));
  EXPECT_FALSE(selector.matches(Labels{{"app", "web"}, {"tier", "back"}}));
}

TEST(LabelSelectorTest, OperatorSemantics) {
  const Req in{"tier", SelectorOperator::kIn, {"a", "b"}};
  EXPECT_TRUE(in.matches(Labels{{"tier", "b"}}));
  EXPECT_FALSE(in.matches(Labels{{"tier", "c"}}));
  EXPECT_FALSE(in.matches(Labels{}));

  const Req not_in{"tier", SelectorOperator::kNotIn, {"a", "b"}};
  EXPECT_FALSE(not_in.matches(Labels{{"tier", "a"}}));
  EXPECT_TRUE(not_in.matches(Labels{{"tier", "c"}}));
  EXPECT_TRUE(not_in.matches(Labels{}));  // an absent label is "not in" any set

  const Req exists{"gpu", SelectorOperator::kExists, {}};
  EXPECT_TRUE(exists.matches(Labels{{"gpu", ""}}));
  EXPECT_FALSE(exists.matches(Labels{{"cpu", ""}}));

  const Req absent{"gpu", SelectorOperator::kDoesNotExist, {}};
  EXPECT_FALSE(absent.matches(Labels{{"gpu", "nvidia"}}));
  EXPECT_TRUE(absent.matches(Labels{}));
}

TEST(LabelSelectorTest, ToQuery) {
  const LabelSelector selector{.match_labels = Labels{{"app", "web"}},
                               .match_expressions = {{"tier", SelectorOperator::kIn, {"a", "b"}},
                                                     {"x", SelectorOperator::kDoesNotExist, {}},
                                                     {"env", SelectorOperator::kNotIn, {"dev"}},
                                                     {"gpu", SelectorOperator::kExists, {}}}};
  EXPECT_EQ(selector.to_query(), "app=web,tier in (a,b),!x,env notin (dev),gpu");
  const LabelSelector absent{.match_expressions = {{"x", SelectorOperator::kDoesNotExist, {}}}};
  EXPECT_EQ(absent.to_query(), "!x");
}

TEST(ParseSelectorTest, AllForms) {
  ASSERT_OK_AND_ASSIGN(
      const LabelSelector selector,
      parse_selector("app=web, env==prod,tier in (a, b),stage notin (x),gpu,!spot,zone!=z1"));
  EXPECT_EQ(selector.match_labels, (Labels{{"app", "web"}, {"env", "prod"}}));
  EXPECT_EQ(selector.match_expressions,
            (std::vector<Req>{{"tier", SelectorOperator::kIn, {"a", "b"}},
                              {"stage", SelectorOperator::kNotIn, {"x"}},
                              {"gpu", SelectorOperator::kExists, {}},
                              {"spot", SelectorOperator::kDoesNotExist, {}},
                              {"zone", SelectorOperator::kNotIn, {"z1"}}}));
  EXPECT_TRUE(selector.matches(
      Labels{{"app", "web"}, {"env", "prod"}, {"tier", "a"}, {"gpu", "1"}, {"zone", "z2"}}));
  EXPECT_FALSE(selector.matches(
      Labels{{"app", "web"}, {"env", "prod"}, {"tier", "a"}, {"gpu", "1"}, {"zone", "z1"}}));
}

TEST(ParseSelectorTest, BriefExampleRoundTrips) {
  ASSERT_OK_AND_ASSIGN(const LabelSelector selector, parse_selector("app=web,tier in (a,b),!x"));
  EXPECT_EQ(selector.to_query(), "app=web,tier in (a,b),!x");
}

TEST(ParseSelectorTest, EmptyAndWhitespace) {
  ASSERT_OK_AND_ASSIGN(const LabelSelector empty, parse_selector(""));
  EXPECT_TRUE(empty.empty());
  ASSERT_OK_AND_ASSIGN(const LabelSelector spaces, parse_selector("   "));
  EXPECT_TRUE(spaces.empty());
}

TEST(ParseSelectorTest, QualifiedKeysAndEmptyValues) {
  ASSERT_OK_AND_ASSIGN(const LabelSelector selector,
                       parse_selector("node-role.kubernetes.io/control-plane=,app.kubernetes.io/"
                                      "name in (cart,),!example.com/spot"));
  EXPECT_EQ(selector.match_labels, (Labels{{"node-role.kubernetes.io/control-plane", ""}}));
  EXPECT_EQ(selector.match_expressions,
            (std::vector<Req>{{"app.kubernetes.io/name", SelectorOperator::kIn, {"cart", ""}},
                              {"example.com/spot", SelectorOperator::kDoesNotExist, {}}}));
  EXPECT_TRUE(selector.matches(
      Labels{{"node-role.kubernetes.io/control-plane", ""}, {"app.kubernetes.io/name", ""}}));
}

TEST(ParseSelectorTest, ConflictingEqualitiesMatchNothing) {
  ASSERT_OK_AND_ASSIGN(const LabelSelector selector, parse_selector("a=b,a=c,a=b"));
  EXPECT_EQ(selector.match_labels, (Labels{{"a", "b"}}));
  EXPECT_EQ(selector.match_expressions, (std::vector<Req>{{"a", SelectorOperator::kIn, {"c"}}}));
  EXPECT_FALSE(selector.matches(Labels{{"a", "b"}}));
  EXPECT_FALSE(selector.matches(Labels{{"a", "c"}}));
  ASSERT_OK_AND_ASSIGN(const LabelSelector again, parse_selector(selector.to_query()));
  EXPECT_EQ(again, selector);
}

TEST(ParseSelectorTest, Errors) {
  EXPECT_EQ(parse_error("a in (b"),
            R"(invalid label selector "a in (b": expected ',' or ')' at offset 7)");
  EXPECT_EQ(parse_error("a,"), R"(invalid label selector "a,": expected a label key at offset 2)");
  EXPECT_EQ(parse_error(",a"), R"(invalid label selector ",a": expected a label key at offset 0)");
  EXPECT_EQ(
      parse_error("a b"),
      R"(invalid label selector "a b": expected '=', '==', '!=', 'in', 'notin', ',' or the end at offset 2)");
  EXPECT_EQ(parse_error("a in b"), R"(invalid label selector "a in b": expected '(' at offset 5)");
  EXPECT_EQ(
      parse_error("a>1"),
      R"(invalid label selector "a>1": expected '=', '==', '!=', 'in', 'notin', ',' or the end at offset 1)");
  EXPECT_EQ(parse_error("-a=b"),
            R"(invalid label selector "-a=b": invalid label key "-a" at offset 0)");
  EXPECT_EQ(
      parse_error("Example.com/a=b"),
      R"(invalid label selector "Example.com/a=b": invalid label key "Example.com/a" at offset 0)");
  EXPECT_EQ(parse_error("a=b-"),
            R"(invalid label selector "a=b-": invalid label value "b-" for key "a" at offset 2)");
  EXPECT_EQ(parse_error("a=" + std::string(64, 'v')),
            "invalid label selector \"a=" + std::string(64, 'v') + "\": invalid label value \"" +
                std::string(64, 'v') + "\" for key \"a\" at offset 2");
  EXPECT_EQ(parse_error("a=b;c"), R"(invalid label selector "a=b;c": expected ',' at offset 3)");
  EXPECT_EQ(parse_error("!"), R"(invalid label selector "!": expected a label key at offset 1)");
}

TEST(DecodeLabelSelectorTest, FullSelector) {
  ASSERT_OK_AND_ASSIGN(const LabelSelector selector, decode_label_selector(boost::json::parse(R"({
    "matchLabels": {"app": "db"},
    "matchExpressions": [
      {"key": "tier", "operator": "In", "values": ["primary", "replica"]},
      {"key": "canary", "operator": "DoesNotExist"},
      {"key": "zone", "operator": "NotIn", "values": ["z9"]},
      {"key": "ssd", "operator": "Exists", "values": []}
    ]})")));
  EXPECT_EQ(selector.match_labels, (Labels{{"app", "db"}}));
  EXPECT_EQ(selector.to_query(), "app=db,tier in (primary,replica),!canary,zone notin (z9),ssd");
}

TEST(EncodeLabelSelectorTest, RoundTripsAndLeavesOutWhatIsEmpty) {
  ASSERT_OK_AND_ASSIGN(const LabelSelector selector,
                       parse_selector("app=db,tier in (primary,replica),!canary,ssd"));
  const boost::json::object encoded = encode_label_selector(selector);
  EXPECT_EQ(boost::json::serialize(encoded),
            R"({"matchLabels":{"app":"db"},"matchExpressions":[)"
            R"({"key":"tier","operator":"In","values":["primary","replica"]},)"
            R"({"key":"canary","operator":"DoesNotExist"},{"key":"ssd","operator":"Exists"}]})");
  ASSERT_OK_AND_ASSIGN(const LabelSelector again, decode_label_selector(encoded));
  EXPECT_EQ(again, selector);
  EXPECT_TRUE(encode_label_selector(LabelSelector{}).empty());
}

TEST(DecodeLabelSelectorTest, NullAndEmptyAreEmpty) {
  ASSERT_OK_AND_ASSIGN(const LabelSelector null, decode_label_selector(boost::json::parse("null")));
  EXPECT_TRUE(null.empty());
  ASSERT_OK_AND_ASSIGN(const LabelSelector empty,
                       decode_label_selector(boost::json::parse(R"({"matchLabels": {}})")));
  EXPECT_TRUE(empty.empty());
}

TEST(DecodeLabelSelectorTest, Errors) {
  EXPECT_EQ(decode_error("[]"), "expected an object, got array");
  EXPECT_EQ(decode_error(R"({"matchExpressions": [{"key": "a", "operator": "In"}]})"),
            "matchExpressions[0].values: must be non-empty for operator In");
  EXPECT_EQ(decode_error(R"({"matchExpressions": [{"key": "a", "operator": "Exists",
                                                   "values": ["x"]}]})"),
            "matchExpressions[0].values: must be empty for operator Exists");
  EXPECT_EQ(decode_error(R"({"matchExpressions": [{"key": "a", "operator": "in",
                                                   "values": ["x"]}]})"),
            R"(matchExpressions[0].operator: unknown selector operator "in")");
  EXPECT_EQ(decode_error(R"({"matchExpressions": [{"key": "a b", "operator": "Exists"}]})"),
            R"(matchExpressions[0].key: invalid label key "a b")");
  EXPECT_EQ(decode_error(R"({"matchExpressions": [{"key": "a", "operator": "In",
                                                   "values": ["ok", "not ok"]}]})"),
            R"(matchExpressions[0].values[1]: invalid label value "not ok" for key "a")");
  EXPECT_EQ(decode_error(R"({"matchLabels": {"a/b/c": "x"}})"),
            R"(matchLabels: invalid label key "a/b/c")");
  EXPECT_EQ(decode_error(R"({"matchLabels": {"a": "x y"}})"),
            R"(matchLabels.a: invalid label value "x y" for key "a")");
}

}  // namespace
}  // namespace nmo::kube
