// Following one object until it ends: a NodeMaintenance for `watch` and `start --wait`, a
// MaintenancePlan for `plan-status --watch` (the kinds are in followed.h). The object is followed
// on a watch stream (resumed from the last resourceVersion when the stream ends or breaks, read
// afresh when that version has expired: 410; for 30 s of failing reconnects, then exit 4) and
// drawn in place on a terminal, as one block of plain lines per change otherwise, or as one JSON
// line per change with -o json.
//
// A NodeMaintenance's bar never goes backwards: the percentage and the evicted count shown are
// the highest seen for the maintenance. On a terminal the cursor is hidden while drawing and
// shown again however the command ends, Ctrl-C (SIGINT) and SIGTERM included (exit 130 / 143, as
// a shell reports).
//
// Threading: awaited on the io_context's single thread.
#pragma once

#include <chrono>
#include <string>

#include "commands.h"
#include "http/asio.h"
#include "session.h"

namespace nmo::cli {

// The NodeMaintenance `name`. Exit 0 when it Succeeded, 1 when it Failed, 3 when it is deleted
// or missing, 5 when options.timeout passed first, 128 + the signal when interrupted.
asio::awaitable<int> follow(Session& session, std::string name, CommandOptions options);

// The MaintenancePlan `name`, with the same exits; Paused and WaitingForWindow go on.
asio::awaitable<int> follow_plan(Session& session, std::string name, CommandOptions options);

// Waits `interval` on the calling coroutine's executor (polls and reconnects).
asio::awaitable<void> pause(std::chrono::milliseconds interval);

}  // namespace nmo::cli
