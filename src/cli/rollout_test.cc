#include "cli/rollout.h"

#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::cli {
namespace {

// The error message rollout_spec() gives for `flags`, or "" when it accepts them.
std::string refusal(const RolloutFlags& flags) {
  auto spec = rollout_spec(flags);
  return spec ? std::string() : spec.error().message;
}

RolloutFlags by_selector() {
  RolloutFlags flags;
  flags.selector = "node-role.kubernetes.io/worker=";
  return flags;
}

TEST(Rollout, TheStorysPlanFromItsFlags) {
  RolloutFlags flags = by_selector();
  flags.order = "ByZone";
  flags.reason = "Hardware memory upgrade";
  flags.max_parallel = "1";
  flags.max_unavailable = "10%";
  flags.windows = {"Sat 22:00-06:00"};
  flags.time_zone = "Asia/Taipei";
  flags.blackout_dates = {"2026-12-25"};
  flags.done_when = "NodeRebooted";
  flags.on_window_close = "Pause";
  flags.health_gate_timeout = "20m";
  ASSERT_OK_AND_ASSIGN(const op::MaintenancePlanSpec spec, rollout_spec(flags));
  EXPECT_EQ(
      boost::json::serialize(rollout_object("memory-upgrade", spec)),
      R"({"apiVersion":"nodemaintenance.medik8s.io/v1alpha1","kind":"MaintenancePlan",)"
      R"("metadata":{"name":"memory-upgrade"},"spec":{"nodeSelector":{"matchLabels":)"
      R"({"node-role.kubernetes.io/worker":""}},"order":"ByZone",)"
      R"("reason":"Hardware memory upgrade","maxParallel":1,"maxUnavailable":"10%",)"
      R"("timeZone":"Asia/Taipei","windows":[{"days":["Sat"],"start":"22:00","end":"06:00"}],)"
      R"("blackoutDates":["2026-12-25"],"onWindowClose":"Pause","doneWhen":"NodeRebooted",)"
      R"("healthGateTimeout":"20m"}})");
  EXPECT_EQ(rollout_confirmation("memory-upgrade", spec, false),
            "maintenanceplan/memory-upgrade created: nodes by selector "
            "node-role.kubernetes.io/worker=, zone by zone, 1 at a time, at most 10% unavailable, "
            "window Sat 22:00-06:00 (Asia/Taipei), a drain under way held when the window "
            "closes, never on 2026-12-25, each node done once rebooted and Ready\n"
            "follow it: kubectl maintenance plan-status memory-upgrade\n");
}

TEST(Rollout, OnWindowCloseIsFinishOrPauseAndNeedsAWindow) {
  RolloutFlags flags = by_selector();
  flags.on_window_close = "Pause";
  EXPECT_EQ(refusal(flags), "--on-window-close goes with --window");
  flags.windows = {"Sat 22:00-06:00"};
  flags.on_window_close = "Stop";
  EXPECT_EQ(refusal(flags), "--on-window-close \"Stop\": expected one of Finish, Pause");
  flags.on_window_close = "Finish";
  EXPECT_EQ(refusal(flags), "");
}

TEST(Rollout, NodesAsAListTheDefaultsAndAPausedPlan) {
  RolloutFlags flags;
  flags.nodes = {"node-worker-03, node-worker-01", "node-worker-02"};
  flags.paused = true;
  ASSERT_OK_AND_ASSIGN(const op::MaintenancePlanSpec spec, rollout_spec(flags));
  EXPECT_EQ(spec.nodes,
            (std::vector<std::string>{"node-worker-03", "node-worker-01", "node-worker-02"}));
  EXPECT_FALSE(spec.order.has_value());
  EXPECT_FALSE(spec.max_parallel.has_value());
  EXPECT_TRUE(spec.paused);
  EXPECT_EQ(rollout_confirmation("batch", spec, false),
            "maintenanceplan/batch created: 3 nodes (node-worker-03, node-worker-01, "
            "node-worker-02), in the order listed, 1 at a time, any time, each node done when "
            "confirmed (kubectl maintenance done NODE)\n"
            "it is paused: nothing starts until spec.paused is false (kubectl patch "
            "maintenanceplan batch --type merge -p '{\"spec\":{\"paused\":false}}')\n"
            "follow it: kubectl maintenance plan-status batch\n");
  EXPECT_EQ(rollout_confirmation("batch", spec, true),
            "maintenanceplan/batch accepted by the API server (dry run, nothing created): 3 "
            "nodes (node-worker-03, node-worker-01, node-worker-02), in the order listed, 1 at a "
            "time, any time, each node done when confirmed (kubectl maintenance done NODE)\n");
}

TEST(Rollout, WindowsWithDayRangesAndEveryDay) {
  RolloutFlags flags = by_selector();
  flags.windows = {"Mon-Wed,Sun 01:00-05:30", " Fri-Mon 23:00-01:00 ", "12:00-13:00"};
  flags.max_parallel = "25%";
  flags.done_when = "Soaked";
  flags.soak_time = "30m";
  ASSERT_OK_AND_ASSIGN(const op::MaintenancePlanSpec spec, rollout_spec(flags));
  ASSERT_EQ(spec.windows.size(), 3U);
  EXPECT_EQ(spec.windows[0], (op::PlanWindow{{"Mon", "Tue", "Wed", "Sun"}, "01:00", "05:30"}));
  EXPECT_EQ(spec.windows[1], (op::PlanWindow{{"Mon", "Fri", "Sat", "Sun"}, "23:00", "01:00"}));
  EXPECT_EQ(spec.windows[2], (op::PlanWindow{{}, "12:00", "13:00"}));
  EXPECT_EQ(rollout_confirmation("p", spec, false),
            "maintenanceplan/p created: nodes by selector node-role.kubernetes.io/worker=, by "
            "name, 25% at a time, windows Mon,Tue,Wed,Sun 01:00-05:30; Mon,Fri,Sat,Sun "
            "23:00-01:00; daily 12:00-13:00 (UTC), each node done 30m after its drain\n"
            "follow it: kubectl maintenance plan-status p\n");
}

TEST(Rollout, WhatCannotWorkIsRefusedNamingTheFlag) {
  EXPECT_EQ(refusal(RolloutFlags{}),
            "exactly one of --nodes and --selector: the nodes to take out, by name or by label");
  RolloutFlags both = by_selector();
  both.nodes = {"a"};
  EXPECT_EQ(refusal(both),
            "exactly one of --nodes and --selector: the nodes to take out, by name or by label");

  RolloutFlags flags = by_selector();
  flags.selector = "role in (a";
  EXPECT_EQ(refusal(flags),
            R"(--selector "role in (a": invalid label selector "role in (a": expected ',' or )"
            R"(')' at offset 10)");

  flags = by_selector();
  flags.windows = {"Sat 22:00"};
  EXPECT_EQ(refusal(flags),
            R"(--window "Sat 22:00": expected [DAYS ]HH:MM-HH:MM, e.g. "Sat,Sun 22:00-06:00")");
  flags.windows = {"Sat 24:00-06:00"};
  EXPECT_EQ(
      refusal(flags),
      R"(--window "Sat 24:00-06:00": expected [DAYS ]HH:MM-HH:MM, e.g. "Sat,Sun 22:00-06:00")");
  flags.windows = {"Saturday 22:00-06:00"};
  EXPECT_EQ(refusal(flags),
            R"(--window "Saturday 22:00-06:00": unknown day "Saturday" (days are Mon, Tue, Wed, )"
            R"(Thu, Fri, Sat, Sun, or ranges like Mon-Fri))");

  flags = by_selector();
  flags.max_parallel = "two";
  EXPECT_EQ(refusal(flags),
            R"(--max-parallel "two": expected a count or a percentage, e.g. 2 or 25%)");
  flags.max_parallel = "0";
  EXPECT_EQ(refusal(flags),
            R"(--max-parallel "0": expected a count or a percentage, e.g. 2 or 25%)");
  flags.max_parallel = "";
  flags.max_unavailable = "150%";
  EXPECT_EQ(refusal(flags),
            R"(--max-unavailable "150%": expected a count or a percentage, e.g. 2 or 25%)");

  flags = by_selector();
  flags.blackout_dates = {"2026-02-30"};
  EXPECT_EQ(refusal(flags), R"(--blackout "2026-02-30": expected a date YYYY-MM-DD)");

  flags = by_selector();
  flags.order = "Random";
  EXPECT_EQ(refusal(flags), R"(--order "Random": expected one of AsListed, ByName, ByZone)");
  flags.order = "AsListed";
  EXPECT_EQ(refusal(flags),
            R"(--order "AsListed": needs --nodes: a selector's nodes have no list order)");

  flags = by_selector();
  flags.done_when = "Soaked";
  EXPECT_EQ(refusal(flags),
            "--soak-time goes with --done-when Soaked, and Soaked needs --soak-time");
  flags.soak_time = "half an hour";
  EXPECT_EQ(refusal(flags).rfind(R"(--soak-time "half an hour": )", 0), 0U) << refusal(flags);
  flags.done_when = "";
  flags.soak_time = "30m";
  EXPECT_EQ(refusal(flags),
            "--soak-time goes with --done-when Soaked, and Soaked needs --soak-time");

  flags = by_selector();
  flags.health_gate_timeout = "soon";
  EXPECT_EQ(refusal(flags).rfind(R"(--health-gate-timeout "soon": )", 0), 0U) << refusal(flags);
}

}  // namespace
}  // namespace nmo::cli
