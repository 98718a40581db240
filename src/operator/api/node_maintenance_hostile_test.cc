// NodeMaintenance objects with absurd values (docs/reliability.md, "Hostile input"), through the
// path the controller takes: decode_node_maintenance(), then
// NodeMaintenanceSpec::validation_error(), whose text becomes status.lastError. The CRD schema
// rejects most of these before they are stored; this is what the operator does when one gets
// through anyway (an older schema, an upstream CRD). Each value either fails with an exact message
// or is accepted on purpose, as each test says.
#include <cstdint>
#include <limits>
#include <string>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "operator/api/node_maintenance.h"

namespace nmo::op {
namespace {

Result<NodeMaintenance> decode_spec(boost::json::object spec) {
  return decode_node_maintenance(boost::json::object{
      {"kind", "NodeMaintenance"}, {"metadata", {{"name", "m"}}}, {"spec", std::move(spec)}});
}

// The lastError the controller would write for this spec ("" when it proceeds).
std::string last_error_for(boost::json::object spec) {
  const Result<NodeMaintenance> nm = decode_spec(std::move(spec));
  EXPECT_TRUE(nm.has_value()) << nm.error().describe();
  return nm.has_value() ? nm->spec.validation_error() : "<not decoded>";
}

// Accepted on purpose: spec.reason is free text for humans (schema maxLength 1024); the operator
// only copies it into its BeginMaintenance event and logs, so it keeps it verbatim at any length.
TEST(HostileNodeMaintenanceTest, TenThousandCharacterReasonIsKeptVerbatim) {
  const std::string reason(10'000, 'r');
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm,
                       decode_spec({{"nodeName", "node-worker-01"}, {"reason", reason}}));
  EXPECT_EQ(nm.spec.reason, reason);
  EXPECT_EQ(nm.spec.validation_error(), "");
}

// Accepted by the decoder on purpose: whether a node of that name exists is the webhook's
// question (it answers `node "..." not found in cluster`, see validator_hostile_input_test.cc).
TEST(HostileNodeMaintenanceTest, UnicodeAndOverlongNodeNamesDecode) {
  const std::string unicode =
      "n\xc3\xb6"
      "de-\xe3\x83\xaf\xe3\x83\xbc\xe3\x82\xab\xe3\x83\xbc";
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm, decode_spec({{"nodeName", unicode}}));
  EXPECT_EQ(nm.spec.node_name, unicode);
  EXPECT_EQ(nm.spec.validation_error(), "");

  const std::string overlong(10'000, 'n');
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance longer, decode_spec({{"nodeName", overlong}}));
  EXPECT_EQ(longer.spec.node_name, overlong);
}

TEST(HostileNodeMaintenanceTest, NodeNameOfTheWrongTypeFailsDecoding) {
  const Result<NodeMaintenance> nm = decode_spec({{"nodeName", boost::json::array{1, 2}}});
  ASSERT_FALSE(nm.has_value());
  EXPECT_EQ(nm.error().message, "spec.nodeName: expected a string, got array");
}

TEST(HostileNodeMaintenanceTest, NegativeDrainTimeout) {
  EXPECT_EQ(last_error_for({{"nodeName", "n"}, {"drainTimeout", "-90m"}}),
            "spec.drainTimeout: invalid duration \"-90m\": must not be negative");
}

// Go's syntax allows up to 2562047h47m16.854775807s; the controller's deadlines do not.
TEST(HostileNodeMaintenanceTest, DrainTimeoutBeyondTenYears) {
  EXPECT_EQ(last_error_for({{"nodeName", "n"}, {"drainTimeout", "2562047h"}}),
            "spec.drainTimeout: must be at most 87600h0m0s (10 years), got \"2562047h\"");
  EXPECT_EQ(last_error_for({{"nodeName", "n"}, {"drainTimeout", "87600h0.000000001s"}}),
            "spec.drainTimeout: must be at most 87600h0m0s (10 years), got "
            "\"87600h0.000000001s\"");
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance longest,
                       decode_spec({{"nodeName", "n"}, {"drainTimeout", "87600h"}}));
  EXPECT_EQ(longest.spec.drain_timeout, kMaxDrainTimeout);
  EXPECT_EQ(longest.spec.validation_error(), "");
}

TEST(HostileNodeMaintenanceTest, DrainTimeoutBeyondGosRange) {
  EXPECT_EQ(last_error_for({{"nodeName", "n"}, {"drainTimeout", "99999999999999999999h"}}),
            "spec.drainTimeout: invalid duration \"99999999999999999999h\": out of range (the "
            "longest duration is 2562047h47m16.854775807s)");
}

// A 10,000-character drainTimeout is quoted by its first 64 bytes only.
TEST(HostileNodeMaintenanceTest, OverlongDrainTimeoutIsQuotedShort) {
  const std::string text = std::string(9'999, '1') + "d";
  EXPECT_EQ(last_error_for({{"nodeName", "n"}, {"drainTimeout", text}}),
            "spec.drainTimeout: invalid duration \"" + std::string(64, '1') +
                "...\": out of range (the longest duration is 2562047h47m16.854775807s)");
}

TEST(HostileNodeMaintenanceTest, NegativeGracePeriod) {
  EXPECT_EQ(last_error_for({{"nodeName", "n"}, {"gracePeriodSeconds", -30}}),
            "spec.gracePeriodSeconds: must be at least 1 (0 would force-delete pods), got -30");
  EXPECT_EQ(last_error_for({{"nodeName", "n"},
                            {"gracePeriodSeconds", std::numeric_limits<std::int64_t>::min()}}),
            "spec.gracePeriodSeconds: must be at least 1 (0 would force-delete pods), got "
            "-9223372036854775808");
}

// Accepted on purpose: a long grace period is the pod owner's and the admin's business (the pod
// field terminationGracePeriodSeconds has no upper bound either); the drain code saturates when it
// does arithmetic with it (eviction_policy.h, kMaxTerminationGracePeriod).
TEST(HostileNodeMaintenanceTest, HugeGracePeriodIsAccepted) {
  ASSERT_OK_AND_ASSIGN(
      const NodeMaintenance nm,
      decode_spec(
          {{"nodeName", "n"}, {"gracePeriodSeconds", std::numeric_limits<std::int64_t>::max()}}));
  EXPECT_EQ(nm.spec.grace_period_seconds, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(nm.spec.validation_error(), "");
}

TEST(HostileNodeMaintenanceTest, GracePeriodBeyondInt64OrFractional) {
  const std::string beyond = last_error_for(
      {{"nodeName", "n"}, {"gracePeriodSeconds", std::uint64_t{9'223'372'036'854'775'808ULL}}});
  EXPECT_EQ(beyond, "spec.gracePeriodSeconds: 9223372036854775808 out of range for int64");
  EXPECT_EQ(last_error_for({{"nodeName", "n"}, {"gracePeriodSeconds", 1e300}}),
            "spec.gracePeriodSeconds: expected an integer, got number");
}

// Accepted on purpose: status counters are whatever was written to /status (the operator writes
// them; anyone with status write access may too). Huge or negative values decode, round-trip
// unchanged, and are overwritten by the next status the operator computes.
TEST(HostileNodeMaintenanceTest, HugeStatusCountersRoundTrip) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  boost::json::array pending;
  for (int i = 0; i < 10'000; ++i) pending.emplace_back("pod-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance nm,
                       decode_node_maintenance(boost::json::object{{"kind", "NodeMaintenance"},
                                                                   {"spec", {{"nodeName", "n"}}},
                                                                   {"status",
                                                                    {{"totalPods", kMax},
                                                                     {"evictionPods", kMin},
                                                                     {"drainProgress", kMax},
                                                                     {"totalpods", -1},
                                                                     {"errorOnLeaseCount", kMax},
                                                                     {"pendingPods", pending}}}}));
  EXPECT_EQ(nm.status.total_pods, kMax);
  EXPECT_EQ(nm.status.eviction_pods, kMin);
  EXPECT_EQ(nm.status.drain_progress, kMax);
  EXPECT_EQ(nm.status.totalpods, -1);
  EXPECT_EQ(nm.status.pending_pods.size(), 10'000U);
  ASSERT_OK_AND_ASSIGN(const NodeMaintenance again,
                       decode_node_maintenance(boost::json::object{
                           {"kind", "NodeMaintenance"}, {"status", encode_status(nm.status)}}));
  EXPECT_EQ(again.status, nm.status);
}

TEST(HostileNodeMaintenanceTest, StatusCounterBeyondInt64FailsDecoding) {
  const Result<NodeMaintenance> nm = decode_node_maintenance(
      boost::json::parse(R"({"status": {"totalPods": 18446744073709551615}})"));
  ASSERT_FALSE(nm.has_value());
  EXPECT_EQ(nm.error().message, "status.totalPods: 18446744073709551615 out of range for int64");
}

}  // namespace
}  // namespace nmo::op
