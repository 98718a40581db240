#include "base/lru_cache.h"

#include <string>

#include <gtest/gtest.h>

namespace nmo {
namespace {

TEST(LruCacheTest, ForgetsTheLeastRecentlyUsedEntryWhenFull) {
  LruCache<std::string, int> cache(2);
  cache.put("a", 1);
  cache.put("b", 2);
  ASSERT_NE(cache.find("a"), nullptr);  // "a" is now the most recently used
  cache.put("c", 3);
  EXPECT_EQ(cache.size(), 2U);
  EXPECT_EQ(cache.find("b"), nullptr);
  ASSERT_NE(cache.find("a"), nullptr);
  EXPECT_EQ(*cache.find("a"), 1);
  ASSERT_NE(cache.find("c"), nullptr);
  EXPECT_EQ(*cache.find("c"), 3);
}

TEST(LruCacheTest, PutReplacesAndEraseForgets) {
  LruCache<std::string, int> cache(2);
  cache.put("a", 1);
  cache.put("a", 5);
  EXPECT_EQ(cache.size(), 1U);
  EXPECT_EQ(*cache.find("a"), 5);
  EXPECT_TRUE(cache.erase("a"));
  EXPECT_FALSE(cache.erase("a"));
  EXPECT_EQ(cache.find("a"), nullptr);
  EXPECT_EQ(cache.size(), 0U);
}

TEST(LruCacheTest, StaysWithinItsCapacityHoweverManyKeysCome) {
  LruCache<int, int> cache(16);
  for (int i = 0; i < 10'000; ++i) cache.put(i, i);
  EXPECT_EQ(cache.size(), 16U);
  EXPECT_EQ(cache.find(0), nullptr);
  ASSERT_NE(cache.find(9'999), nullptr);
}

}  // namespace
}  // namespace nmo
