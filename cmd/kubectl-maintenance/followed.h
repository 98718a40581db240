// The kinds of object that follow.h follows: a NodeMaintenance (`watch`, `start --wait`) and a
// MaintenancePlan (`plan-status --watch`). A kind keeps the object as last seen and says how to
// read it, how it looks and when following it ends; the loop in follow.cc owns everything else:
// the watch stream and its reconnects, the terminal, --timeout and the signals.
//
// Threading: used by one follow coroutine on the io_context's single thread.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "base/result.h"
#include "cli/watch_frame.h"
#include "http/asio.h"
#include "session.h"

namespace nmo::cli {

class Followed {
 public:
  Followed() = default;
  Followed(const Followed&) = delete;
  Followed& operator=(const Followed&) = delete;
  virtual ~Followed() = default;

  // "NodeMaintenance", "MaintenancePlan": named in the messages (`... "NAME" was deleted`).
  [[nodiscard]] virtual std::string_view kind() const = 0;
  // The URL path of the collection the object is watched in (by metadata.name).
  [[nodiscard]] virtual std::string collection() const = 0;
  // Reads the object `name` now and keeps it; a missing one is a Failure (exit 3).
  virtual asio::awaitable<Outcome<Done>> read(Session& session, std::string name) = 0;
  // Keeps the object of a watch event; an error when it does not decode.
  [[nodiscard]] virtual Result<void> take(const boost::json::value& object) = 0;

  // Of the object kept (only after read() or take() succeeded):
  // its resourceVersion, to watch from;
  [[nodiscard]] virtual std::string resource_version() const = 0;
  // its phase, for the --timeout message;
  [[nodiscard]] virtual std::string phase() const = 0;
  // how it looks, `following` after follow() began, on a terminal or a pipe, and as a JSON line;
  [[nodiscard]] virtual Frame frame(std::chrono::seconds following) const = 0;
  [[nodiscard]] virtual boost::json::value json_line(std::chrono::seconds following) const = 0;
  // for a state that ends following, the exit status, after reporting a failure on stderr;
  // std::nullopt while following goes on.
  [[nodiscard]] virtual std::optional<int> final_status() const = 0;
};

// A NodeMaintenance: the drawing, JSON line and end of `watch` (maintenance_watch.h), whose
// percentage and evicted count never go back (the highest seen for the maintenance's uid);
// Succeeded ends it (exit 0), Failed too (exit 1, its status.lastError).
[[nodiscard]] std::unique_ptr<Followed> followed_maintenance();

// A MaintenancePlan: the plan-status report (plan_status_text.h), its JSON line and its end
// (plan_watch.h): Succeeded (exit 0) or Failed (exit 1, its status.message).
[[nodiscard]] std::unique_ptr<Followed> followed_plan();

}  // namespace nmo::cli
