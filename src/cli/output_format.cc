#include "cli/output_format.h"

#include <algorithm>
#include <string>

#include "operator/api/node_maintenance.h"

namespace nmo::cli {
namespace {

constexpr std::string_view kJsonPathPrefix = "jsonpath=";

std::string_view spelling(OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kYaml:
      return "yaml";
    case OutputFormat::kName:
      return "name";
    case OutputFormat::kWide:
      return "wide";
    case OutputFormat::kJsonPath:
      return "jsonpath=TEMPLATE";
    case OutputFormat::kHuman:
      break;
  }
  return "";
}

}  // namespace

Result<Output> parse_output(std::string_view flag, const std::vector<OutputFormat>& accepted) {
  Output output;
  if (flag.empty()) return output;
  std::optional<OutputFormat> asked;
  if (flag.starts_with(kJsonPathPrefix)) asked = OutputFormat::kJsonPath;
  for (const OutputFormat format :
       {OutputFormat::kJson, OutputFormat::kYaml, OutputFormat::kName, OutputFormat::kWide}) {
    if (spelling(format) == flag) asked = format;
  }
  if (!asked || std::find(accepted.begin(), accepted.end(), *asked) == accepted.end()) {
    std::string names;
    for (const OutputFormat format : accepted) {
      if (!names.empty()) names += ", ";
      names += spelling(format);
    }
    return Error(ErrorCode::kInvalid,
                 "unknown output format \"" + std::string(flag) + "\" (accepted: " + names + ")");
  }
  output.format = *asked;
  if (output.format == OutputFormat::kJsonPath) {
    Result<JsonPath> path = JsonPath::parse(flag.substr(kJsonPathPrefix.size()));
    if (!path) {
      return Error(ErrorCode::kInvalid, "-o " + std::string(flag) + ": " + path.error().message);
    }
    output.jsonpath = std::move(*path);
  }
  return output;
}

std::string resource_name(std::string_view name) {
  return std::string(op::kPlural).substr(0, op::kPlural.size() - 1) + "." +
         std::string(op::kGroup) + "/" + std::string(name);
}

}  // namespace nmo::cli
