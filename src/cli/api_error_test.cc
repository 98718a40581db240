#include "cli/api_error.h"

#include <gtest/gtest.h>

#include "cli/exit_code.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"

namespace nmo::cli {
namespace {

TEST(DescribeApiError, ConnectionRefusedNamesTheServer) {
  const Error error(ErrorCode::kUnavailable, "connect to 127.0.0.1:6443: Connection refused");
  EXPECT_TRUE(is_unreachable(error));
  EXPECT_EQ(describe_api_error(error, "https://127.0.0.1:6443"),
            (Failure{.message = "cannot reach the API server at https://127.0.0.1:6443: "
                                "connection refused",
                     .exit_code = kExitUnavailable}));
}

TEST(DescribeApiError, ServerAnswersKeepTheirMessage) {
  const Error not_found(ErrorCode::kNotFound, "nodes \"x\" not found", 404);
  EXPECT_FALSE(is_unreachable(not_found));
  EXPECT_EQ(describe_api_error(not_found, "https://h"),
            (Failure{.message = "nodes \"x\" not found", .exit_code = kExitNotFound}));
  const Error unavailable(ErrorCode::kUnavailable, "etcd is down", 503);
  EXPECT_EQ(describe_api_error(unavailable, "https://h").exit_code, kExitFailed);
  const Error unauthorized(ErrorCode::kUnauthorized, "Unauthorized", 401);
  EXPECT_EQ(describe_api_error(unauthorized, "https://h").exit_code, kExitUnavailable);
}

TEST(DescribeApiError, MissingCredentialsKeepTheirMessage) {
  const Error plugin(ErrorCode::kUnauthorized,
                     R"(kubeconfig /k: users["eks"]: exec plugin "aws" is not installed)");
  EXPECT_EQ(describe_api_error(plugin, "https://h"),
            (Failure{.message = plugin.message, .exit_code = kExitUnavailable}));
}

TEST(ApiNotInstalled, NamesTheCrdAndTheFix) {
  EXPECT_EQ(api_not_installed(op::kKind, op::kCrdName).message,
            "the NodeMaintenance API is not installed in this cluster "
            "(nodemaintenances.nodemaintenance.medik8s.io): apply deploy/crd");
  EXPECT_EQ(api_not_installed(op::kKind, op::kCrdName).exit_code, kExitUnavailable);
  EXPECT_EQ(api_not_installed(op::kPlanKind, op::kPlanCrdName).message,
            "the MaintenancePlan API is not installed in this cluster "
            "(maintenanceplans.nodemaintenance.medik8s.io): apply deploy/crd");
  EXPECT_EQ(api_not_installed(op::kPlanKind, op::kPlanCrdName).exit_code, kExitUnavailable);
}

}  // namespace
}  // namespace nmo::cli
