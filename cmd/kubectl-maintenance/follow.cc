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
#include "cli/watch_frame.h"
#include "console.h"
#include "followed.h"
#include "kube/api/watch.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// How often a terminal drawing is refreshed while nothing changes (its elapsed time moves on).
constexpr std::chrono::seconds kTick{1};
// The pause before watching again after the stream broke, and how long reconnecting may keep
// failing before the API server counts as gone (exit 4).
constexpr std::chrono::milliseconds kReconnectPause{500};
constexpr std::chrono::seconds kReconnectFor{30};
constexpr std::string_view kHideCursor = "\033[?25l";
constexpr std::string_view kShowCursor = "\033[?25h";

// The terminal's size (0 columns and rows when unknown).
winsize terminal_size() {
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) return winsize{};
  return size;
}

// What follow_object() shares with its ticker and its signal handler, all on the one thread.
struct FollowState {
  FollowState(const asio::any_io_executor& executor, Session& s, std::string n,
              std::unique_ptr<Followed> f, CommandOptions o)
      : session(s),
        name(std::move(n)),
        followed(std::move(f)),
        options(std::move(o)),
        started(Clock::now()),
        timer(executor),
        signals(executor, SIGINT, SIGTERM) {}

  Session& session;
  const std::string name;
  const std::unique_ptr<Followed> followed;  // the object, as last seen
  const CommandOptions options;
  const Clock::time_point started;

  bool shown = false;          // the followed object holds a state, drawn
  std::string last_signature;  // what was last printed, to print changes only
  std::size_t drawn = 0;       // lines of the current terminal drawing
  bool cursor_hidden = false;
  std::optional<int> stopped;  // the exit status once --timeout passed or a signal came
  bool done = false;

  asio::steady_timer timer;
  asio::signal_set signals;
};

// Draws the followed object: redrawn in place on a terminal, printed when it changed otherwise.
void draw(FollowState& st) {
  const auto following =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - st.started);
  Frame frame = st.followed->frame(following);
  const bool changed = frame.signature != st.last_signature;
  st.last_signature = std::move(frame.signature);
  if (st.options.output.format != OutputFormat::kHuman) {
    if (changed) print(json::serialize(st.followed->json_line(following)) + "\n");
    return;
  }
  if (!st.options.tty) {
    if (!changed) return;
    std::string text;
    for (const auto& line : frame.lines) text += line + "\n";
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
  const winsize size = terminal_size();
  const std::vector<std::string> lines =
      fit_to_terminal(std::move(frame.lines), size.ws_col, size.ws_row);
  for (const auto& line : lines) text += line + "\n";
  st.drawn = lines.size();
  print(text);
}

// Draws the state the followed object has just taken.
void show(FollowState& st) {
  st.shown = true;
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

int finish(FollowState& st, int status) {
  st.done = true;
  st.timer.cancel();
  boost::system::error_code ignored;
  st.signals.cancel(ignored);
  if (st.cursor_hidden) print(std::string(kShowCursor));
  if (st.stopped == kExitTimeout && status == kExitTimeout) {
    return report(Failure{
        .message = fmt::format("timed out after {} waiting for {} \"{}\" (phase {})",
                               op::format_duration(*st.options.timeout), st.followed->kind(),
                               st.name, st.shown ? st.followed->phase() : "unknown"),
        .exit_code = kExitTimeout});
  }
  return status;
}

bool is_expired(const Error& error) {
  return error.code == ErrorCode::kExpired || error.code == ErrorCode::kGone;
}

// What to do after a watch attempt.
enum class Next { kWatchAgain, kReadAgain };

// Follows `followed`, the object `name`, until it ends (follow.h).
asio::awaitable<int> follow_object(Session& session, std::string name,
                                   std::unique_ptr<Followed> followed, CommandOptions options) {
  auto executor = co_await asio::this_coro::executor;
  auto st = std::make_shared<FollowState>(executor, session, name, std::move(followed),
                                          std::move(options));
  Followed& object = *st->followed;
  st->signals.async_wait([st](const boost::system::error_code& error, int signal_number) {
    if (!error) stop(*st, kExitSignalBase + signal_number);
  });
  asio::co_spawn(executor, tick(st), asio::detached);
  std::optional<Clock::time_point> failing_since;  // reconnecting has failed since then

  for (;;) {
    // Read the object: its state now and the version to watch from.
    auto found = co_await object.read(session, name);
    if (st->stopped) co_return finish(*st, *st->stopped);
    if (!found) co_return finish(*st, report(found.failure()));
    show(*st);
    if (auto status = object.final_status()) co_return finish(*st, *status);
    std::string version = object.resource_version();

    Next next = Next::kWatchAgain;
    while (next == Next::kWatchAgain) {
      kube::WatchOptions watch_options;
      watch_options.field_selector = "metadata.name=" + name;
      watch_options.resource_version = version;
      std::string collection = object.collection();
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
          co_return finish(
              *st,
              report(Failure{.message = fmt::format("{} \"{}\" was deleted", object.kind(), name),
                             .exit_code = kExitNotFound}));
        }
        if (auto taken = object.take(ev.object); !taken) {
          co_return finish(*st, report(session.failure(taken.error())));
        }
        show(*st);
        if (auto status = object.final_status()) co_return finish(*st, *status);
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

}  // namespace

asio::awaitable<int> follow(Session& session, std::string name, CommandOptions options) {
  // Named arguments: GCC 12 may destroy temporaries passed to a coroutine twice.
  std::unique_ptr<Followed> followed = followed_maintenance();
  co_return co_await follow_object(session, std::move(name), std::move(followed),
                                   std::move(options));
}

asio::awaitable<int> follow_plan(Session& session, std::string name, CommandOptions options) {
  // Named arguments: GCC 12 may destroy temporaries passed to a coroutine twice.
  std::unique_ptr<Followed> followed = followed_plan();
  co_return co_await follow_object(session, std::move(name), std::move(followed),
                                   std::move(options));
}

asio::awaitable<void> pause(std::chrono::milliseconds interval) {
  asio::steady_timer timer(co_await asio::this_coro::executor, interval);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

}  // namespace nmo::cli
