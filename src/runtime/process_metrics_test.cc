#include "runtime/process_metrics.h"

#include <string>

#include <gtest/gtest.h>

namespace nmo::runtime {
namespace {

// A /proc/<pid>/stat line whose command holds spaces and parentheses, as a process may name
// itself: fields 14/15 (utime/stime) = 250/50 ticks, 22 (starttime) = 1000 ticks, 23 (vsize)
// = 8192000 bytes, 24 (rss) = 300 pages.
constexpr const char* kStat =
    "4242 (odd) name (x)) S 1 4242 4242 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 3 0 1000 8192000 "
    "300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcessMetricsTest, ParsesTheStatLineAfterTheLastParenthesis) {
  const auto stats = parse_proc_stat(kStat, 100, 4096, 1'700'000'000);
  ASSERT_TRUE(stats.has_value());
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 3.0);
  EXPECT_DOUBLE_EQ(stats->start_time_seconds, 1'700'000'010.0);
  EXPECT_DOUBLE_EQ(stats->virtual_bytes, 8'192'000.0);
  EXPECT_DOUBLE_EQ(stats->resident_bytes, 300.0 * 4096);
}

TEST(ProcessMetricsTest, RefusesWhatIsNotAStatLine) {
  EXPECT_FALSE(parse_proc_stat("", 100, 4096, 0).has_value());
  EXPECT_FALSE(parse_proc_stat("1 (short) S 1 2 3", 100, 4096, 0).has_value());
  std::string garbled = kStat;
  garbled.replace(garbled.find(" 250 "), 5, " 2x0 ");
  EXPECT_FALSE(parse_proc_stat(garbled, 100, 4096, 0).has_value());
  EXPECT_FALSE(parse_proc_stat(kStat, 0, 4096, 0).has_value());
}

TEST(ProcessMetricsTest, FindsTheBootTime) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1'700'000'000);
  EXPECT_EQ(parse_boot_time("btime 12\n"), 12);
  EXPECT_FALSE(parse_boot_time("cpu 1\nxbtime 3\n").has_value());
}

TEST(ProcessMetricsTest, ReadsThisProcess) {
  const auto stats = read_process_stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GT(stats->resident_bytes, 0);
  EXPECT_GE(stats->open_fds, 3);  // stdin, stdout, stderr at least
}

}  // namespace
}  // namespace nmo::runtime
