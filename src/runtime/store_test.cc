#include "runtime/store.h"

#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nmo::kube {

// A small projection for the tests: a namespaced object that lives on a node.
struct Item {
  ObjectMeta meta;
  std::string node;
};

template <>
struct ResourceInfo<Item> {
  static constexpr std::string_view kGroup = "";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "items";
  static constexpr std::string_view kKind = "Item";
  static constexpr bool kNamespaced = true;
  static Result<Item> decode(const boost::json::value& object) {
    auto meta = decode_meta(object);
    if (!meta) return meta.error();
    return Item{std::move(*meta), {}};
  }
};

}  // namespace nmo::kube

namespace nmo::runtime {
namespace {

using kube::Item;
using kube::WatchEventType;
using testing::ElementsAre;
using testing::IsEmpty;

Item item(const std::string& ns, const std::string& name, const std::string& version,
          const std::string& node = "") {
  Item out;
  out.meta.namespace_ = ns;
  out.meta.name = name;
  out.meta.resource_version = version;
  out.node = node;
  return out;
}

std::vector<std::string> names(const std::vector<std::shared_ptr<const Item>>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(i->meta.name + "@" + i->meta.resource_version);
  return out;
}

// "+name@v", "~name@v1->v2", "-name@v" for each change.
std::vector<std::string> describe(const std::vector<StoreChange<Item>>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes) {
    if (c.before == nullptr) {
      out.push_back("+" + c.after->meta.name + "@" + c.after->meta.resource_version);
    } else if (c.after == nullptr) {
      out.push_back("-" + c.before->meta.name + "@" + c.before->meta.resource_version);
    } else {
      out.push_back("~" + c.after->meta.name + "@" + c.before->meta.resource_version + "->" +
                    c.after->meta.resource_version);
    }
  }
  return out;
}

std::vector<std::string> on_node(const std::string& node_name, const Item& i) {
  if (i.node.empty()) return {};
  return {node_name + i.node};
}

TEST(StoreKeyTest, NamespacedAndClusterScoped) {
  kube::ObjectMeta meta;
  meta.name = "web-0";
  EXPECT_EQ(store_key(meta), "web-0");
  meta.namespace_ = "shop";
  EXPECT_EQ(store_key(meta), "shop/web-0");
}

TEST(StoreTest, EmptyUntilReplaced) {
  Store<Item> store;
  EXPECT_FALSE(store.has_synced());
  EXPECT_EQ(store.size(), 0U);
  EXPECT_EQ(store.get("a/b"), nullptr);
  EXPECT_THAT(store.list(), IsEmpty());
}

TEST(StoreTest, ReplaceFillsAndReportsDifferences) {
  Store<Item> store;
  auto first = store.replace({item("a", "x", "1"), item("a", "y", "2"), item("b", "x", "3")});
  EXPECT_TRUE(store.has_synced());
  EXPECT_THAT(describe(first), ElementsAre("+x@1", "+y@2", "+x@3"));
  EXPECT_EQ(store.size(), 3U);
  ASSERT_NE(store.get("a/y"), nullptr);
  EXPECT_EQ(store.get("a/y")->meta.resource_version, "2");
  EXPECT_THAT(names(store.list()), ElementsAre("x@1", "y@2", "x@3"));

  // y unchanged (same version, no change reported), x in a changed, z new, b/x gone.
  auto second = store.replace({item("a", "z", "9"), item("a", "y", "2"), item("a", "x", "5")});
  EXPECT_THAT(describe(second), ElementsAre("+z@9", "~x@1->5", "-x@3"));
  EXPECT_EQ(store.size(), 3U);
  EXPECT_EQ(store.get("b/x"), nullptr);
  EXPECT_EQ(store.get("a/x")->meta.resource_version, "5");
}

TEST(StoreTest, ReplaceKeepsTheLastOfDuplicateKeys) {
  Store<Item> store;
  auto changes = store.replace({item("a", "x", "1"), item("a", "x", "2")});
  EXPECT_THAT(describe(changes), ElementsAre("+x@2"));
  EXPECT_EQ(store.size(), 1U);
}

TEST(StoreTest, ApplyAddsUpdatesAndDeletes) {
  Store<Item> store;
  EXPECT_THAT(describe({store.apply(WatchEventType::kAdded, item("a", "x", "1"))}),
              ElementsAre("+x@1"));
  EXPECT_THAT(describe({store.apply(WatchEventType::kModified, item("a", "x", "2"))}),
              ElementsAre("~x@1->2"));
  // MODIFIED of an unknown object is an addition (an upsert).
  EXPECT_THAT(describe({store.apply(WatchEventType::kModified, item("", "c", "3"))}),
              ElementsAre("+c@3"));
  EXPECT_EQ(store.get("c")->meta.resource_version, "3");
  EXPECT_THAT(describe({store.apply(WatchEventType::kDeleted, item("a", "x", "4"))}),
              ElementsAre("-x@2"));
  EXPECT_EQ(store.get("a/x"), nullptr);
  // Deleting an unknown object reports the event's object and changes nothing.
  EXPECT_THAT(describe({store.apply(WatchEventType::kDeleted, item("a", "q", "5"))}),
              ElementsAre("-q@5"));
  EXPECT_EQ(store.size(), 1U);
  // Bookmarks carry no object.
  auto none = store.apply(WatchEventType::kBookmark, item("a", "b", "6"));
  EXPECT_EQ(none.before, nullptr);
  EXPECT_EQ(none.after, nullptr);
  EXPECT_EQ(store.size(), 1U);
  // apply() alone never marks the store synced: only a list does.
  EXPECT_FALSE(store.has_synced());
}

TEST(StoreTest, SnapshotsStayValidAfterReplaceAndDelete) {
  Store<Item> store;
  (void)store.replace({item("a", "x", "1", "n1")});
  std::shared_ptr<const Item> held = store.get("a/x");
  std::vector<std::shared_ptr<const Item>> listed = store.list();
  (void)store.replace({item("a", "x", "2", "n2")});
  (void)store.apply(WatchEventType::kDeleted, item("a", "x", "3"));
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->meta.resource_version, "1");
  EXPECT_EQ(held->node, "n1");
  EXPECT_THAT(names(listed), ElementsAre("x@1"));
  EXPECT_EQ(store.size(), 0U);
}

TEST(StoreTest, IndexesFollowReplaceAndApply) {
  Store<Item> store;
  store.add_index("node", [](const Item& i) { return on_node("", i); });
  store.add_index("prefixed", [](const Item& i) { return on_node("node-", i); });
  (void)store.replace(
      {item("a", "x", "1", "n1"), item("a", "y", "2", "n1"), item("b", "z", "3", "n2")});
  EXPECT_THAT(names(store.by_index("node", "n1")), ElementsAre("x@1", "y@2"));
  EXPECT_THAT(names(store.by_index("prefixed", "node-n2")), ElementsAre("z@3"));
  EXPECT_THAT(store.by_index("node", "n3"), IsEmpty());

  // Moving y to n2 updates both values; deleting x empties n1 of it; a node-less item is in no
  // index value.
  (void)store.apply(WatchEventType::kModified, item("a", "y", "4", "n2"));
  (void)store.apply(WatchEventType::kDeleted, item("a", "x", "5"));
  (void)store.apply(WatchEventType::kAdded, item("a", "w", "6"));
  EXPECT_THAT(store.by_index("node", "n1"), IsEmpty());
  EXPECT_THAT(names(store.by_index("node", "n2")), ElementsAre("y@4", "z@3"));
  EXPECT_THAT(store.by_index("node", ""), IsEmpty());

  // A relist rebuilds the indexes from scratch.
  (void)store.replace({item("a", "v", "7", "n3")});
  EXPECT_THAT(store.by_index("node", "n2"), IsEmpty());
  EXPECT_THAT(names(store.by_index("node", "n3")), ElementsAre("v@7"));
}

TEST(StoreTest, AnIndexFunctionMayReturnSeveralValues) {
  Store<Item> store;
  store.add_index("both", [](const Item& i) { return std::vector<std::string>{"all", i.node}; });
  (void)store.apply(WatchEventType::kAdded, item("a", "x", "1", "n1"));
  (void)store.apply(WatchEventType::kAdded, item("a", "y", "2", "n2"));
  EXPECT_THAT(names(store.by_index("both", "all")), ElementsAre("x@1", "y@2"));
  EXPECT_THAT(names(store.by_index("both", "n2")), ElementsAre("y@2"));
}

TEST(StoreDeathTest, MisuseAborts) {
  Store<Item> store;
  store.add_index("node", [](const Item& i) { return on_node("", i); });
  EXPECT_DEATH((void)store.by_index("owner", "x"), "unknown index: owner");
  EXPECT_DEATH(store.add_index("node", [](const Item& i) { return on_node("", i); }),
               "registered twice: node");
  (void)store.replace({});
  EXPECT_DEATH(store.add_index("late", [](const Item& i) { return on_node("", i); }),
               "after the store was written: late");
}

TEST(StoreTest, ReadersRunConcurrentlyWithTheWriter) {
  Store<Item> store;
  store.add_index("node", [](const Item& i) { return on_node("", i); });
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      for (const auto& i : store.by_index("node", "n")) ASSERT_EQ(i->node, "n");
      for (const auto& i : store.list()) ASSERT_FALSE(i->meta.name.empty());
    }
  });
  for (int round = 0; round < 200; ++round) {
    const std::string v = std::to_string(round);
    (void)store.replace({item("a", "x", v, "n"), item("a", "y", v, "m")});
    (void)store.apply(WatchEventType::kModified, item("a", "x", v + "b", "m"));
  }
  done.store(true);
  reader.join();
  EXPECT_THAT(names(store.by_index("node", "m")), ElementsAre("x@199b", "y@199"));
}

}  // namespace
}  // namespace nmo::runtime
