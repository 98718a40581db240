#include "runtime/upstream_flags.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <span>
#include <string_view>
#include <system_error>

namespace nmo::runtime {
namespace {

// zap's flags read their names in any case (controller-runtime lowercases the value first).
std::string lowercase(std::string_view value) {
  std::string out(value);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool one_of(std::span<const std::string_view> allowed, std::string_view value) {
  return std::find(allowed.begin(), allowed.end(), lowercase(value)) != allowed.end();
}

Error invalid(const std::string& flag, const std::string& value, const std::string& allowed) {
  return Error(ErrorCode::kInvalid, flag + ": \"" + value + "\" is not " + allowed);
}

// --zap-log-level's verbosity: the level names controller-runtime's flag knows, or N for V(N)
// logs as it reads it.
Result<int> zap_level_verbosity(const std::string& level) {
  const std::string name = lowercase(level);
  if (name == "debug") return 1;
  if (name == "info" || name == "error" || name == "panic") return 0;
  int number = 0;
  const auto [end, error] = std::from_chars(level.data(), level.data() + level.size(), number);
  if (error == std::errc() && end == level.data() + level.size() && number > 0) return number;
  return invalid("--zap-log-level", level, "debug, info, error, panic or an integer > 0");
}

std::string shown(bool value) { return value ? "true" : "false"; }

constexpr std::array<std::string_view, 2> kZapEncoders{"json", "console"};
constexpr std::array<std::string_view, 3> kZapStacktraceLevels{"info", "error", "panic"};
constexpr std::array<std::string_view, 6> kZapTimeEncodings{"epoch",   "millis",  "nanos",
                                                            "iso8601", "rfc3339", "rfc3339nano"};

}  // namespace

Result<UpstreamFlagEffects> map_upstream_flags(const UpstreamFlags& flags) {
  UpstreamFlagEffects effects;
  if (flags.zap_devel) {
    if (*flags.zap_devel) {
      effects.log_format = "text";
      effects.verbosity = 1;
      effects.notes.push_back("--zap-devel=true: text logs at -v 1 (development mode)");
    } else {
      effects.log_format = "json";
      effects.notes.push_back("--zap-devel=false: JSON logs");
    }
  }
  if (!flags.zap_encoder.empty()) {
    if (!one_of(kZapEncoders, flags.zap_encoder)) {
      return invalid("--zap-encoder", flags.zap_encoder, "json or console");
    }
    effects.log_format = lowercase(flags.zap_encoder) == "console" ? "text" : "json";
    effects.notes.push_back("--zap-encoder=" + flags.zap_encoder + ": " +
                            (effects.log_format == "text" ? "text" : "JSON") +
                            " logs (--log-format=" + effects.log_format + ")");
  }
  if (!flags.zap_log_level.empty()) {
    NMO_TRY_ASSIGN(const int verbosity, zap_level_verbosity(flags.zap_log_level));
    effects.verbosity = verbosity;
    effects.notes.push_back("--zap-log-level=" + flags.zap_log_level + ": -v " +
                            std::to_string(verbosity));
  }
  if (!flags.zap_stacktrace_level.empty()) {
    if (!one_of(kZapStacktraceLevels, flags.zap_stacktrace_level)) {
      return invalid("--zap-stacktrace-level", flags.zap_stacktrace_level, "info, error or panic");
    }
    effects.notes.push_back("--zap-stacktrace-level=" + flags.zap_stacktrace_level +
                            ": ignored, these logs carry no stack traces");
  }
  if (!flags.zap_time_encoding.empty()) {
    if (!one_of(kZapTimeEncodings, flags.zap_time_encoding)) {
      return invalid("--zap-time-encoding", flags.zap_time_encoding,
                     "epoch, millis, nanos, iso8601, rfc3339 or rfc3339nano");
    }
    effects.notes.push_back("--zap-time-encoding=" + flags.zap_time_encoding +
                            ": ignored, times are RFC 3339 with milliseconds in UTC");
  }
  if (flags.enable_http2) {
    effects.notes.push_back("--enable-http2=" + shown(*flags.enable_http2) +
                            ": ignored, the servers speak HTTP/1.1 only");
  }
  return effects;
}

}  // namespace nmo::runtime
