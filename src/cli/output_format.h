// The -o/--output flag of kubectl-maintenance, read as kubectl reads it: json, yaml, name, wide,
// jsonpath=TEMPLATE (jsonpath.h). Each command accepts its own subset; an unknown format is a
// usage error naming the accepted ones.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cli/jsonpath.h"

namespace nmo::cli {

enum class OutputFormat { kHuman, kJson, kYaml, kName, kWide, kJsonPath };

struct Output {
  OutputFormat format = OutputFormat::kHuman;
  std::optional<JsonPath> jsonpath;  // set exactly for kJsonPath
};

// The output `flag` asks for ("" is the human form), when it is one of `accepted`. Errors
// (kInvalid), e.g.
//   unknown output format "xml" (accepted: json, yaml, name, wide, jsonpath=TEMPLATE)
//   -o jsonpath={.items: unclosed action at byte 0
[[nodiscard]] Result<Output> parse_output(std::string_view flag,
                                          const std::vector<OutputFormat>& accepted);

// The kubectl name of one NodeMaintenance for -o name:
// "nodemaintenance.nodemaintenance.medik8s.io/<name>".
[[nodiscard]] std::string resource_name(std::string_view name);

}  // namespace nmo::cli
