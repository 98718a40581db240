// The process_* series of Prometheus' Go and Python clients, read from /proc at scrape time:
//   process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//   process_start_time_seconds, process_open_fds, process_max_fds.
// On a system without /proc the series are left out rather than reported as 0.
//
// Threading: parse_* are pure; ProcessCollector::Collect() may run on any thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace nmo::runtime {

/// What /proc says about one process.
struct ProcessStats {
  double cpu_seconds = 0;         // user + system time
  double resident_bytes = 0;      // RSS
  double virtual_bytes = 0;       // VSZ
  double start_time_seconds = 0;  // Unix time the process started
  double open_fds = 0;
  std::optional<double> max_fds;  // the soft RLIMIT_NOFILE; unset when unlimited
};

/// Fills cpu_seconds, virtual_bytes, resident_bytes and start_time_seconds from the text of
/// /proc/<pid>/stat, given the clock ticks per second, the page size and the boot time (btime of
/// /proc/stat). std::nullopt when the text is not a stat line.
[[nodiscard]] std::optional<ProcessStats> parse_proc_stat(std::string_view stat,
                                                          long ticks_per_second, long page_size,
                                                          double boot_time);

/// btime from the text of /proc/stat; std::nullopt when absent.
[[nodiscard]] std::optional<double> parse_boot_time(std::string_view proc_stat);

/// This process' figures now; std::nullopt without /proc.
[[nodiscard]] std::optional<ProcessStats> read_process_stats();

/// Collects the process_* families of this process.
class ProcessCollector : public prometheus::Collectable {
 public:
  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace nmo::runtime
