// Event: the projection of core/v1 Event that readers need (who reported what about which
// object, and when it was last seen). Writing Events is runtime/event_recorder.h's job.
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/meta.h"
#include "kube/api/resource.h"
#include "kube/api/time.h"

namespace nmo::kube {

// The two types core v1 Events have.
enum class EventType { kNormal, kWarning };

// "Normal" or "Warning".
[[nodiscard]] std::string_view to_string(EventType type) noexcept;

// The object an Event is about (involvedObject).
struct EventObject {
  std::string kind;
  std::string namespace_;  // NOLINT(readability-identifier-naming): the keyword
  std::string name;
  std::string uid;

  friend bool operator==(const EventObject&, const EventObject&) = default;
};

struct Event {
  ObjectMeta meta;
  std::string type;  // "Normal" or "Warning"
  std::string reason;
  std::string message;
  EventObject involved;
  // Who reported it: source.component, else reportingComponent.
  std::string component;
  std::int32_t count = 0;
  // When it was last seen: series.lastObservedTime, else lastTimestamp, else eventTime, else
  // firstTimestamp; std::nullopt when none is set.
  std::optional<Time> last_seen;

  friend bool operator==(const Event&, const Event&) = default;
};

// Decodes an Event. `kind`, when present, must be "Event". Errors are ErrorCode::kInvalid naming
// the field ("involvedObject.name: expected a string, got number").
[[nodiscard]] Result<Event> decode_event(const boost::json::value& object);

// core/v1 events.
template <>
struct ResourceInfo<Event> {
  static constexpr std::string_view kGroup = "";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "events";
  static constexpr std::string_view kKind = "Event";
  static constexpr bool kNamespaced = true;
  // decode_event().
  static Result<Event> decode(const boost::json::value& object) { return decode_event(object); }
};

}  // namespace nmo::kube
