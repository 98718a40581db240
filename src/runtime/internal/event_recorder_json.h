// The JSON the event recorder sends: a new core v1 Event, and the merge patch that bumps an
// aggregated Event's count.
//
// Threading: pure functions without shared state; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>

#include <boost/json/value.hpp>

#include "kube/api/time.h"
#include "runtime/event_recorder.h"
#include "runtime/internal/event_recorder_correlator.h"

namespace nmo::runtime::internal {

/// The namespace an Event about `regarding` must live in: the object's own, or `default` for
/// cluster-scoped objects (the only one the API server accepts for them).
[[nodiscard]] std::string event_namespace(const ObjectRef& regarding);

/// A new Event named `name` in event_namespace(regarding), with count 1 and both timestamps at
/// `time` (metav1.Time: whole seconds).
[[nodiscard]] boost::json::value build_event(const std::string& name, const EventSource& source,
                                             const ObjectRef& regarding, const EventOptions& event,
                                             kube::Time time);

/// The merge patch recording one more occurrence: {"count","lastTimestamp","message"}.
[[nodiscard]] std::string build_count_patch(std::int64_t count, const std::string& message,
                                            kube::Time time);

}  // namespace nmo::runtime::internal
