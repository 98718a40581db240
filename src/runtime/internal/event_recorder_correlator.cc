#include "runtime/internal/event_recorder_correlator.h"

#include <algorithm>
#include <initializer_list>

namespace nmo::runtime::internal {
namespace {

// "<length>:<value>" for each field, so a separator inside a value cannot shift fields.
std::string join_fields(std::initializer_list<std::string_view> fields) {
  std::string key;
  for (const std::string_view field : fields) {
    key += std::to_string(field.size());
    key += ':';
    key += field;
  }
  return key;
}

}  // namespace

std::string aggregation_key(const EventSource& source, const ObjectRef& regarding,
                            const EventOptions& event) {
  return join_fields({source.component, source.host, regarding.api_version, regarding.kind,
                      regarding.namespace_, regarding.name, regarding.uid, to_string(event.type),
                      event.reason, event.message});
}

std::string spam_key(const EventSource& source, const ObjectRef& regarding,
                     const EventOptions& event) {
  return join_fields({source.component, source.host, regarding.api_version, regarding.kind,
                      regarding.namespace_, regarding.name, regarding.uid, to_string(event.type),
                      event.reason});
}

SpamFilter::SpamFilter(int burst, std::chrono::nanoseconds refill, std::size_t capacity,
                       const Clock& clock)
    : clock_(clock), refill_(refill), capacity_(refill * burst), empty_at_(capacity) {
  NMO_CHECK(burst >= 1, "SpamFilter: burst must be at least 1");
  NMO_CHECK(refill > std::chrono::nanoseconds(0), "SpamFilter: refill must be positive");
}

bool SpamFilter::allow(const std::string& key) {
  const Clock::time_point now = clock_.now();
  // A new key starts with a full bucket; tokens beyond the burst are lost.
  Clock::time_point empty_at = now - capacity_;
  if (const Clock::time_point* known = empty_at_.get(key)) {
    empty_at = std::max(*known, empty_at);
  }
  if (now - empty_at < refill_) {
    return false;
  }
  empty_at_.put(key, empty_at + refill_);
  return true;
}

}  // namespace nmo::runtime::internal
