#include "runtime/internal/leader_election_record.h"

#include <chrono>
#include <utility>

#include "kube/api/lease.h"

namespace nmo::runtime::internal {

LeaseObservation observe_lease(const kube::Lease& lease) {
  return LeaseObservation{
      .holder_identity = lease.holder_identity.value_or(""),
      .renew_time = lease.renew_time,
      .resource_version = lease.meta.resource_version,
  };
}

bool LeaseObserver::observe(const LeaseObservation& observation, Clock::time_point now) {
  if (last_ && *last_ == observation) return false;
  last_ = observation;
  last_change_ = now;
  return true;
}

bool should_take_over(const LeaseObservation& observed, Clock::time_point last_change,
                      Clock::time_point now, Clock::duration lease_duration) {
  if (observed.holder_identity.empty()) return true;
  return now - last_change >= lease_duration;
}

Clock::duration effective_lease_duration(const kube::Lease& lease, Clock::duration fallback) {
  if (lease.lease_duration_seconds && *lease.lease_duration_seconds > 0) {
    return std::chrono::seconds(*lease.lease_duration_seconds);
  }
  return fallback;
}

LeaderElectionRecord acquire_record(const std::optional<kube::Lease>& current,
                                    const std::string& identity,
                                    std::int32_t lease_duration_seconds, kube::Time now) {
  LeaderElectionRecord record{
      .holder_identity = identity,
      .lease_duration_seconds = lease_duration_seconds,
      .acquire_time = now,
      .renew_time = now,
      .lease_transitions = 0,
  };
  if (!current) return record;
  if (current->holder_identity.value_or("") == identity) {
    record.acquire_time = current->acquire_time.value_or(now);
    record.lease_transitions = current->lease_transitions;
  } else {
    record.lease_transitions = current->lease_transitions + 1;
  }
  return record;
}

LeaderElectionRecord release_record(const kube::Lease& current, kube::Time now) {
  return LeaderElectionRecord{
      .holder_identity = "",
      .lease_duration_seconds = 1,
      .acquire_time = now,
      .renew_time = now,
      .lease_transitions = current.lease_transitions,
  };
}

namespace {

// `record` as the spec of a Lease (metadata left empty).
kube::Lease lease_of(const LeaderElectionRecord& record) {
  kube::Lease lease;
  lease.holder_identity = record.holder_identity;
  lease.lease_duration_seconds = record.lease_duration_seconds;
  lease.acquire_time = record.acquire_time;
  lease.renew_time = record.renew_time;
  lease.lease_transitions = record.lease_transitions;
  return lease;
}

}  // namespace

void set_lease_spec(boost::json::value& object, const LeaderElectionRecord& record) {
  kube::overlay_lease_spec(object, lease_of(record));
}

boost::json::value new_lease_object(const std::string& namespace_, const std::string& name,
                                    const LeaderElectionRecord& record) {
  kube::Lease lease = lease_of(record);
  lease.meta.name = name;
  lease.meta.namespace_ = namespace_;
  return kube::encode_lease(lease);
}

}  // namespace nmo::runtime::internal
