// Text building blocks of the human output: aligned tables (kubectl's column style), ages
// ("45s", "5m", "2h"), elapsed times ("1m05s"), lines cut to a terminal's width, and JSON
// rendered as YAML for `-o yaml`.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

namespace nmo::cli {

// Rows under a header, each column as wide as its widest cell plus three spaces, the last
// column not padded, every line ending in '\n' (kubectl get's layout). Without the header
// (--no-headers) the columns are as wide as the rows need.
[[nodiscard]] std::string format_table(const std::vector<std::string>& header,
                                       const std::vector<std::vector<std::string>>& rows,
                                       bool with_header = true);

// kubectl's AGE column (duration.HumanDuration, simplified): "12s", "5m", "5m30s" (under 10
// minutes), "3h", "3h20m" (under 8 hours), "5d", "5d3h" (under 8 days), "40d", "2y". Negative
// durations (clock skew) read "0s".
[[nodiscard]] std::string format_age(std::chrono::seconds age);

// An elapsed time with seconds: "45s", "1m05s", "2h03m10s".
[[nodiscard]] std::string format_elapsed(std::chrono::seconds elapsed);

// `line` cut to at most `columns` characters for a terminal, never in the middle of a UTF-8
// character (the em dash of plan-status's header); each character counts as one column.
[[nodiscard]] std::string cut_to_columns(std::string_view line, std::size_t columns);

// `value` as a YAML document (block style, keys in the JSON's order, strings quoted when YAML
// would read them as something else), ending in '\n'.
[[nodiscard]] std::string to_yaml(const boost::json::value& value);

// `value` as indented JSON (two spaces, as kubectl -o json), ending in '\n'.
[[nodiscard]] std::string to_pretty_json(const boost::json::value& value);

}  // namespace nmo::cli
