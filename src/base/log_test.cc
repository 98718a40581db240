#include "base/log.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/log_async.h"

namespace nmo::log {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_writer([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override {
    set_writer({});
    configure(Format::kText, 0);
  }
  std::vector<std::string> lines_;
};

TEST(FormatLineTest, JsonHasStableKeysAndEscapes) {
  const std::string line =
      format_line(Format::kJson, "2026-11-30T10:00:00.000Z", "info", "cordoned \"node\"",
                  {Field("controller", "nodemaintenance")},
                  {{"node", "node-worker-02"}, {"pods", 3}, {"ok", true}, {"msg2", "a\nb"}});
  EXPECT_EQ(line, R"({"ts":"2026-11-30T10:00:00.000Z","level":"info","msg":"cordoned \"node\"",)"
                  R"("controller":"nodemaintenance","node":"node-worker-02","pods":3,"ok":true,)"
                  R"("msg2":"a\nb"})");
}

TEST(FormatLineTest, TextQuotesOnlyWhenNeeded) {
  const std::string line =
      format_line(Format::kText, "2026-11-30T10:00:00.000Z", "warn", "drain blocked", {},
                  {{"pod", "db-0"}, {"reason", "0 disruptions allowed"}});
  EXPECT_EQ(
      line,
      R"(2026-11-30T10:00:00.000Z warn  drain blocked pod=db-0 reason="0 disruptions allowed")");
}

TEST(FormatLineTest, ControlCharactersAreEscapedInJson) {
  const std::string line =
      format_line(Format::kJson, "t", "info", std::string("x\x01y", 3), {}, {});
  EXPECT_THAT(line, HasSubstr(R"("msg":"x\u0001y")"));
}

TEST(FormatLineTest, NonFiniteNumbersStayValidJson) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::string line = format_line(Format::kJson, "t", "info", "m", {},
                                       {{"ratio", nan}, {"up", inf}, {"down", -inf}, {"x", 0.5}});
  EXPECT_EQ(line, R"({"ts":"t","level":"info","msg":"m","ratio":"NaN","up":"+Inf","down":"-Inf",)"
                  R"("x":0.500000})");
  boost::system::error_code error;
  (void)boost::json::parse(line, error);
  EXPECT_FALSE(error) << error.message() << ": " << line;
  EXPECT_EQ(format_line(Format::kText, "t", "info", "m", {}, {{"ratio", nan}}),
            "t info  m ratio=nan");
}

TEST_F(LogTest, BoundFieldsComeFirstAndVerbosityFilters) {
  configure(Format::kJson, 1);
  const Logger logger = root().with({{"controller", "nm"}}).with({{"node", "n1"}});
  logger.info("hello", {{"pod", "p"}});
  logger.debug(1, "shown");
  logger.debug(2, "hidden");
  ASSERT_EQ(lines_.size(), 2U);
  EXPECT_THAT(lines_[0], MatchesRegex(R"(\{"ts":"[0-9T:.-]+Z","level":"info","msg":"hello",)"
                                      R"("controller":"nm","node":"n1","pod":"p"\})"));
  EXPECT_THAT(lines_[1], HasSubstr(R"("level":"debug","msg":"shown")"));
  EXPECT_TRUE(Logger::enabled(1));
  EXPECT_FALSE(Logger::enabled(2));
}

TEST_F(LogTest, FieldsChosenAtRunTimeAreBoundInOrder) {
  configure(Format::kJson, 0);
  const std::vector<Field> fields{{"pod", "ns/p"}, {"retry_after_ms", std::int64_t{500}}};
  root().with({{"controller", "nm"}}).with(fields).info("eviction refused");
  ASSERT_EQ(lines_.size(), 1U);
  EXPECT_THAT(lines_[0], HasSubstr(R"("msg":"eviction refused","controller":"nm","pod":"ns/p",)"
                                   R"("retry_after_ms":500})"));
}

TEST_F(LogTest, LevelsAreNamed) {
  configure(Format::kText, 0);
  root().error("e");
  root().warn("w");
  root().info("i");
  ASSERT_EQ(lines_.size(), 3U);
  EXPECT_THAT(lines_[0], HasSubstr(" error e"));
  EXPECT_THAT(lines_[1], HasSubstr(" warn  w"));
  EXPECT_THAT(lines_[2], HasSubstr(" info  i"));
}

// The operator's case: stderr stops draining (a stalled log reader) while the io thread logs.
// Synchronous writing would block the second info() for good (the writer holds the output);
// through an AsyncWriter every call returns, lines beyond the queue's bound are dropped and
// counted, and the count is reported once the output drains.
TEST(AsyncWriterTest, LoggingNeverWaitsOnAStalledOutputAndDroppedLinesAreReported) {
  std::mutex mu;
  std::condition_variable changed;
  bool stalled = true;
  bool first_taken = false;
  std::vector<std::string> written;  // guarded by mu
  set_writer([&](std::string_view line) {
    std::unique_lock lock(mu);
    written.emplace_back(line);
    first_taken = true;
    changed.notify_all();
    changed.wait(lock, [&] { return !stalled; });
  });
  configure(Format::kText, 0);
  const std::uint64_t dropped_before = dropped_lines();
  const std::string payload(100, 'x');
  {
    // Room for two lines of about 135 bytes.
    const AsyncWriter async(300);
    root().info("first");
    {
      std::unique_lock lock(mu);
      ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return first_taken; }))
          << "the writer thread never took the first line";
    }
    // The writer thread is now stuck in the output; these return all the same.
    root().info("queued-1 " + payload);
    root().info("queued-2 " + payload);
    root().info("dropped-1 " + payload);
    root().info("dropped-2 " + payload);
    EXPECT_EQ(dropped_lines() - dropped_before, 2U);
    {
      const std::lock_guard lock(mu);
      stalled = false;
      changed.notify_all();
    }
  }                      // writes what is queued, then the count of what was dropped
  root().info("after");  // synchronous again
  set_writer({});
  ASSERT_EQ(written.size(), 5U);
  EXPECT_THAT(written[0], HasSubstr(" info  first"));
  EXPECT_THAT(written[1], HasSubstr(" info  queued-1 x"));
  EXPECT_THAT(written[2], HasSubstr(" info  queued-2 x"));
  EXPECT_THAT(written[3], HasSubstr(" warn  log lines dropped: the log output did not keep up "
                                    "dropped=2 dropped_total="));
  EXPECT_THAT(written[4], HasSubstr(" info  after"));
}

}  // namespace
}  // namespace nmo::log
