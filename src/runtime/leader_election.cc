#include "runtime/leader_election.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <utility>

#include <boost/json/value.hpp>
#include <boost/system/system_error.hpp>
#include <fmt/format.h>

#include "base/check.h"
#include "kube/api/lease.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

// Every awaited call is first bound to a named awaitable and then awaited on its own
// (`auto op = f(args); co_await std::move(op);`): GCC 12 destroys the temporaries of a
// co_await-ed call expression twice (seen as a double free of a defaulted WriteOptions).

namespace nmo::runtime {

namespace {

// The wall time written into spec.acquireTime / spec.renewTime is never used for decisions.
using kube::wall_now;

std::string millis_text(Clock::duration duration) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(duration).count()) +
         "ms";
}

// One request in flight, cancellable by its deadline or by stop().
struct Attempt {
  asio::cancellation_signal signal;
  bool done = false;       // the request finished: never emit again
  bool timed_out = false;  // the deadline, not stop(), cancelled it
};

}  // namespace

struct LeaderElector::Strand {
  explicit Strand(const asio::any_io_executor& executor)
      : strand(asio::make_strand(executor)), timer(strand) {}

  asio::strand<asio::any_io_executor> strand;
  asio::steady_timer timer;          // the pause between attempts
  std::shared_ptr<Attempt> attempt;  // the request in flight, if any
  bool releasing = false;            // stop() must not cancel the release it asked for
};

LeaderElector::LeaderElector(asio::any_io_executor executor, kube::Client& client,
                             LeaderElectionConfig config, const Clock& clock)
    : client_(client),
      config_(std::move(config)),
      clock_(clock),
      logger_(log::root().with({{"lease", config_.lease_namespace + "/" + config_.lease_name},
                                {"identity", config_.identity}})),
      strand_(std::make_shared<Strand>(executor)) {
  const Result<void> valid = validate(config_);
  NMO_CHECK(valid.has_value(), valid.error().describe());
}

std::string unique_identity(std::string_view host) {
  std::random_device entropy;
  const auto word = [&entropy] {
    return (static_cast<std::uint64_t>(entropy()) << 32) | static_cast<std::uint64_t>(entropy());
  };
  const unsigned long long high = word();
  const unsigned long long low = word();
  std::array<char, 34> suffix{};
  std::snprintf(suffix.data(), suffix.size(), "_%016llx%016llx", high, low);
  return std::string(host) + suffix.data();
}

Result<void> validate(const LeaderElectionConfig& config) {
  if (config.lease_namespace.empty() || config.lease_name.empty() || config.identity.empty()) {
    return Error(ErrorCode::kInvalid,
                 "leader election needs a lease namespace, a lease name and an identity");
  }
  // client-go's rules: the lease must outlive a renewal deadline, and a deadline must leave room
  // for more than one attempt.
  if (config.retry_period <= std::chrono::seconds::zero() ||
      config.renew_deadline <= config.retry_period ||
      config.lease_duration <= config.renew_deadline) {
    return Error(ErrorCode::kInvalid,
                 "leader election needs lease duration > renew deadline > retry period > 0, got " +
                     std::to_string(config.lease_duration.count()) + "s, " +
                     std::to_string(config.renew_deadline.count()) + "s, " +
                     std::to_string(config.retry_period.count()) + "s");
  }
  return {};
}

LeaderElector::~LeaderElector() = default;

bool LeaderElector::is_leader() const { return leading_.load(); }

Clock::duration LeaderElector::since_renewal() const {
  return clock_.now() - Clock::time_point(Clock::duration(renewed_at_.load()));
}

Result<void> LeaderElector::check_leading() const {
  if (!leading_.load()) return Error(ErrorCode::kUnavailable, "this replica is not the leader");
  const Clock::duration since = since_renewal();
  if (since < config_.renew_deadline) return {};
  return Error(
      ErrorCode::kUnavailable,
      fmt::format("the leader lease was last renewed {:.1f} s ago, more than the renew "
                  "deadline of {} s: not acting until it is renewed",
                  std::chrono::duration<double>(since).count(), config_.renew_deadline.count()));
}

std::string LeaderElector::leader() const {
  const std::lock_guard lock(mutex_);
  return leader_;
}

void LeaderElector::stop() {
  stop_requested_.store(true);
  asio::post(strand_->strand, [strand = strand_] {
    strand->timer.cancel();
    if (strand->attempt && !strand->attempt->done && !strand->releasing) {
      strand->attempt->signal.emit(asio::cancellation_type::terminal);
    }
  });
}

asio::awaitable<void> LeaderElector::run() {
  auto on_strand = [this]() -> asio::awaitable<void> {
    try {
      co_await campaign();
    } catch (const std::exception& e) {
      logger_.error("leader election failed", {{"error", e.what()}});
      if (leading_.load()) set_leading(false);
    }
  };
  asio::awaitable<void> spawned = asio::co_spawn(strand_->strand, on_strand, asio::use_awaitable);
  co_await std::move(spawned);
}

asio::awaitable<void> LeaderElector::campaign() {
  logger_.info("campaigning for leader lease",
               {{"leaseDuration", millis_text(config_.lease_duration)},
                {"renewDeadline", millis_text(config_.renew_deadline)},
                {"retryPeriod", millis_text(config_.retry_period)}});
  // A renewal counts from when its request began: the lease may be written at any moment after.
  const auto renewed = [this](Clock::time_point attempt_start) {
    renewed_at_.store(attempt_start.time_since_epoch().count());
  };
  for (;;) {
    if (stop_requested_.load()) co_return;
    const Clock::time_point attempt_start = clock_.now();
    asio::awaitable<Result<bool>> attempt = try_acquire_or_renew();
    asio::awaitable<Result<bool>> bounded_attempt =
        bounded(std::move(attempt), config_.renew_deadline);
    const Result<bool> acquired = co_await std::move(bounded_attempt);
    if (acquired && *acquired) {
      renewed(attempt_start);
      break;
    }
    if (!acquired && !stop_requested_.load()) {
      logger_.warn("failed to acquire leader lease", {{"error", acquired.error().describe()}});
    }
    if (!co_await pause(config_.retry_period)) co_return;
  }
  logger_.info("acquired leader lease");
  set_leading(true);

  while (co_await pause(config_.retry_period)) {
    const Clock::time_point attempt_start = clock_.now();
    const Clock::duration left = config_.renew_deadline - since_renewal();
    if (left > Clock::duration::zero()) {
      asio::awaitable<Result<bool>> attempt = try_acquire_or_renew();
      asio::awaitable<Result<bool>> bounded_attempt = bounded(std::move(attempt), left);
      const Result<bool> renewal = co_await std::move(bounded_attempt);
      if (renewal && *renewal) {
        renewed(attempt_start);
        continue;
      }
      if (stop_requested_.load()) break;
      if (!renewal) {
        logger_.warn("failed to renew leader lease", {{"error", renewal.error().describe()}});
      }
    }
    if (since_renewal() >= config_.renew_deadline) {
      logger_.error("lost leader lease: not renewed within the renew deadline",
                    {{"renewDeadline", millis_text(config_.renew_deadline)}});
      set_leading(false);
      co_return;
    }
  }

  // stop() while leading.
  if (config_.release_on_cancel) {
    strand_->releasing = true;
    asio::awaitable<Result<void>> attempt = release();
    asio::awaitable<Result<void>> bounded_attempt =
        bounded(std::move(attempt), config_.renew_deadline);
    const Result<void> released = co_await std::move(bounded_attempt);
    if (released) {
      logger_.info("released leader lease");
    } else {
      logger_.warn("failed to release leader lease", {{"error", released.error().describe()}});
    }
  }
  logger_.info("stopped leading: shutting down");
  set_leading(false);
}

asio::awaitable<Result<bool>> LeaderElector::try_acquire_or_renew() {
  const std::string path =
      kube::object_path<kube::Lease>(config_.lease_namespace, config_.lease_name);
  asio::awaitable<Result<boost::json::value>> get = client_.get_json(path);
  Result<boost::json::value> current = co_await std::move(get);
  if (current) {
    asio::awaitable<Result<bool>> update = take_or_renew(path, std::move(*current));
    co_return co_await std::move(update);
  }
  if (!is_not_found(current.error())) co_return current.error();
  asio::awaitable<Result<bool>> create = create_lease();
  co_return co_await std::move(create);
}

asio::awaitable<Result<bool>> LeaderElector::create_lease() {
  const internal::LeaderElectionRecord record = internal::acquire_record(
      std::nullopt, config_.identity, lease_duration_seconds(), wall_now());
  const std::string collection = kube::collection_path<kube::Lease>(config_.lease_namespace);
  boost::json::value object =
      internal::new_lease_object(config_.lease_namespace, config_.lease_name, record);
  asio::awaitable<Result<boost::json::value>> create =
      client_.create(collection, std::move(object), kube::WriteOptions{});
  Result<boost::json::value> created = co_await std::move(create);
  // AlreadyExists: another candidate created it first and holds it now.
  if (!created && created.error().code == ErrorCode::kAlreadyExists) co_return false;
  co_return observe_written(created);
}

asio::awaitable<Result<bool>> LeaderElector::take_or_renew(std::string path,
                                                           boost::json::value current) {
  Result<kube::Lease> lease = kube::decode_lease(current);
  if (!lease) co_return lease.error();
  observe(*lease);
  const bool ours = lease->holder_identity.value_or("") == config_.identity;
  if (!ours && !internal::should_take_over(
                   *observer_.last(), observer_.last_change(), clock_.now(),
                   internal::effective_lease_duration(*lease, config_.lease_duration))) {
    co_return false;
  }
  internal::set_lease_spec(current, internal::acquire_record(*lease, config_.identity,
                                                             lease_duration_seconds(), wall_now()));
  asio::awaitable<Result<boost::json::value>> update =
      client_.update(path, std::move(current), kube::WriteOptions{});
  Result<boost::json::value> updated = co_await std::move(update);
  // Conflict: someone wrote the lease since our GET (our resourceVersion is stale); they win.
  if (!updated && updated.error().code == ErrorCode::kConflict) {
    logger_.debug(1, "lost a race for the leader lease", {{"error", updated.error().describe()}});
    co_return false;
  }
  co_return observe_written(updated);
}

Result<bool> LeaderElector::observe_written(const Result<boost::json::value>& written) {
  if (!written) return written.error();
  Result<kube::Lease> lease = kube::decode_lease(*written);
  if (!lease) return lease.error();
  observe(*lease);
  return true;
}

std::int32_t LeaderElector::lease_duration_seconds() const {
  return static_cast<std::int32_t>(config_.lease_duration.count());
}

asio::awaitable<Result<void>> LeaderElector::release() {
  const std::string path =
      kube::object_path<kube::Lease>(config_.lease_namespace, config_.lease_name);
  asio::awaitable<Result<boost::json::value>> get = client_.get_json(path);
  Result<boost::json::value> current = co_await std::move(get);
  if (!current) co_return current.error();
  Result<kube::Lease> lease = kube::decode_lease(*current);
  if (!lease) co_return lease.error();
  if (lease->holder_identity.value_or("") != config_.identity) {
    co_return Error(ErrorCode::kConflict, "the lease is held by \"" +
                                              lease->holder_identity.value_or("") +
                                              "\" now; nothing to release");
  }
  internal::set_lease_spec(*current, internal::release_record(*lease, wall_now()));
  asio::awaitable<Result<boost::json::value>> update =
      client_.update(path, std::move(*current), kube::WriteOptions{});
  Result<boost::json::value> updated = co_await std::move(update);
  if (!updated) co_return updated.error();
  co_return Result<void>{};
}

template <typename T>
asio::awaitable<Result<T>> LeaderElector::bounded(asio::awaitable<Result<T>> attempt,
                                                  Clock::duration deadline) {
  if (stop_requested_.load() && !strand_->releasing) {
    co_return Error(ErrorCode::kCancelled, "leader election stopped");
  }
  auto state = std::make_shared<Attempt>();
  strand_->attempt = state;
  asio::steady_timer deadline_timer(strand_->strand, deadline);
  deadline_timer.async_wait([state](const boost::system::error_code& ec) {
    if (ec || state->done) return;
    state->timed_out = true;
    state->signal.emit(asio::cancellation_type::terminal);
  });
  Result<T> result = Error(ErrorCode::kInternal, "lease request did not run");
  try {
    asio::awaitable<Result<T>> spawned =
        asio::co_spawn(strand_->strand, std::move(attempt),
                       asio::bind_cancellation_slot(state->signal.slot(), asio::use_awaitable));
    result = co_await std::move(spawned);
  } catch (const std::exception& e) {
    result = Error(ErrorCode::kCancelled, e.what());
  }
  state->done = true;
  deadline_timer.cancel();
  strand_->attempt.reset();
  if (!result && state->timed_out) {
    co_return Error(ErrorCode::kTimeout, "lease request took longer than " + millis_text(deadline) +
                                             ": " + result.error().describe());
  }
  co_return result;
}

asio::awaitable<bool> LeaderElector::pause(Clock::duration delay) {
  if (stop_requested_.load()) co_return false;
  strand_->timer.expires_after(delay);
  try {
    co_await strand_->timer.async_wait(asio::use_awaitable);
  } catch (const boost::system::system_error&) {
    // stop() cancelled the pause; the flag below says so.
  }
  co_return !stop_requested_.load();
}

void LeaderElector::observe(const kube::Lease& lease) {
  const internal::LeaseObservation observation = internal::observe_lease(lease);
  observer_.observe(observation, clock_.now());
  const std::string& holder = observation.holder_identity;
  if (holder.empty()) return;
  {
    const std::lock_guard lock(mutex_);
    if (leader_ == holder) return;
    leader_ = holder;
  }
  logger_.info("new leader observed", {{"leader", holder}});
  if (config_.on_new_leader) config_.on_new_leader(holder);
}

void LeaderElector::set_leading(bool leading) {
  leading_.store(leading);
  if (leading && config_.on_started_leading) config_.on_started_leading();
  if (!leading && config_.on_stopped_leading) config_.on_stopped_leading();
}

}  // namespace nmo::runtime
