// The pure decisions of leader election on a coordination.k8s.io/v1 Lease: what a lease says
// (LeaderElectionRecord), when another candidate may take it over, and the spec we write when we
// acquire, renew or release it. No I/O and no clocks of their own: LeaderElector feeds them the
// monotonic time (for expiry) and the wall time (only for the timestamps that go on the wire).
//
// Expiry is judged as client-go does: never by comparing our wall clock with the holder's
// renewTime, but by how long the lease has gone unchanged as observed locally on the monotonic
// clock (LeaseObserver).
//
// Threading: plain value types and pure functions; a LeaseObserver is owned by one elector and
// used from one strand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/json/value.hpp>

#include "base/clock.h"
#include "kube/api/lease.h"
#include "kube/api/time.h"

namespace nmo::runtime::internal {

// The leader-election fields of a Lease spec, as we write them.
struct LeaderElectionRecord {
  std::string holder_identity;  // "" when nobody holds the lease
  std::int32_t lease_duration_seconds = 0;
  kube::Time acquire_time;
  kube::Time renew_time;
  std::int32_t lease_transitions = 0;

  friend bool operator==(const LeaderElectionRecord&, const LeaderElectionRecord&) = default;
};

// What proves a holder alive: any change of (holder, renewTime, resourceVersion).
struct LeaseObservation {
  std::string holder_identity;
  std::optional<kube::Time> renew_time;
  std::string resource_version;

  friend bool operator==(const LeaseObservation&, const LeaseObservation&) = default;
};

// The observation of `lease` (an absent holderIdentity reads as "").
[[nodiscard]] LeaseObservation observe_lease(const kube::Lease& lease);

// Remembers the last observation of a lease and when (monotonic) it last changed.
class LeaseObserver {
 public:
  // Records `observation` seen at `now`. The change time moves only when the observation
  // differs from the previous one (or on the first call). Returns whether it changed.
  bool observe(const LeaseObservation& observation, Clock::time_point now);

  // The last observation, or std::nullopt before the first observe().
  [[nodiscard]] const std::optional<LeaseObservation>& last() const { return last_; }
  // When last() was first seen. Meaningless before the first observe().
  [[nodiscard]] Clock::time_point last_change() const { return last_change_; }

 private:
  std::optional<LeaseObservation> last_;
  Clock::time_point last_change_{};
};

// Whether a candidate may take over a lease held by someone else: the holder is empty (released
// or never held), or the lease has gone unchanged for `lease_duration` since `last_change`, as
// seen on the local monotonic clock (`now`). The holder's renewTime is never compared with our
// wall clock.
[[nodiscard]] bool should_take_over(const LeaseObservation& observed, Clock::time_point last_change,
                                    Clock::time_point now, Clock::duration lease_duration);

// How long the holder of `lease` may go without renewing before it counts as expired: the
// lease's own spec.leaseDurationSeconds when positive (the holder's promise, as client-go reads
// it), otherwise `fallback`.
[[nodiscard]] Clock::duration effective_lease_duration(const kube::Lease& lease,
                                                       Clock::duration fallback);

// The record `identity` writes to acquire or renew `current` (std::nullopt when the lease does
// not exist yet) at wall time `now`. Renewing our own lease keeps acquireTime and
// leaseTransitions; taking it from anyone else (including an empty holder) sets acquireTime to
// `now` and increments leaseTransitions.
[[nodiscard]] LeaderElectionRecord acquire_record(const std::optional<kube::Lease>& current,
                                                  const std::string& identity,
                                                  std::int32_t lease_duration_seconds,
                                                  kube::Time now);

// The record that releases `current` at wall time `now`, as client-go writes it: no holder,
// leaseDurationSeconds 1, both times `now`, leaseTransitions unchanged.
[[nodiscard]] LeaderElectionRecord release_record(const kube::Lease& current, kube::Time now);

// Writes `record` into spec of `object` (a Lease as JSON), keeping every other field, so an
// update carries the observed metadata.resourceVersion. Times use format_micro_time().
// `object` must be a JSON object (a decoded Lease is).
void set_lease_spec(boost::json::value& object, const LeaderElectionRecord& record);

// A new Lease object `namespace_`/`name` with spec `record`, ready to create.
[[nodiscard]] boost::json::value new_lease_object(const std::string& namespace_,
                                                  const std::string& name,
                                                  const LeaderElectionRecord& record);

}  // namespace nmo::runtime::internal
