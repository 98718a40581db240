#include "runtime/manager.h"

#include <optional>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/check.h"

namespace nmo::runtime {
namespace {

// Why the first failing check of `checks` fails (the probe's body), its name logged.
asio::awaitable<std::optional<std::string>> first_failure(std::vector<ProbeCheck> checks,
                                                          std::vector<std::string> names,
                                                          log::Logger logger) {
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (auto failure = co_await checks[i]()) {
      logger.debug(1, "probe check failed", {{"check", names[i]}, {"reason", *failure}});
      co_return failure;
    }
  }
  co_return std::nullopt;
}

// A runnable started once its API is served (Manager::add_when_served): start() spawns the probe
// loop and returns at once; the loop starts the runnable in the background.
class WhenServed final : public Runnable {
 public:
  WhenServed(Manager& manager, asio::any_io_executor executor, std::string name,
             kube::Client& probe, std::string collection_path, ServedApi api,
             std::unique_ptr<Runnable> runnable, std::chrono::milliseconds recheck)
      : manager_(manager),
        name_(std::move(name)),
        probe_(probe),
        collection_path_(std::move(collection_path)),
        what_(std::move(api.what)),
        resource_(std::move(api.resource)),
        install_(std::move(api.install)),
        runnable_(std::move(runnable)),
        recheck_(recheck),
        logger_(log::root().with({{"controller", "manager"}, {"runnable", name_}})),
        timer_(executor),
        done_(executor, asio::steady_timer::time_point::max()) {}

  asio::awaitable<Result<void>> start() override {
    running_ = true;
    asio::co_spawn(co_await asio::this_coro::executor, run(), asio::detached);
    co_return Result<void>();
  }

  asio::awaitable<void> stop() override {
    stopping_ = true;
    timer_.cancel();
    if (running_) {
      // run() cancels this timer when it returns; it never expires by itself.
      co_await done_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (started_) co_await runnable_->stop();
  }

 private:
  asio::awaitable<void> run() {
    std::optional<ErrorCode> said;  // what the last failed probe met, said once until it changes
    while (!stopping_) {
      kube::ListOptions options;
      options.limit = 1;
      auto served = co_await probe_.list_raw(collection_path_, options);
      if (served.has_value()) break;
      const ErrorCode code = served.error().code;
      if (said != code) {
        logger_.info(code == ErrorCode::kNotFound ? what_ + " is not served (" + install_ + "); " +
                                                        name_ + " are off until it is"
                     : code == ErrorCode::kForbidden
                         ? "listing " + resource_ + " is forbidden (apply deploy/rbac); " + name_ +
                               " are off until it is allowed"
                         : "could not list " + resource_ + "; trying again",
                     {{"error", served.error().message}});
        said = code;
      }
      timer_.expires_after(recheck_);
      co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (!stopping_) {
      auto started = co_await runnable_->start();
      started_ = true;  // stop() undoes what a failed start() began, too
      if (!started) manager_.fail(name_ + " could not start: " + started.error().describe());
    }
    running_ = false;
    done_.cancel();
  }

  Manager& manager_;
  const std::string name_;
  kube::Client& probe_;
  const std::string collection_path_;
  const std::string what_;
  const std::string resource_;
  const std::string install_;
  std::unique_ptr<Runnable> runnable_;
  const std::chrono::milliseconds recheck_;
  const log::Logger logger_;
  asio::steady_timer timer_;
  asio::steady_timer done_;
  bool stopping_ = false;
  bool running_ = false;
  bool started_ = false;
};

}  // namespace

Manager::Manager(asio::any_io_executor executor, kube::Client& client, ManagerOptions options)
    : executor_(std::move(executor)),
      client_(client),
      options_(std::move(options)),
      logger_(log::root().with({{"controller", "manager"}})),
      wake_(
          std::make_unique<asio::steady_timer>(executor_, asio::steady_timer::time_point::max())) {}

Manager::~Manager() = default;

void Manager::add(std::string name, std::unique_ptr<Runnable> runnable, RunsOn runs_on) {
  entries_.push_back(Entry{.name = std::move(name),
                           .runnable = std::move(runnable),
                           .runs_on = runs_on,
                           .started = false});
}

kube::Client& Manager::own_client(std::unique_ptr<kube::Client> client) {
  NMO_CHECK(client != nullptr, "Manager::own_client without a client");
  clients_.push_back(std::move(client));
  return *clients_.back();
}

void Manager::add_server(std::string name, std::unique_ptr<http::Server> server,
                         std::chrono::milliseconds grace) {
  add(std::move(name), std::make_unique<ServerRunnable>(std::move(server), grace),
      RunsOn::kEveryReplica);
}

Cache& Manager::add_cache(kube::Client& reads, CacheOptions options) {
  NMO_CHECK(cache_ == nullptr, "Manager::add_cache called twice");
  auto cache = std::make_unique<Cache>(executor_, reads, options);
  cache_ = cache.get();
  // First: started before every other runnable, stopped after all of them.
  entries_.insert(entries_.begin(), Entry{.name = "cache",
                                          .runnable = std::move(cache),
                                          .runs_on = RunsOn::kEveryReplica,
                                          .started = false});
  return *cache_;
}

Cache& Manager::cache() const {
  NMO_CHECK(cache_ != nullptr, "Manager::cache before add_cache");
  return *cache_;
}

void Manager::add_when_served(std::string name, kube::Client& probe, std::string collection_path,
                              ServedApi api, std::unique_ptr<Runnable> runnable, RunsOn runs_on,
                              std::chrono::milliseconds recheck) {
  auto waiting =
      std::make_unique<WhenServed>(*this, executor_, name, probe, std::move(collection_path),
                                   std::move(api), std::move(runnable), recheck);
  add(std::move(name), std::move(waiting), runs_on);
}

void Manager::add_health_check(std::string name, ProbeCheck check) {
  health_checks_.push_back(Check{
      .name = std::move(name), .check = std::move(check), .counts_on = RunsOn::kEveryReplica});
}

void Manager::add_ready_check(std::string name, ProbeCheck check, RunsOn counts_on) {
  ready_checks_.push_back(
      Check{.name = std::move(name), .check = std::move(check), .counts_on = counts_on});
}

ProbeCheck Manager::healthz() const {
  return [this]() -> asio::awaitable<std::optional<std::string>> {
    std::vector<ProbeCheck> checks;
    std::vector<std::string> names;
    for (const Check& c : health_checks_) {
      checks.push_back(c.check);
      names.push_back(c.name);
    }
    co_return co_await first_failure(std::move(checks), std::move(names), logger_);
  };
}

ProbeCheck Manager::readyz() const {
  return [this]() -> asio::awaitable<std::optional<std::string>> {
    std::vector<ProbeCheck> checks;
    std::vector<std::string> names;
    // A leader check counts where the leader runnables run: everywhere without an election.
    const bool runs_leader = !options_.leader_election || leading_;
    for (const Check& c : ready_checks_) {
      if (c.counts_on == RunsOn::kLeader && !runs_leader) continue;
      checks.push_back(c.check);
      names.push_back(c.name);
    }
    co_return co_await first_failure(std::move(checks), std::move(names), logger_);
  };
}

Result<void> Manager::check_leading() const {
  if (!options_.leader_election) return Result<void>();
  if (elector_ == nullptr) return Error(ErrorCode::kUnavailable, "not elected yet");
  return elector_->check_leading();
}

void Manager::stop() {
  if (stopping_) return;
  stopping_ = true;
  if (elector_) elector_->stop();
  wake();
}

void Manager::fail(const std::string& why) {
  logger_.error("stopping after a failure", {{"error", why}});
  failed_ = true;
  stop();
}

void Manager::wake() { wake_->cancel(); }

void Manager::set_leading(bool leading) {
  leading_ = leading;
  if (options_.on_leading_changed) options_.on_leading_changed(leading);
}

asio::awaitable<bool> Manager::start_all(RunsOn runs_on) {
  for (Entry& entry : entries_) {
    if (entry.runs_on != runs_on || entry.started) continue;
    auto started = co_await entry.runnable->start();
    if (!started) {
      logger_.error("could not start",
                    {{"runnable", entry.name}, {"error", started.error().describe()}});
      // What it began before it failed (watches, a recorder) would otherwise keep the process
      // alive after run() returns.
      co_await entry.runnable->stop();
      co_return false;
    }
    entry.started = true;
  }
  co_return true;
}

asio::awaitable<void> Manager::stop_all(RunsOn runs_on) {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->runs_on != runs_on || !it->started) continue;
    co_await it->runnable->stop();
    it->started = false;
  }
}

asio::awaitable<int> Manager::run() {
  asio::signal_set signals(executor_, SIGINT, SIGTERM);
  signals.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    logger_.info("stopping", {{"signal", signal}});
    stop();
  });
  int status = 0;
  if (!co_await start_all(RunsOn::kEveryReplica)) {
    status = kExitFailure;
  } else if (!options_.leader_election) {
    set_leading(true);
    if (!stopping_ && !co_await start_all(RunsOn::kLeader)) status = kExitFailure;
    while (status == 0 && !stopping_) {
      co_await wake_->async_wait(asio::as_tuple(asio::use_awaitable));
      wake_->expires_at(asio::steady_timer::time_point::max());
    }
    co_await stop_all(RunsOn::kLeader);
  } else {
    status = co_await run_elected();
  }
  signals.cancel();
  co_await stop_all(RunsOn::kEveryReplica);
  for (const auto& client : clients_) client->shutdown();
  co_return failed_ ? kExitFailure : status;
}

asio::awaitable<int> Manager::run_elected() {
  // The elector's callbacks only record the news and wake this loop, which starts and stops the
  // leader runnables in order.
  LeaderElectionConfig config = *options_.leader_election;
  config.on_started_leading = [this] {
    elected_ = true;
    wake();
  };
  config.on_stopped_leading = [this] {
    elected_ = false;
    wake();
  };
  config.on_new_leader = [this](const std::string& holder) {
    logger_.info("leader observed", {{"leader", holder}});
  };
  elector_ = std::make_unique<LeaderElector>(executor_, client_, std::move(config));
  set_leading(false);
  if (stopping_) elector_->stop();
  asio::co_spawn(
      executor_,
      [this]() -> asio::awaitable<void> {
        co_await elector_->run();
        elector_ended_ = true;
        wake();
      },
      asio::detached);
  // The flags are applied before each wait, and nothing suspends in between, so no wake-up
  // is lost.
  int status = 0;
  for (;;) {
    if (elected_ && !leading_ && !stopping_ && status == 0) {
      logger_.info("became the leader; starting the controller");
      set_leading(true);
      if (!co_await start_all(RunsOn::kLeader)) {
        status = kExitFailure;
        elector_->stop();
      }
    }
    if ((!elected_ || stopping_ || status != 0) && leading_) {
      co_await stop_all(RunsOn::kLeader);
      set_leading(false);
      if (!stopping_ && status == 0) {
        logger_.error("lost leadership; exiting so that a fresh process campaigns again");
        status = kExitFailure;
        elector_->stop();
      }
    }
    if (elector_ended_) break;
    co_await wake_->async_wait(asio::as_tuple(asio::use_awaitable));
    wake_->expires_at(asio::steady_timer::time_point::max());
  }
  if (leading_) {
    co_await stop_all(RunsOn::kLeader);
    set_leading(false);
  }
  co_return status;
}

}  // namespace nmo::runtime
