#include "cli/output_format.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace nmo::cli {
namespace {

const std::vector<OutputFormat> kListFormats = {OutputFormat::kJson, OutputFormat::kYaml,
                                                OutputFormat::kName, OutputFormat::kWide,
                                                OutputFormat::kJsonPath};

std::string refused(std::string_view flag, const std::vector<OutputFormat>& accepted) {
  auto output = parse_output(flag, accepted);
  return output ? "<accepted>" : output.error().message;
}

TEST(ParseOutputTest, KubectlSpellings) {
  EXPECT_EQ(parse_output("", kListFormats)->format, OutputFormat::kHuman);
  EXPECT_EQ(parse_output("json", kListFormats)->format, OutputFormat::kJson);
  EXPECT_EQ(parse_output("yaml", kListFormats)->format, OutputFormat::kYaml);
  EXPECT_EQ(parse_output("name", kListFormats)->format, OutputFormat::kName);
  EXPECT_EQ(parse_output("wide", kListFormats)->format, OutputFormat::kWide);
  auto path = parse_output("jsonpath={.kind}", kListFormats);
  ASSERT_TRUE(path);
  EXPECT_EQ(path->format, OutputFormat::kJsonPath);
  EXPECT_EQ(path->jsonpath->render(boost::json::parse(R"({"kind": "K"})")), "K");
}

TEST(ParseOutputTest, UnknownFormatsNameTheAcceptedOnes) {
  EXPECT_EQ(refused("xml", kListFormats),
            R"(unknown output format "xml" (accepted: json, yaml, name, wide, jsonpath=TEMPLATE))");
  EXPECT_EQ(refused("wide", {OutputFormat::kJson, OutputFormat::kYaml}),
            R"(unknown output format "wide" (accepted: json, yaml))");
  EXPECT_EQ(refused("jsonpath={.items", kListFormats),
            "-o jsonpath={.items: unclosed action at byte 0");
}

TEST(ResourceNameTest, KubectlsTypeSlashName) {
  EXPECT_EQ(resource_name("m1"), "nodemaintenance.nodemaintenance.medik8s.io/m1");
}

}  // namespace
}  // namespace nmo::cli
