// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection package does with a LeaseLock. Candidates share one Lease; the holder renews it
// every retry_period; the others poll it and take it over once it is released or has gone
// unchanged for the lease duration, as observed on the local monotonic clock (never by comparing
// wall clocks across machines). Every write is an update carrying the observed resourceVersion,
// so of two concurrent candidates one loses with 409 Conflict.
//
//   LeaderElector elector(executor, client, {.lease_namespace = "nmo-system",
//                                            .lease_name = "135b1886.medik8s.io",
//                                            .identity = hostname + "_" + uuid,
//                                            .on_started_leading = start_controllers,
//                                            .on_stopped_leading = stop_controllers});
//   co_await elector.run();   // returns after stop(), or when leadership is lost
//
// A leader whose renewals keep failing for renew_deadline stops leading (on_stopped_leading)
// and run() returns: the process should then exit, as controller-runtime does, rather than
// campaign again with controllers half stopped.
//
// Threading: run() is awaited once, from any executor; internally everything runs on a strand of
// the constructor's executor, and the callbacks are invoked there (keep them short: they must
// not block). stop(), is_leader() and leader() may be called from any thread. Destroy the elector
// only after run() has returned, or when it was never started.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "runtime/internal/leader_election_record.h"

namespace nmo::runtime {

// What to elect on and how often; the defaults are client-go's / controller-runtime's.
struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;  // e.g. "135b1886.medik8s.io"
  std::string identity;    // unique per candidate, e.g. "<hostname>_<uuid>"
  // How long a lease stays valid without renewal (written as spec.leaseDurationSeconds).
  std::chrono::seconds lease_duration{15};
  // How long a leader keeps trying to renew before it gives up leadership; < lease_duration.
  std::chrono::seconds renew_deadline{10};
  // The pause between attempts to acquire or renew.
  std::chrono::seconds retry_period{2};
  // On stop(), hand the lease back (holder "", leaseDurationSeconds 1) so a follower takes over
  // at once instead of waiting for the lease to expire.
  bool release_on_cancel = true;
  // Called (on the elector's strand) after the lease is acquired.
  std::function<void()> on_started_leading;
  // Called (on the elector's strand) when leadership ends: lost, or given up on stop().
  std::function<void()> on_stopped_leading;
  // Called (on the elector's strand) with each new non-empty holder observed, ourselves included.
  std::function<void(const std::string&)> on_new_leader;
};

// A candidate identity unique to this process, `<host>_<32 random hex digits>`, as
// controller-runtime makes one (hostname + "_" + a UUID). Two candidates with one identity would
// both take the Lease for their own and lead together, and a hostname alone is not unique: two
// replicas on one machine (`make run` twice, host-network pods on one node, tests) share it.
[[nodiscard]] std::string unique_identity(std::string_view host);

// Checks `config`: namespace, name and identity set, and lease_duration > renew_deadline >
// retry_period > 0 (client-go's rules). Errors are kInvalid, e.g. "leader election needs lease
// duration > renew deadline > retry period > 0, got 4s, 4s, 1s".
[[nodiscard]] Result<void> validate(const LeaderElectionConfig& config);

// Campaigns for, holds and releases one Lease. See the file comment.
class LeaderElector {
 public:
  // Writes go through `client`, which must outlive the elector. `clock` (monotonic) measures
  // lease expiry and renew deadlines; it must outlive the elector. `config` must pass
  // validate() (checked: a bad one aborts).
  LeaderElector(asio::any_io_executor executor, kube::Client& client, LeaderElectionConfig config,
                const Clock& clock = system_clock());
  ~LeaderElector();

  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Campaigns until the lease is acquired, then renews it. Returns when stop() is called (after
  // releasing the lease when leading and release_on_cancel) or when renewals have failed for
  // renew_deadline. Never throws; failures are logged. Await it once.
  asio::awaitable<void> run();

  // Asks run() to end: pending pauses and requests are cancelled. Does not wait; await run() for
  // that. Idempotent; safe from any thread, before or during run().
  void stop();

  // Whether we hold the lease (between on_started_leading and on_stopped_leading).
  [[nodiscard]] bool is_leader() const;

  // Whether this replica may act as the leader at this instant: it holds the lease and its last
  // renewal began less than the renew deadline ago. is_leader() follows run()'s loop; this turns
  // false the moment the lease may have passed to another candidate, so a process that was paused
  // (SIGSTOP, a frozen VM) past its deadline sees it false on waking, before its loop has run.
  // Ask it right before an action that must not be done twice, such as an eviction. The error
  // (kUnavailable) says why, e.g. "the leader lease was last renewed 23.4 s ago, more than the
  // renew deadline of 10 s: not acting until it is renewed". Any thread.
  [[nodiscard]] Result<void> check_leading() const;

  // The last non-empty holder observed ("" before any).
  [[nodiscard]] std::string leader() const;

 private:
  struct Strand;  // the strand-owned timer and the request in flight

  asio::awaitable<void> campaign();
  // One GET and, when allowed, a create or update making us the holder. True when we hold the
  // lease afterwards; false when someone else validly holds it.
  asio::awaitable<Result<bool>> try_acquire_or_renew();
  // The halves of try_acquire_or_renew(): create the missing lease, or update the one read
  // (`current`, from `path`) when it is ours or may be taken over.
  asio::awaitable<Result<bool>> create_lease();
  asio::awaitable<Result<bool>> take_or_renew(std::string path, boost::json::value current);
  // True after observing the lease we wrote; the write's error otherwise.
  Result<bool> observe_written(const Result<boost::json::value>& written);
  [[nodiscard]] std::int32_t lease_duration_seconds() const;
  asio::awaitable<Result<void>> release();
  // Runs `attempt` (a member coroutine) on the strand, cancelled after `deadline` or by stop().
  template <typename T>
  asio::awaitable<Result<T>> bounded(asio::awaitable<Result<T>> attempt, Clock::duration deadline);
  // Pauses for `delay`; false when stop() ended the pause (or had been called).
  asio::awaitable<bool> pause(Clock::duration delay);
  void observe(const kube::Lease& lease);
  // Time since the last successful acquisition or renewal began.
  [[nodiscard]] Clock::duration since_renewal() const;
  void set_leading(bool leading);

  kube::Client& client_;
  const LeaderElectionConfig config_;
  const Clock& clock_;
  const log::Logger logger_;
  std::shared_ptr<Strand> strand_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> leading_{false};
  // When the last successful acquisition or renewal began (Clock ticks since its epoch): the
  // renew loop's deadline and check_leading() both count from it.
  std::atomic<Clock::duration::rep> renewed_at_{0};

  // Used on the strand only.
  internal::LeaseObserver observer_;

  mutable std::mutex mutex_;
  std::string leader_;  // guarded by mutex_
};

}  // namespace nmo::runtime
