#include "cli/work_done.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "cli/exit_code.h"

namespace nmo::cli {
namespace {

op::NodeMaintenance decode(std::string_view json) {
  auto nm = op::decode_node_maintenance(boost::json::parse(json));
  EXPECT_OK(nm);
  return nm ? *nm : op::NodeMaintenance{};
}

// A NodeMaintenance `name` of `node` in `phase` ("" for none yet).
op::NodeMaintenance in_phase(std::string_view name, std::string_view node, std::string_view phase) {
  boost::json::object object{{"metadata", {{"name", name}}}, {"spec", {{"nodeName", node}}}};
  if (!phase.empty()) object["status"] = boost::json::object{{"phase", phase}};
  return decode(boost::json::serialize(object));
}

TEST(WorkDone, NoMaintenanceForTheNode) {
  const std::vector<op::NodeMaintenance> all{in_phase("m-a", "node-a", "Succeeded")};
  const auto of_node = maintenances_of_node(all, "node-b");
  EXPECT_TRUE(of_node.empty());
  EXPECT_EQ(done_refusal(of_node, "node-b"),
            (Failure{.message = "no NodeMaintenance for node node-b", .exit_code = kExitNotFound}));
}

TEST(WorkDone, RefusedUntilTheDrainHasFinished) {
  for (const auto& [phase, said] : std::vector<std::pair<std::string, std::string>>{
           {"Pending", "Pending"}, {"Running", "Running"}, {"Failed", "Failed"}, {"", "new"}}) {
    const std::vector<op::NodeMaintenance> of_node{in_phase("m-a", "node-a", phase)};
    EXPECT_EQ(done_refusal(of_node, "node-a"),
              (Failure{.message = "NodeMaintenance m-a on node node-a is " + said +
                                  ", not Succeeded: its drain has not finished, so the work "
                                  "cannot be done yet",
                       .exit_code = kExitFailed}))
        << phase;
  }
}

TEST(WorkDone, OneSucceededAmongSeveralIsEnough) {
  const std::vector<op::NodeMaintenance> all{in_phase("m-old", "node-a", "Succeeded"),
                                             in_phase("m-other", "node-b", "Running"),
                                             in_phase("m-new", "node-a", "Pending")};
  const auto of_node = maintenances_of_node(all, "node-a");
  ASSERT_EQ(of_node.size(), 2U);
  EXPECT_EQ(of_node[0].meta.name, "m-old");
  EXPECT_EQ(of_node[1].meta.name, "m-new");
  EXPECT_EQ(done_refusal(of_node, "node-a"), std::nullopt);
  EXPECT_TRUE(can_mark_done(of_node[0]));
  EXPECT_FALSE(can_mark_done(of_node[1]));
}

TEST(WorkDone, PatchesTheAnnotationWithTheTime) {
  const auto now = *kube::parse_time("2026-03-07T14:30:00.250Z");
  EXPECT_EQ(boost::json::parse(done_patch(now)), boost::json::parse(R"({"metadata": {"annotations":
                 {"nodemaintenance.medik8s.io/done": "2026-03-07T14:30:00Z"}}})"));
}

TEST(WorkDone, SaysWhoGivesTheNodeBack) {
  const auto own = in_phase("maintenance-node-a", "node-a", "Succeeded");
  EXPECT_EQ(done_confirmation(own),
            "nodemaintenance.nodemaintenance.medik8s.io/maintenance-node-a marked done (node "
            "node-a); delete it to give the node back: kubectl maintenance stop node-a\n");
  const auto planned = decode(R"json({"metadata": {"name": "rack-a-node-a",
      "labels": {"nodemaintenance.medik8s.io/plan": "rack-a"}},
    "spec": {"nodeName": "node-a"}, "status": {"phase": "Succeeded"}})json");
  EXPECT_EQ(done_confirmation(planned),
            "nodemaintenance.nodemaintenance.medik8s.io/rack-a-node-a marked done (node node-a); "
            "its MaintenancePlan gives the node back\n");
}

}  // namespace
}  // namespace nmo::cli
