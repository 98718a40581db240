#include "kube/api/condition.h"

#include <chrono>
#include <vector>

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::kube {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::sys_days;
using std::chrono::year;

const Time kDay = sys_days{year{2026} / 11 / 30};

TEST(ConditionStatusTest, RoundTrips) {
  for (const ConditionStatus status :
       {ConditionStatus::kTrue, ConditionStatus::kFalse, ConditionStatus::kUnknown}) {
    ASSERT_OK_AND_ASSIGN(const ConditionStatus parsed, parse_condition_status(to_string(status)));
    EXPECT_EQ(parsed, status);
  }
  EXPECT_FALSE(parse_condition_status("true").has_value());
}

TEST(ConditionStatusTest, AnUnknownNameIsRejectedWithTheValidOnes) {
  const Result<ConditionStatus> parsed = parse_condition_status("Maybe");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(parsed.error().message,
            "unknown condition status \"Maybe\" (expected True, False or Unknown)");
}

TEST(SetConditionTest, AddsNewConditionWithNowTruncatedToSeconds) {
  std::vector<Condition> conditions;
  const Time now = kDay + hours{10} + milliseconds{250};
  EXPECT_TRUE(set_condition(
      conditions, {"Ready", ConditionStatus::kFalse, 1, kDay, "Draining", "2 pods left"}, now));
  ASSERT_EQ(conditions.size(), 1U);
  EXPECT_EQ(conditions[0], (Condition{"Ready", ConditionStatus::kFalse, 1, kDay + hours{10},
                                      "Draining", "2 pods left"}));
  EXPECT_EQ(find_condition(conditions, "Ready"), &conditions[0]);
  EXPECT_EQ(find_condition(conditions, "Blocked"), nullptr);
}

TEST(SetConditionTest, KeepsTransitionTimeWhileStatusIsUnchanged) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(set_condition(conditions, {"Blocked", ConditionStatus::kTrue, 1, {}, "PDB", "a"},
                            kDay + hours{1}));
  // Same everything: no change.
  EXPECT_FALSE(set_condition(conditions, {"Blocked", ConditionStatus::kTrue, 1, {}, "PDB", "a"},
                             kDay + hours{2}));
  // New message and reason, same status: changed, transition time kept.
  EXPECT_TRUE(set_condition(conditions,
                            {"Blocked", ConditionStatus::kTrue, 1, {}, "MultiplePDBs", "b"},
                            kDay + hours{3}));
  EXPECT_EQ(conditions[0].last_transition_time, kDay + hours{1});
  EXPECT_EQ(conditions[0].reason, "MultiplePDBs");
  EXPECT_EQ(conditions[0].message, "b");
  // New observed generation alone is a change too.
  EXPECT_TRUE(set_condition(conditions,
                            {"Blocked", ConditionStatus::kTrue, 2, {}, "MultiplePDBs", "b"},
                            kDay + hours{4}));
  EXPECT_EQ(conditions[0].observed_generation, 2);
  EXPECT_EQ(conditions[0].last_transition_time, kDay + hours{1});
  // Status flips: transition time moves to now.
  EXPECT_TRUE(set_condition(
      conditions, {"Blocked", ConditionStatus::kFalse, 2, {}, "NotBlocked", ""}, kDay + hours{5}));
  EXPECT_EQ(conditions[0].last_transition_time, kDay + hours{5});
  EXPECT_EQ(conditions[0].status, ConditionStatus::kFalse);
}

TEST(SetConditionTest, OtherTypesAreLeftAloneAndOrderIsKept) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(
      set_condition(conditions, {"Cordoned", ConditionStatus::kTrue, 1, {}, "C", ""}, kDay));
  ASSERT_TRUE(
      set_condition(conditions, {"Drained", ConditionStatus::kFalse, 1, {}, "D", ""}, kDay));
  ASSERT_TRUE(set_condition(conditions, {"Cordoned", ConditionStatus::kFalse, 1, {}, "C", ""},
                            kDay + hours{1}));
  ASSERT_EQ(conditions.size(), 2U);
  EXPECT_EQ(conditions[0].type, "Cordoned");
  EXPECT_EQ(conditions[0].last_transition_time, kDay + hours{1});
  EXPECT_EQ(conditions[1].type, "Drained");
  EXPECT_EQ(conditions[1].last_transition_time, kDay);
}

}  // namespace
}  // namespace nmo::kube
