// UpstreamFlags: the flags a controller-runtime operator's manifests pass that mean something
// else here, so that upstream NMO's Deployment and CSV run this binary unchanged: the zap logger's
// options (--zap-devel, --zap-encoder, --zap-log-level, --zap-stacktrace-level,
// --zap-time-encoding) and --enable-http2. map_upstream_flags() turns the ones given into our log
// format and verbosity, and says for each what it does here (the manager logs that once):
//
//   --zap-devel=true          text logs, -v 1 (controller-runtime's development mode)
//   --zap-devel=false         JSON logs
//   --zap-encoder=console     --log-format=text; json: --log-format=json
//   --zap-log-level=debug     -v 1; info, error, panic: -v 0; N > 0: -v N
//   --zap-stacktrace-level    accepted, ignored: these logs carry no stack traces
//   --zap-time-encoding       accepted, ignored: times are RFC 3339 with milliseconds, UTC
//   --enable-http2            accepted, ignored: the servers speak HTTP/1.1 only
//
// Our own --log-format and -v, when given, win over the zap flags.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace nmo::runtime {

// The values given; empty / std::nullopt for a flag not given.
struct UpstreamFlags {
  std::optional<bool> zap_devel;
  std::string zap_encoder;           // json | console
  std::string zap_log_level;         // debug | info | error | panic | an integer > 0
  std::string zap_stacktrace_level;  // info | error | panic
  std::string zap_time_encoding;     // epoch | millis | nanos | iso8601 | rfc3339 | rfc3339nano
  std::optional<bool> enable_http2;
};

// What the given flags make of the logging: the format ("json", "text", or "" for no change) and
// the verbosity (std::nullopt: no change), and one line per flag given saying what it does here,
// e.g. "--zap-encoder=console: text logs (--log-format=text)".
struct UpstreamFlagEffects {
  std::string log_format;
  std::optional<int> verbosity;
  std::vector<std::string> notes;

  friend bool operator==(const UpstreamFlagEffects&, const UpstreamFlagEffects&) = default;
};

// The effects of `flags`. ErrorCode::kInvalid for a value outside the sets above, naming the flag:
// `--zap-log-level: "loud" is not debug, info, error, panic or an integer > 0`.
[[nodiscard]] Result<UpstreamFlagEffects> map_upstream_flags(const UpstreamFlags& flags);

}  // namespace nmo::runtime
