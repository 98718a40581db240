// Watch streams: decoding one line of `?watch=1` output ({"type":"ADDED","object":{...}}) into a
// WatchEvent, and the helpers a reflector needs around it (ERROR events, bookmarks).
//
// Each event is parsed on its own into an arena (a Boost.JSON monotonic_resource shared by the
// event's DOM and freed with it), so a reflector holds at most one event's DOM at a time and
// parsing allocates a few large blocks instead of one block per JSON node. Decode the object
// into a projection (ResourceInfo<T>::decode) and drop the event; do not cache WatchEvents.
//
// Threading: WatchEvent is a value type (distinct objects on distinct threads; its arena is
// private to it); the functions are safe to call from any thread.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "base/error.h"
#include "base/result.h"

namespace nmo::kube {

// The `type` of a watch event.
enum class WatchEventType {
  kAdded,     // "ADDED"
  kModified,  // "MODIFIED"
  kDeleted,   // "DELETED": the object's last state
  kBookmark,  // "BOOKMARK": only metadata.resourceVersion (and annotations) are meaningful
  kError,     // "ERROR": the object is a metav1.Status; see error_from_watch_error()
};

// The wire spelling: "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR".
[[nodiscard]] std::string_view to_string(WatchEventType type) noexcept;

// One decoded watch event.
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  boost::json::value object;  // always a JSON object; its memory lives in the event's arena
};

// Decodes one line of a watch stream (the trailing newline and surrounding whitespace are
// allowed). Errors are ErrorCode::kInvalid and quote the start of the line (at most 200 bytes,
// made printable):
//   malformed watch event (syntax error at byte 9): {"type":AD...
//   watch event is not a JSON object: []
//   watch event without a "type" string: {"object":{}}
//   unknown watch event type "RESYNC": {"type":"RESYNC","object":{}}
//   watch event without an "object" object: {"type":"ADDED"}
[[nodiscard]] Result<WatchEvent> decode_watch_event(std::string_view line);

// The Error an ERROR event reports (its object is a metav1.Status; see error_from_status()).
// A 410 there, whatever its reason ("Expired" or "Gone"), becomes ErrorCode::kExpired: the
// resourceVersion is too old and the reflector must relist. For an event of another type,
// ErrorCode::kInternal ("not an ERROR watch event: ADDED").
[[nodiscard]] Error error_from_watch_error(const WatchEvent& event);

// metadata.resourceVersion of a Kubernetes object (a bookmark's object, a list item), or "" when
// absent or not a string.
[[nodiscard]] std::string resource_version_of(const boost::json::value& object);

}  // namespace nmo::kube
