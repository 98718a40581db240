#include "test/e2e/support/plans.h"

#include <utility>

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace nmo::e2e {

namespace json = boost::json;

void apply_plan(const Kubectl& kubectl, const std::string& name, json::object spec) {
  kubectl.apply(json::serialize(json::object{{"apiVersion", "nodemaintenance.medik8s.io/v1alpha1"},
                                             {"kind", "MaintenancePlan"},
                                             {"metadata", {{"name", name}}},
                                             {"spec", std::move(spec)}}));
}

std::optional<op::MaintenancePlan> get_plan(const Kubectl& kubectl, const std::string& name) {
  auto object = kubectl.get_json({"maintenanceplan", name});
  if (!object) return std::nullopt;
  auto decoded = op::decode_maintenance_plan(*object);
  EXPECT_TRUE(decoded.has_value()) << decoded.error().message;
  if (!decoded.has_value()) return std::nullopt;
  return std::move(decoded).value();
}

std::string describe_plan(const op::MaintenancePlan& plan) {
  std::string out = "phase " +
                    (plan.status.phase ? std::string(op::to_string(*plan.status.phase)) : "-") +
                    ", message \"" + plan.status.message + "\", nodes:";
  for (const op::PlanNodeStatus& node : plan.status.nodes) {
    out += " " + node.name + "=" + std::string(op::to_string(node.phase));
  }
  return out;
}

std::optional<op::MaintenancePlan> wait_plan(
    const Kubectl& kubectl, const std::string& name, const std::string& what,
    std::chrono::milliseconds timeout,
    const std::function<bool(const op::MaintenancePlan&)>& check) {
  std::optional<op::MaintenancePlan> seen;
  const bool ok = wait_until(
      "plan " + name + ": " + what, timeout,
      [&] {
        seen = get_plan(kubectl, name);
        return seen && check(*seen);
      },
      [&] { return seen ? describe_plan(*seen) : std::string("no plan"); });
  if (!ok) return std::nullopt;
  return seen;
}

}  // namespace nmo::e2e
