#include "runtime/upstream_flags.h"

#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"

namespace nmo::runtime {
namespace {

TEST(MapUpstreamFlagsTest, NothingGivenChangesNothing) {
  ASSERT_OK_AND_ASSIGN(const UpstreamFlagEffects effects, map_upstream_flags({}));
  EXPECT_EQ(effects, UpstreamFlagEffects{});
}

TEST(MapUpstreamFlagsTest, UpstreamsDeploymentArguments) {
  // --health-probe-bind-address=:8081 --metrics-bind-address=:8443 --leader-elect
  // --enable-http2=false: only the last is upstream's own.
  ASSERT_OK_AND_ASSIGN(const UpstreamFlagEffects effects,
                       map_upstream_flags({.enable_http2 = false}));
  EXPECT_EQ(effects.log_format, "");
  EXPECT_EQ(effects.verbosity, std::nullopt);
  EXPECT_EQ(effects.notes, std::vector<std::string>{
                               "--enable-http2=false: ignored, the servers speak HTTP/1.1 only"});
}

TEST(MapUpstreamFlagsTest, ZapFlagsBecomeFormatAndVerbosity) {
  ASSERT_OK_AND_ASSIGN(const UpstreamFlagEffects devel, map_upstream_flags({.zap_devel = true}));
  EXPECT_EQ(devel.log_format, "text");
  EXPECT_EQ(devel.verbosity, 1);
  ASSERT_OK_AND_ASSIGN(
      const UpstreamFlagEffects production,
      map_upstream_flags({.zap_devel = false, .zap_encoder = "json", .zap_log_level = "3"}));
  EXPECT_EQ(production.log_format, "json");
  EXPECT_EQ(production.verbosity, 3);
  EXPECT_EQ(production.notes,
            (std::vector<std::string>{"--zap-devel=false: JSON logs",
                                      "--zap-encoder=json: JSON logs (--log-format=json)",
                                      "--zap-log-level=3: -v 3"}));
  ASSERT_OK_AND_ASSIGN(const UpstreamFlagEffects console,
                       map_upstream_flags({.zap_encoder = "console", .zap_log_level = "error"}));
  EXPECT_EQ(console.log_format, "text");
  EXPECT_EQ(console.verbosity, 0);
}

TEST(MapUpstreamFlagsTest, AcceptedButIgnored) {
  ASSERT_OK_AND_ASSIGN(
      const UpstreamFlagEffects effects,
      map_upstream_flags({.zap_stacktrace_level = "panic", .zap_time_encoding = "epoch"}));
  EXPECT_EQ(
      effects.notes,
      (std::vector<std::string>{
          "--zap-stacktrace-level=panic: ignored, these logs carry no stack traces",
          "--zap-time-encoding=epoch: ignored, times are RFC 3339 with milliseconds in UTC"}));
}

TEST(MapUpstreamFlagsTest, ValuesZapRefusesAreRefusedNamingTheFlag) {
  const auto loud = map_upstream_flags({.zap_log_level = "loud"});
  ASSERT_FALSE(loud.has_value());
  EXPECT_EQ(loud.error().message,
            "--zap-log-level: \"loud\" is not debug, info, error, panic or an integer > 0");
  // controller-runtime's level flag has no dpanic (zap itself has).
  EXPECT_FALSE(map_upstream_flags({.zap_log_level = "dpanic"}).has_value());
  EXPECT_FALSE(map_upstream_flags({.zap_log_level = "0"}).has_value());
  EXPECT_FALSE(map_upstream_flags({.zap_log_level = "-2"}).has_value());
  EXPECT_FALSE(map_upstream_flags({.zap_log_level = "2x"}).has_value());
  const auto encoder = map_upstream_flags({.zap_encoder = "yaml"});
  ASSERT_FALSE(encoder.has_value());
  EXPECT_EQ(encoder.error().message, "--zap-encoder: \"yaml\" is not json or console");
  EXPECT_FALSE(map_upstream_flags({.zap_stacktrace_level = "warn"}).has_value());
  EXPECT_FALSE(map_upstream_flags({.zap_time_encoding = "unix"}).has_value());
  // "nano" is what upstream's help text says, but its flag takes "nanos" only.
  EXPECT_FALSE(map_upstream_flags({.zap_time_encoding = "nano"}).has_value());
}

// controller-runtime lowercases each zap value before reading it: upstream's manifests may
// spell them in any case.
TEST(MapUpstreamFlagsTest, ValuesAreReadInAnyCaseAsZapDoes) {
  ASSERT_OK_AND_ASSIGN(const UpstreamFlagEffects effects,
                       map_upstream_flags({.zap_encoder = "JSON",
                                           .zap_log_level = "Debug",
                                           .zap_stacktrace_level = "ERROR",
                                           .zap_time_encoding = "Nanos"}));
  EXPECT_EQ(effects.log_format, "json");
  EXPECT_EQ(effects.verbosity, 1);
  EXPECT_EQ(
      effects.notes,
      (std::vector<std::string>{
          "--zap-encoder=JSON: JSON logs (--log-format=json)", "--zap-log-level=Debug: -v 1",
          "--zap-stacktrace-level=ERROR: ignored, these logs carry no stack traces",
          "--zap-time-encoding=Nanos: ignored, times are RFC 3339 with milliseconds in UTC"}));
  ASSERT_OK_AND_ASSIGN(const UpstreamFlagEffects console,
                       map_upstream_flags({.zap_encoder = "Console", .zap_log_level = "INFO"}));
  EXPECT_EQ(console.log_format, "text");
  EXPECT_EQ(console.verbosity, 0);
}

}  // namespace
}  // namespace nmo::runtime
