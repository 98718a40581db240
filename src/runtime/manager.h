// Manager: runs the pieces of one operator process in order (controller-runtime's pkg/manager as
// the model): runnables for every replica (webhook, metrics, probes) and runnables only the
// leader runs (controllers), named health and readiness checks, SIGINT/SIGTERM, and the order
// of shutdown.
//
//   Manager manager(executor, client, {.leader_election = config});
//   manager.add("webhook", std::make_unique<ServerRunnable>(...), RunsOn::kEveryReplica);
//   manager.add("controller", std::make_unique<MyController>(...), RunsOn::kLeader);
//   manager.add_ready_check("controller", check, RunsOn::kLeader);
//   const int status = co_await manager.run();
//
// run():
//   1. starts the every-replica runnables in the order added (a replica serves webhook reviews
//      whether it leads or not);
//   2. without leader election starts the leader runnables at once; with it, campaigns and
//      starts them once elected;
//   3. on SIGINT, SIGTERM or stop(): gives the leader lease back and stops the leader runnables
//      (in reverse order), then the every-replica runnables (in reverse order); returns 0;
//   4. on lost leadership: the same, and returns kExitFailure, so that a fresh process campaigns
//      again with fresh caches; a leader runnable that cannot start also ends it with
//      kExitFailure.
//
// It also owns what the process's pieces share, so that main() only wires them:
//   - the client lanes (own_client()): every client is shut down when run() returns;
//   - the servers (add_server()), already listening, stopped with a grace for their requests;
//   - the informer cache (add_cache(), runtime/cache.h): started before every other runnable
//     and stopped after all of them, on every replica, so a new leader starts from synced
//     informers;
//   - "start once this API is served" (add_when_served()): a runnable whose API may not be
//     installed yet (a CRD) starts in the background once a LIST of its collection succeeds,
//     asked again every minute and said once per reason in the log, instead of each controller
//     probing in a loop of its own.
//
// Checks: /healthz fails while any health check fails, /readyz while any readiness check does,
// with the first failing check's reason (its name is logged at debug level 1). A check added
// for RunsOn::kLeader counts only
// while this process runs the leader runnables (always, without leader election), so a
// follower is ready without caches of its own.
//
// Threading: everything runs on the executor given to the constructor (the process's one
// io_context thread); add() and the add_*_check() calls happen before run(). The runnables
// and the client must outlive run().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "base/result.h"
#include "http/asio.h"
#include "http/server.h"
#include "kube/client/client.h"
#include "runtime/cache.h"
#include "runtime/endpoints.h"
#include "runtime/leader_election.h"
#include "runtime/runnable.h"

namespace nmo::runtime {

/// run()'s status when leadership was lost or a leader runnable could not start.
inline constexpr int kExitFailure = 1;

/// An http::Server started already (so that a port that cannot be bound fails the process
/// before anything runs), stopped with `grace` for its requests in flight.
class ServerRunnable final : public Runnable {
 public:
  ServerRunnable(std::unique_ptr<http::Server> server, std::chrono::milliseconds grace)
      : server_(std::move(server)), grace_(grace) {}
  asio::awaitable<Result<void>> start() override { co_return Result<void>(); }
  asio::awaitable<void> stop() override { co_await server_->stop(grace_); }

 private:
  std::unique_ptr<http::Server> server_;
  std::chrono::milliseconds grace_;
};

enum class RunsOn { kEveryReplica, kLeader };

/// How Manager::add_when_served() names an API in its log lines.
struct ServedApi {
  std::string what;      ///< "the MaintenancePlan API"
  std::string resource;  ///< "MaintenancePlans"
  std::string install;   ///< how to get it served: "install deploy/crd/..."
};

struct ManagerOptions {
  /// Unset: no election, this process runs the leader runnables. The callbacks of the config
  /// are the Manager's own; set on_leading_changed instead.
  std::optional<LeaderElectionConfig> leader_election;
  /// Told whether this process runs the leader runnables, at start and on every change.
  std::function<void(bool)> on_leading_changed;
};

class Manager {
 public:
  /// `client` is the one leader election writes the Lease with; it must outlive run().
  Manager(asio::any_io_executor executor, kube::Client& client, ManagerOptions options);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  /// Adds a runnable; `name` appears in the logs.
  void add(std::string name, std::unique_ptr<Runnable> runnable, RunsOn runs_on);

  /// Takes a client lane (docs/design.md §6); it is shut down when run() returns.
  kube::Client& own_client(std::unique_ptr<kube::Client> client);

  /// Adds a server that listens already (a port that cannot be bound failed before anything
  /// ran), for every replica; stopped with `grace` for its requests in flight.
  void add_server(std::string name, std::unique_ptr<http::Server> server,
                  std::chrono::milliseconds grace);

  /// Makes the process's informer cache, reading with `reads` (see the file comment). Once.
  Cache& add_cache(kube::Client& reads, CacheOptions options = {});
  /// The cache add_cache() made.
  [[nodiscard]] Cache& cache() const;

  /// Adds `runnable`, started (where `runs_on` says) once a LIST of `collection_path` with
  /// limit 1, sent with `probe`, succeeds: asked at start and then every `recheck`; until then
  /// the process runs without it, and the log says why once per reason, naming it by `name` (a
  /// plural: "plans are off until it is"). A runnable that then cannot start ends run() as a
  /// leader runnable's failure does.
  void add_when_served(std::string name, kube::Client& probe, std::string collection_path,
                       ServedApi api, std::unique_ptr<Runnable> runnable, RunsOn runs_on,
                       std::chrono::milliseconds recheck = std::chrono::minutes(1));
  void add_health_check(std::string name, ProbeCheck check);
  void add_ready_check(std::string name, ProbeCheck check, RunsOn counts_on);

  /// The aggregates the probe endpoint serves (see the file comment).
  [[nodiscard]] ProbeCheck healthz() const;
  [[nodiscard]] ProbeCheck readyz() const;

  /// Runs until a signal, stop() or lost leadership; returns the exit status. Await it once.
  asio::awaitable<int> run();

  /// Asks run() to stop as a signal would. Safe before run() and more than once.
  void stop();

  /// Asks run() to stop and return kExitFailure: a piece of the process failed for good.
  void fail(const std::string& why);

  /// Whether this process runs the leader runnables now.
  [[nodiscard]] bool leading() const { return leading_; }

  /// For fences such as the one before each eviction: with leader election, whether the lease
  /// is still ours and renewed in time (LeaderElector::check_leading); without, always.
  [[nodiscard]] Result<void> check_leading() const;

 private:
  struct Entry {
    std::string name;
    std::unique_ptr<Runnable> runnable;
    RunsOn runs_on;
    bool started = false;
  };
  struct Check {
    std::string name;
    ProbeCheck check;
    RunsOn counts_on;
  };

  asio::awaitable<bool> start_all(RunsOn runs_on);
  asio::awaitable<void> stop_all(RunsOn runs_on);
  asio::awaitable<int> run_elected();
  void set_leading(bool leading);
  void wake();

  asio::any_io_executor executor_;
  kube::Client& client_;
  ManagerOptions options_;
  std::vector<std::unique_ptr<kube::Client>> clients_;
  Cache* cache_ = nullptr;  // owned by its entry in entries_
  bool failed_ = false;
  log::Logger logger_;
  std::vector<Entry> entries_;
  std::vector<Check> health_checks_;
  std::vector<Check> ready_checks_;
  std::unique_ptr<LeaderElector> elector_;
  // Wakes run()'s loop: a signal, stop(), a change of leadership, the elector's end.
  std::unique_ptr<asio::steady_timer> wake_;
  bool stopping_ = false;
  bool elected_ = false;  // the elector's news, applied by run()'s loop
  bool elector_ended_ = false;
  bool leading_ = false;  // leader runnables running (or about to)
};

}  // namespace nmo::runtime
