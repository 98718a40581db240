#include "follow.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/maintenance_text.h"
#include "console.h"
#include "kube/api/time.h"
#include "kube/api/watch.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxPendingLines = 10;
// How often a terminal drawing is refreshed while nothing changes (its elapsed time moves on).
constexpr std::chrono::seconds kTick{1};
// The pause before watching again after the stream broke, and how long reconnecting may keep
// failing before the API server counts as gone (exit 4).
constexpr std::chrono::milliseconds kReconnectPause{500};
constexpr std::chrono::seconds kReconnectFor{30};
constexpr std::string_view kHideCursor = "\033[?25l";
constexpr std::string_view kShowCursor = "\033[?25h";

using kube::wall_now;

// The terminal's width in columns, 0 when unknown.
std::size_t terminal_width() {
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

json::value progress_json(const op::NodeMaintenance& nm, std::chrono::seconds elapsed) {
  json::array pending;
  for (const auto& ref : nm.status.pending_pods_refs) {
    pending.push_back(json::object{
        {"namespace", ref.namespace_},
        {"name", ref.name},
        {"reason", ref.reason ? std::string(op::to_string(*ref.reason)) : std::string()},
        {"message", ref.message}});
  }
  return json::object{{"name", nm.meta.name},
                      {"node", nm.spec.node_name},
                      {"phase", phase_text(nm)},
                      {"drainProgress", nm.status.drain_progress},
                      {"evictionPods", nm.status.eviction_pods},
                      {"totalPods", nm.status.total_pods},
                      {"pendingPods", std::move(pending)},
                      {"lastError", nm.status.last_error},
                      {"elapsedSeconds", elapsed.count()}};
}

// What follow() shares with its ticker and its signal handler, all on the one thread.
struct FollowState {
  FollowState(asio::any_io_executor executor, Session& s, std::string n, CommandOptions o)
      : session(s),
        name(std::move(n)),
        options(std::move(o)),
        started(Clock::now()),
        timer(executor),
        signals(executor, SIGINT, SIGTERM) {}

  Session& session;
  const std::string name;
  const CommandOptions options;
  const Clock::time_point started;

  std::optional<op::NodeMaintenance> shown;  // the last state drawn, after the high-water marks
  std::string uid;                           // the maintenance the marks belong to
  std::int64_t best_progress = 0;
  std::int64_t best_evicted = 0;
  std::string last_signature;  // what was last printed, to print changes only
  std::size_t drawn = 0;       // lines of the current terminal drawing
  bool cursor_hidden = false;
  std::optional<int> stopped;  // the exit status once --timeout passed or a signal came
  bool done = false;

  asio::steady_timer timer;
  asio::signal_set signals;
};

std::chrono::seconds elapsed_of(const FollowState& st, const op::NodeMaintenance& nm) {
  if (nm.meta.creation_timestamp) {
    return std::chrono::duration_cast<std::chrono::seconds>(wall_now() -
                                                            *nm.meta.creation_timestamp);
  }
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - st.started);
}

// Draws st.shown: redrawn in place on a terminal, printed when it changed otherwise.
void draw(FollowState& st) {
  const op::NodeMaintenance& nm = *st.shown;
  const std::chrono::seconds elapsed = elapsed_of(st, nm);
  std::vector<std::string> lines{progress_line(nm, elapsed)};
  for (auto& line : pending_lines(nm, kMaxPendingLines)) lines.push_back(std::move(line));
  std::string signature = fmt::format("{}|{}|{}|{}", phase_text(nm), nm.status.drain_progress,
                                      nm.status.eviction_pods, nm.status.total_pods);
  for (std::size_t i = 1; i < lines.size(); ++i) signature += "|" + lines[i];
  const bool changed = signature != st.last_signature;
  st.last_signature = std::move(signature);
  if (st.options.output.format != OutputFormat::kHuman) {
    if (changed) print(json::serialize(progress_json(nm, elapsed)) + "\n");
    return;
  }
  if (!st.options.tty) {
    if (!changed) return;
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    print(text);
    return;
  }
  std::string text;
  if (!st.cursor_hidden) {
    text += kHideCursor;
    st.cursor_hidden = true;
  }
  // Back to the first line of the previous drawing, and clear it and everything below.
  if (st.drawn > 0) text += fmt::format("\033[{}F\033[J", st.drawn);
  // Lines cut to the terminal's width, so none wraps and the count above stays right.
  const std::size_t width = terminal_width();
  for (const auto& line : lines) {
    text += (width > 1 && line.size() >= width ? line.substr(0, width - 1) : line) + "\n";
  }
  st.drawn = lines.size();
  print(text);
}

// Shows a new state of the maintenance, never with less progress than already shown.
void show(FollowState& st, op::NodeMaintenance nm) {
  if (nm.meta.uid != st.uid) {
    st.uid = nm.meta.uid;
    st.best_progress = 0;
    st.best_evicted = 0;
  }
  st.best_progress = std::max(st.best_progress, nm.status.drain_progress);
  st.best_evicted = std::max(st.best_evicted, nm.status.eviction_pods);
  nm.status.drain_progress = st.best_progress;
  nm.status.eviction_pods = st.best_evicted;
  st.shown = std::move(nm);
  draw(st);
}

// Ends the wait with `status`: whatever is in flight is cancelled, follow() returns it.
void stop(FollowState& st, int status) {
  if (st.stopped || st.done) return;
  st.stopped = status;
  st.session.client().shutdown();
}

// Refreshes the terminal drawing every kTick and stops the wait when --timeout passes.
asio::awaitable<void> tick(std::shared_ptr<FollowState> st) {
  for (;;) {
    Clock::time_point wake = Clock::now() + kTick;
    if (st->options.timeout) {
      wake = std::min(
          wake, st->started + std::chrono::duration_cast<Clock::duration>(*st->options.timeout));
    }
    st->timer.expires_at(wake);
    co_await st->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (st->done) co_return;
    if (st->options.timeout && Clock::now() - st->started >= *st->options.timeout) {
      stop(*st, kExitTimeout);
      co_return;
    }
    if (st->options.tty && st->options.output.format == OutputFormat::kHuman && st->shown) {
      draw(*st);
    }
  }
}

// The exit status for a state that ends the wait, after reporting it; std::nullopt otherwise.
std::optional<int> final_status(const FollowState& st) {
  if (!st.shown) return std::nullopt;
  if (st.shown->status.phase == op::Phase::kSucceeded) return kExitOk;
  if (st.shown->status.phase == op::Phase::kFailed) {
    return report(Failure{
        .message = "NodeMaintenance \"" + st.name + "\" failed: " + st.shown->status.last_error,
        .exit_code = kExitFailed});
  }
  return std::nullopt;
}

int finish(FollowState& st, int status) {
  st.done = true;
  st.timer.cancel();
  boost::system::error_code ignored;
  st.signals.cancel(ignored);
  if (st.cursor_hidden) print(std::string(kShowCursor));
  if (st.stopped == kExitTimeout && status == kExitTimeout) {
    return report(Failure{
        .message = fmt::format("timed out after {} waiting for NodeMaintenance \"{}\" (phase {})",
                               op::format_duration(*st.options.timeout), st.name,
                               st.shown ? phase_text(*st.shown) : "unknown"),
        .exit_code = kExitTimeout});
  }
  return status;
}

bool is_expired(const Error& error) {
  return error.code == ErrorCode::kExpired || error.code == ErrorCode::kGone;
}

// What to do after a watch attempt.
enum class Next { kWatchAgain, kReadAgain };

}  // namespace

asio::awaitable<int> follow(Session& session, std::string name, CommandOptions options) {
  auto executor = co_await asio::this_coro::executor;
  auto st = std::make_shared<FollowState>(executor, session, name, std::move(options));
  st->signals.async_wait([st](const boost::system::error_code& error, int signal_number) {
    if (!error) stop(*st, kExitSignalBase + signal_number);
  });
  asio::co_spawn(executor, tick(st), asio::detached);
  std::optional<Clock::time_point> failing_since;  // reconnecting has failed since then

  for (;;) {
    // Read the object: its state now and the version to watch from.
    auto found = co_await session.find_maintenance(name);
    if (st->stopped) co_return finish(*st, *st->stopped);
    if (!found) co_return finish(*st, report(found.failure()));
    if (!found->has_value()) {
      co_return finish(*st, report(Failure{.message = "NodeMaintenance \"" + name + "\" not found",
                                           .exit_code = kExitNotFound}));
    }
    show(*st, (*found)->nm);
    if (auto status = final_status(*st)) co_return finish(*st, *status);
    std::string version = (*found)->nm.meta.resource_version;

    Next next = Next::kWatchAgain;
    while (next == Next::kWatchAgain) {
      kube::WatchOptions watch_options;
      watch_options.field_selector = "metadata.name=" + name;
      watch_options.resource_version = version;
      std::string collection = maintenance_path();
      auto stream = co_await session.client().watch(collection, watch_options);
      if (st->stopped) co_return finish(*st, *st->stopped);
      std::optional<Error> broken;
      if (!stream) {
        if (is_expired(stream.error())) break;
        if (!is_unreachable(stream.error())) {
          co_return finish(*st, report(session.failure(stream.error())));
        }
        broken = stream.error();
      }
      while (!broken) {
        auto event = co_await (*stream)->next();
        if (st->stopped) co_return finish(*st, *st->stopped);
        if (!event) {
          if (is_expired(event.error())) {
            next = Next::kReadAgain;
          } else {
            broken = event.error();  // a broken or silent connection: watch again
          }
          break;
        }
        failing_since.reset();
        if (!event->has_value()) break;  // the server ended the watch: resume from `version`
        const kube::WatchEvent& ev = **event;
        if (std::string seen = kube::resource_version_of(ev.object); !seen.empty()) version = seen;
        if (ev.type == kube::WatchEventType::kBookmark) continue;
        if (ev.type == kube::WatchEventType::kDeleted) {
          co_return finish(*st,
                           report(Failure{.message = "NodeMaintenance \"" + name + "\" was deleted",
                                          .exit_code = kExitNotFound}));
        }
        auto nm = op::decode_node_maintenance(ev.object);
        if (!nm) co_return finish(*st, report(session.failure(nm.error())));
        show(*st, std::move(*nm));
        if (auto status = final_status(*st)) co_return finish(*st, *status);
      }
      if (broken) {
        if (!failing_since) failing_since = Clock::now();
        if (Clock::now() - *failing_since >= kReconnectFor) {
          co_return finish(*st, report(session.failure(*broken)));
        }
        co_await pause(kReconnectPause);
        if (st->stopped) co_return finish(*st, *st->stopped);
      }
    }
  }
}

asio::awaitable<void> pause(std::chrono::milliseconds interval) {
  asio::steady_timer timer(co_await asio::this_coro::executor, interval);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

}  // namespace nmo::cli
