// Following one NodeMaintenance until it ends, for `watch` and `start --wait`: its progress on a
// watch stream (resumed from the last resourceVersion when the stream ends or breaks, read
// afresh when that version has expired: 410), drawn as a progress bar redrawn in place on a
// terminal, as one plain line per change otherwise, or as JSON lines with -o json.
//
// The bar never goes backwards: the percentage and the evicted count shown are the highest seen
// for the maintenance. On a terminal the cursor is hidden while drawing and shown again however
// the command ends, Ctrl-C (SIGINT) and SIGTERM included (exit 130 / 143, as a shell reports).
//
// Threading: awaited on the io_context's single thread.
#pragma once

#include <chrono>
#include <string>

#include "commands.h"
#include "http/asio.h"
#include "session.h"

namespace nmo::cli {

// Exit 0 when it Succeeded, 1 when it Failed, 3 when it is deleted or missing, 5 when
// options.timeout passed first, 128 + the signal when interrupted.
asio::awaitable<int> follow(Session& session, std::string name, CommandOptions options);

// Waits `interval` on the calling coroutine's executor (polls and reconnects).
asio::awaitable<void> pause(std::chrono::milliseconds interval);

}  // namespace nmo::cli
