// Structured logging: one line per event, as JSON (in-cluster default) or as text for humans,
// with stable keys (`ts`, `level`, `msg`, then the fields: `controller`, `nodemaintenance`,
// `node`, `pod`, ...). A thin facade over spdlog, which only writes the finished lines.
//
//   log::Logger logger = log::root().with({{"controller", "nodemaintenance"}});
//   logger.info("cordoned node", {{"node", node}, {"taints", 2}});
//   logger.debug(1, "lease renewed", {{"node", node}});   // shown with -v=1 and above
//
// Verbosity follows klog: info/warning/error always show; debug(v, ...) shows when the
// configured verbosity is >= v.
//
// Threading: configure() and set_writer() are meant for start-up and tests; every Logger
// method may be called from any thread at any time (lines never interleave).
#pragma once

#include <concepts>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nmo::log {

enum class Format { kJson, kText };

/// One key/value pair of a log line. Numbers and booleans stay unquoted in JSON.
struct Field {
  Field(std::string_view field_key, std::string_view field_value)
      : key(field_key), value(field_value) {}
  Field(std::string_view field_key, const char* field_value) : key(field_key), value(field_value) {}
  Field(std::string_view field_key, const std::string& field_value)
      : key(field_key), value(field_value) {}
  Field(std::string_view field_key, bool field_value)
      : key(field_key), value(field_value ? "true" : "false"), raw(true) {}
  template <typename N>
  requires(std::integral<N> && !std::same_as<N, bool>) ||
      std::floating_point<N> Field(std::string_view field_key, N field_value)
      : key(field_key),
  value(std::to_string(field_value)), raw(true) {}

  std::string key;
  std::string value;
  bool raw = false;  // written without quotes in JSON (numbers, booleans)
};

/// Sets the output format and verbosity for every logger.
void configure(Format format, int verbosity);

/// Replaces where finished lines go (default: stderr). For tests; pass {} to restore.
void set_writer(std::function<void(std::string_view line)> writer);

/// A logger with fields bound to every line it writes. Cheap to copy.
class Logger {
 public:
  Logger() = default;

  /// A logger that adds `fields` (after this logger's own) to every line.
  [[nodiscard]] Logger with(std::initializer_list<Field> fields) const;
  /// The same for fields chosen at run time (a decision's log note).
  [[nodiscard]] Logger with(const std::vector<Field>& fields) const;

  void error(std::string_view msg, std::initializer_list<Field> fields = {}) const;
  void warn(std::string_view msg, std::initializer_list<Field> fields = {}) const;
  void info(std::string_view msg, std::initializer_list<Field> fields = {}) const;
  /// Written only when the configured verbosity is at least `v` (v >= 1).
  void debug(int v, std::string_view msg, std::initializer_list<Field> fields = {}) const;

  /// Whether debug(v, ...) would write anything; guards expensive field building.
  [[nodiscard]] static bool enabled(int v);

 private:
  void write(std::string_view level, std::string_view msg,
             std::initializer_list<Field> fields) const;
  template <typename Iterator>
  Logger with_range(Iterator first, Iterator last) const;

  std::vector<Field> fields_;
};

/// The logger without bound fields.
const Logger& root();

/// Formats one line without writing it (exposed for tests and benchmarks).
std::string format_line(Format format, std::string_view timestamp, std::string_view level,
                        std::string_view msg, const std::vector<Field>& bound,
                        std::initializer_list<Field> fields);

}  // namespace nmo::log
