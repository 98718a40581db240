#include "base/log.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "base/check.h"
#include "base/log_async.h"

namespace nmo::log {
namespace {

std::atomic<int> g_verbosity{0};
std::atomic<Format> g_format{Format::kText};

// The writer is swapped only at start-up or in tests; a mutex keeps that simple and also
// serialises custom writers.
std::mutex g_writer_mu;
std::function<void(std::string_view)> g_writer;  // guarded by g_writer_mu

spdlog::logger& stderr_logger() {
  static spdlog::logger logger = [] {
    spdlog::logger l("nmo", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l.set_pattern("%v");
    return l;
  }();
  return logger;
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// A raw (number) field as JSON. std::to_string spells NaN and the infinities "nan", "-nan",
// "inf" and "-inf", which JSON has no number for: they become the strings "NaN", "+Inf" and
// "-Inf" (Prometheus' spelling), so every line stays valid JSON.
std::string json_number(const std::string& value) {
  if (value == "nan" || value == "-nan") return R"("NaN")";
  if (value == "inf") return R"("+Inf")";
  if (value == "-inf") return R"("-Inf")";
  return value;
}

bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (const char c : s) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      return true;
    }
  }
  return false;
}

void append_field(Format format, std::string& out, const Field& f) {
  if (format == Format::kJson) {
    out.push_back(',');
    append_json_string(out, f.key);
    out.push_back(':');
    if (f.raw) {
      out += json_number(f.value);
    } else {
      append_json_string(out, f.value);
    }
    return;
  }
  out.push_back(' ');
  out += f.key;
  out.push_back('=');
  if (needs_quotes(f.value)) {
    append_json_string(out, f.value);
  } else {
    out += f.value;
  }
}

std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::time_point_cast<std::chrono::milliseconds>(now);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", std::chrono::floor<std::chrono::seconds>(ms),
                     ms.time_since_epoch().count() % 1000);
}

// Writes one finished line where lines go now (the caller's thread, or the async writer's).
void emit(std::string_view line) {
  const std::lock_guard lock(g_writer_mu);
  if (g_writer) {
    g_writer(line);
  } else {
    stderr_logger().info(line);
  }
}

std::atomic<std::uint64_t> g_dropped{0};

// The queue between the loggers and the AsyncWriter's thread. Never destroyed, so that a
// thread logging while an AsyncWriter goes away never touches freed memory (it finds `running`
// false and writes synchronously), and no joinable thread is destroyed at exit.
struct AsyncQueue {
  std::mutex mu;
  std::condition_variable wake;
  bool running = false;                  // guarded by mu
  bool stopping = false;                 // guarded by mu
  std::size_t max_bytes = 0;             // guarded by mu
  std::size_t bytes = 0;                 // guarded by mu
  std::deque<std::string> lines;         // guarded by mu
  std::uint64_t dropped_unreported = 0;  // guarded by mu
  std::thread writer;
};

AsyncQueue& async_queue() {
  static AsyncQueue& queue = *new AsyncQueue;  // never destroyed, see above
  return queue;
}

// Queues the line when an AsyncWriter runs (dropping it when the queue is full); false when
// none runs, and the caller writes it itself.
bool enqueue(std::string& line) {
  AsyncQueue& q = async_queue();
  const std::lock_guard lock(q.mu);
  if (!q.running) return false;
  if (q.bytes + line.size() > q.max_bytes) {
    ++q.dropped_unreported;
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  q.bytes += line.size();
  q.lines.push_back(std::move(line));
  q.wake.notify_one();
  return true;
}

void write_queued_lines(AsyncQueue& q) {
  std::unique_lock lock(q.mu);
  for (;;) {
    q.wake.wait(lock, [&q] { return q.stopping || !q.lines.empty() || q.dropped_unreported > 0; });
    if (q.stopping && q.lines.empty() && q.dropped_unreported == 0) return;
    std::deque<std::string> batch;
    batch.swap(q.lines);
    q.bytes = 0;
    const std::uint64_t dropped = std::exchange(q.dropped_unreported, 0);
    lock.unlock();
    for (const std::string& line : batch) emit(line);
    if (dropped > 0) {
      emit(format_line(g_format.load(std::memory_order_relaxed), now_rfc3339(), "warn",
                       "log lines dropped: the log output did not keep up", {},
                       {{"dropped", dropped}, {"dropped_total", dropped_lines()}}));
    }
    lock.lock();
  }
}

}  // namespace

void configure(Format format, int verbosity) {
  g_format.store(format);
  g_verbosity.store(verbosity);
}

void set_writer(std::function<void(std::string_view line)> writer) {
  const std::lock_guard lock(g_writer_mu);
  g_writer = std::move(writer);
}

std::string format_line(Format format, std::string_view timestamp, std::string_view level,
                        std::string_view msg, const std::vector<Field>& bound,
                        std::initializer_list<Field> fields) {
  std::string out;
  out.reserve(128);
  if (format == Format::kJson) {
    out += R"({"ts":)";
    append_json_string(out, timestamp);
    out += R"(,"level":)";
    append_json_string(out, level);
    out += R"(,"msg":)";
    append_json_string(out, msg);
  } else {
    out += timestamp;
    out.push_back(' ');
    out += fmt::format("{:<5}", level);
    out.push_back(' ');
    out += msg;
  }
  for (const auto& f : bound) append_field(format, out, f);
  for (const auto& f : fields) append_field(format, out, f);
  if (format == Format::kJson) out.push_back('}');
  return out;
}

template <typename Iterator>
Logger Logger::with_range(Iterator first, Iterator last) const {
  Logger copy = *this;
  copy.fields_.insert(copy.fields_.end(), first, last);
  return copy;
}

Logger Logger::with(std::initializer_list<Field> fields) const {
  return with_range(fields.begin(), fields.end());
}

Logger Logger::with(const std::vector<Field>& fields) const {
  return with_range(fields.begin(), fields.end());
}

void Logger::error(std::string_view msg, std::initializer_list<Field> fields) const {
  write("error", msg, fields);
}
void Logger::warn(std::string_view msg, std::initializer_list<Field> fields) const {
  write("warn", msg, fields);
}
void Logger::info(std::string_view msg, std::initializer_list<Field> fields) const {
  write("info", msg, fields);
}
void Logger::debug(int v, std::string_view msg, std::initializer_list<Field> fields) const {
  if (enabled(v)) write("debug", msg, fields);
}

bool Logger::enabled(int v) { return g_verbosity.load(std::memory_order_relaxed) >= v; }

void Logger::write(std::string_view level, std::string_view msg,
                   std::initializer_list<Field> fields) const {
  std::string line = format_line(g_format.load(std::memory_order_relaxed), now_rfc3339(), level,
                                 msg, fields_, fields);
  if (!enqueue(line)) emit(line);
}

AsyncWriter::AsyncWriter(std::size_t max_queued_bytes) {
  AsyncQueue& q = async_queue();
  const std::lock_guard lock(q.mu);
  NMO_CHECK(!q.running && !q.writer.joinable(), "one log::AsyncWriter at a time");
  q.running = true;
  q.stopping = false;
  q.max_bytes = max_queued_bytes;
  q.writer = std::thread([&q] { write_queued_lines(q); });
}

AsyncWriter::~AsyncWriter() {
  AsyncQueue& q = async_queue();
  {
    const std::lock_guard lock(q.mu);
    q.running = false;  // from now on loggers write synchronously
    q.stopping = true;
    q.wake.notify_one();
  }
  q.writer.join();  // after every queued line is written
}

std::uint64_t dropped_lines() { return g_dropped.load(std::memory_order_relaxed); }

const Logger& root() {
  static const Logger logger;
  return logger;
}

}  // namespace nmo::log
