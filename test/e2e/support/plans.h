// MaintenancePlans in end-to-end tests: apply one, read it back decoded, wait on it, and say
// what it looked like when a wait failed. Shared by the plan tests and the Node Health Check
// tests, so that both read a plan the same way.
// Threading: test thread only (runs kubectl).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "operator/api/maintenance_plan.h"
#include "test/e2e/support/cluster.h"

namespace nmo::e2e {

/// Applies the MaintenancePlan `name` with `spec` (kubectl apply).
void apply_plan(const Kubectl& kubectl, const std::string& name, boost::json::object spec);

/// The plan as the API server has it, decoded; std::nullopt when it does not exist (a decode
/// error fails the test).
std::optional<op::MaintenancePlan> get_plan(const Kubectl& kubectl, const std::string& name);

/// "phase P, message "M", nodes: a=Done b=Waiting": a plan in one line, for a failed wait.
std::string describe_plan(const op::MaintenancePlan& plan);

/// Waits until `check` holds for the plan; returns the plan as last seen, or std::nullopt when
/// the deadline passed (the failure names `what` and the plan's last state).
std::optional<op::MaintenancePlan> wait_plan(
    const Kubectl& kubectl, const std::string& name, const std::string& what,
    std::chrono::milliseconds timeout,
    const std::function<bool(const op::MaintenancePlan&)>& check);

}  // namespace nmo::e2e
