#include "base/log.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace nmo::log
