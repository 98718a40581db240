// Asynchronous output for log.h's loggers, for a process whose logging thread must never wait
// on its output (the operator: one io thread runs its Lease renewals and evictions).
//
//   const log::AsyncWriter async_log;   // held for the process's run
//
// Without an AsyncWriter every line is written synchronously by the thread that logs it (tests,
// the CLI). While one exists, lines go through a queue of bounded size to a writer thread of
// their own, so a slow or stalled stderr (a log reader that stops draining the pipe) holds up
// nobody: a full queue drops the line and counts it, and the writer reports the count in one
// warning line once it catches up (docs/design.md §6).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nmo::log {

/// While it exists, lines go through a queue of at most `max_queued_bytes` to a writer thread
/// (see above). Its destruction writes every queued line, then stops that thread; lines logged
/// from then on are written synchronously again. One at a time.
class AsyncWriter {
 public:
  static constexpr std::size_t kDefaultMaxQueuedBytes = std::size_t{1} << 20;
  explicit AsyncWriter(std::size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  ~AsyncWriter();
  AsyncWriter(const AsyncWriter&) = delete;
  AsyncWriter& operator=(const AsyncWriter&) = delete;
  AsyncWriter(AsyncWriter&&) = delete;
  AsyncWriter& operator=(AsyncWriter&&) = delete;
};

/// Lines an AsyncWriter dropped because its queue was full, since the process started.
[[nodiscard]] std::uint64_t dropped_lines();

}  // namespace nmo::log
