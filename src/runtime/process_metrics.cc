#include "runtime/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

namespace nmo::runtime {
namespace {

// Splits `text` at runs of spaces.
std::vector<std::string_view> fields_of(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t start = text.find_first_not_of(" \n", at);
    if (start == std::string_view::npos) break;
    const std::size_t end = text.find_first_of(" \n", start);
    fields.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    at = end == std::string_view::npos ? text.size() : end;
  }
  return fields;
}

std::optional<double> number(std::string_view text) {
  unsigned long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return static_cast<double>(value);
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

prometheus::MetricFamily family(std::string name, std::string help, prometheus::MetricType type,
                                double value) {
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return prometheus::MetricFamily{std::move(name), std::move(help), type, {metric}};
}

}  // namespace

std::optional<ProcessStats> parse_proc_stat(std::string_view stat, long ticks_per_second,
                                            long page_size, double boot_time) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are counted
  // from the last ')'. Index 0 below is field 3 (state) of proc(5).
  const std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0 || page_size <= 0) {
    return std::nullopt;
  }
  const std::vector<std::string_view> fields = fields_of(stat.substr(close + 1));
  constexpr std::size_t kUtime = 11;      // field 14
  constexpr std::size_t kStime = 12;      // field 15
  constexpr std::size_t kStartTime = 19;  // field 22, in ticks since boot
  constexpr std::size_t kVsize = 20;      // field 23, bytes
  constexpr std::size_t kRss = 21;        // field 24, pages
  if (fields.size() <= kRss) return std::nullopt;
  const auto utime = number(fields[kUtime]);
  const auto stime = number(fields[kStime]);
  const auto start = number(fields[kStartTime]);
  const auto vsize = number(fields[kVsize]);
  const auto rss = number(fields[kRss]);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  const auto ticks = static_cast<double>(ticks_per_second);
  ProcessStats stats;
  stats.cpu_seconds = (*utime + *stime) / ticks;
  stats.start_time_seconds = boot_time + *start / ticks;
  stats.virtual_bytes = *vsize;
  stats.resident_bytes = *rss * static_cast<double>(page_size);
  return stats;
}

std::optional<double> parse_boot_time(std::string_view proc_stat) {
  constexpr std::string_view kKey = "btime ";
  std::size_t at = proc_stat.rfind(std::string("\n") + std::string(kKey));
  if (at != std::string_view::npos) {
    ++at;
  } else if (proc_stat.substr(0, kKey.size()) == kKey) {
    at = 0;
  } else {
    return std::nullopt;
  }
  std::string_view rest = proc_stat.substr(at + kKey.size());
  rest = rest.substr(0, rest.find('\n'));
  return number(rest);
}

std::optional<ProcessStats> read_process_stats() {
  const std::string stat = read_file("/proc/self/stat");
  const auto boot = parse_boot_time(read_file("/proc/stat"));
  if (stat.empty() || !boot) return std::nullopt;
  auto stats = parse_proc_stat(stat, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), *boot);
  if (!stats) return std::nullopt;
  std::error_code ec;
  double fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  // The iterator's own descriptor was open while counting.
  stats->open_fds = fds > 0 ? fds - 1 : 0;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    stats->max_fds = static_cast<double>(limit.rlim_cur);
  }
  return stats;
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  const auto stats = read_process_stats();
  if (!stats) return {};
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> families{
      family("process_cpu_seconds_total",
             "CPU time (user and system) used by this process, in seconds.", MetricType::Counter,
             stats->cpu_seconds),
      family("process_open_fds", "File descriptors this process has open.", MetricType::Gauge,
             stats->open_fds),
      family("process_resident_memory_bytes", "Resident set size of this process, in bytes.",
             MetricType::Gauge, stats->resident_bytes),
      family("process_start_time_seconds", "When this process started, as Unix time in seconds.",
             MetricType::Gauge, stats->start_time_seconds),
      family("process_virtual_memory_bytes", "Virtual memory size of this process, in bytes.",
             MetricType::Gauge, stats->virtual_bytes),
  };
  if (stats->max_fds) {
    families.push_back(family("process_max_fds",
                              "The most file descriptors this process may open (soft limit).",
                              MetricType::Gauge, *stats->max_fds));
  }
  return families;
}

}  // namespace nmo::runtime
