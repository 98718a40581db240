#include "test/chaos/support/chaos.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kube/api/time.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_process.h"
#include "test/e2e/support/subprocess.h"

namespace nmo::chaos {

bool full_run() {
  const char* full = std::getenv("NMO_CHAOS_FULL");
  return full != nullptr && std::string(full) == "1";
}

int iterations(int short_form, int full) {
  if (const char* forced = std::getenv("NMO_CHAOS_ITERATIONS"); forced != nullptr) {
    const int n = std::atoi(forced);
    if (n > 0) return n;
  }
  return full_run() ? full : short_form;
}

std::string seconds(std::chrono::duration<double> span) { return seconds(span.count()); }

std::string seconds(double value) { return fmt::format("{:.2f}", value); }

void report(const std::string& experiment, const std::vector<Figure>& figures) {
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  std::string line = "chaos: " + experiment + ":";
  boost::json::array pairs;
  for (const Figure& figure : figures) {
    line += " " + figure.name + "=" + figure.value;
    pairs.push_back(
        boost::json::array{boost::json::string(figure.name), boost::json::string(figure.value)});
  }
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
  ::testing::Test::RecordProperty("chaos", line);
  const char* path = std::getenv("NMO_CHAOS_REPORT");
  if (path == nullptr || *path == '\0') return;
  std::ofstream out(path, std::ios::app);
  out << boost::json::serialize(
             boost::json::object{{"experiment", experiment}, {"figures", std::move(pairs)}})
      << '\n';
  if (!out) ADD_FAILURE() << "cannot append the chaos report to " << path;
}

bool cluster_restart(const std::vector<std::string>& args) {
  std::vector<std::string> argv{(e2e::source_dir() / "hack" / "cluster-restart.sh").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const e2e::ProcessResult result = e2e::run_process(argv);
  EXPECT_TRUE(result.ok()) << "hack/cluster-restart.sh failed: " << result.err;
  return result.ok();
}

boost::json::value round_pod(const std::string& ns, const std::string& name,
                             const std::string& node, int round, int slow_delete_seconds) {
  std::vector<std::pair<std::string, std::string>> annotations;
  if (slow_delete_seconds > 0) annotations.emplace_back(e2e::kSlowDeleteAnnotation, "true");
  boost::json::value pod = boost::json::parse(
      e2e::pod_manifest(ns, name, node, annotations, std::max(slow_delete_seconds, 1)));
  pod.at("metadata").at("labels").as_object()["round"] = std::to_string(round);
  return pod;
}

std::optional<std::chrono::system_clock::time_point> instant(const std::string& text) {
  auto parsed = kube::parse_time(text);
  if (!parsed) return std::nullopt;
  return std::chrono::system_clock::time_point(*parsed);
}

std::vector<boost::json::object> log_records(const e2e::OperatorProcess& replica) {
  std::vector<boost::json::object> records;
  std::istringstream in(replica.log());
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() != '{') continue;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(line, ec);
    if (!ec && v.is_object()) records.push_back(std::move(v.as_object()));
  }
  return records;
}

std::string field(const boost::json::object& record, const char* key) {
  const boost::json::value* v = record.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double largest(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

}  // namespace nmo::chaos
