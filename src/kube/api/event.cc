#include "kube/api/event.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/json_fields.h"

namespace nmo::kube {

std::string_view to_string(EventType type) noexcept {
  return type == EventType::kWarning ? "Warning" : "Normal";
}

Result<Event> decode_event(const boost::json::value& object) {
  using internal::FieldPath;
  NMO_TRY_ASSIGN(const boost::json::object* top, internal::object_of_kind(object, "Event"));
  const FieldPath root;
  Event event;
  NMO_TRY_ASSIGN(event.meta, decode_meta(object));
  NMO_TRY_ASSIGN(event.type, internal::get_string(*top, "type", root));
  NMO_TRY_ASSIGN(event.reason, internal::get_string(*top, "reason", root));
  NMO_TRY_ASSIGN(event.message, internal::get_string(*top, "message", root));
  NMO_TRY_ASSIGN(event.count, internal::get_int<std::int32_t>(*top, "count", root));
  NMO_TRY_ASSIGN(const boost::json::object* involved,
                 internal::get_object(*top, "involvedObject", root));
  if (involved != nullptr) {
    const FieldPath path = root.field("involvedObject");
    NMO_TRY_ASSIGN(event.involved.kind, internal::get_string(*involved, "kind", path));
    NMO_TRY_ASSIGN(event.involved.namespace_, internal::get_string(*involved, "namespace", path));
    NMO_TRY_ASSIGN(event.involved.name, internal::get_string(*involved, "name", path));
    NMO_TRY_ASSIGN(event.involved.uid, internal::get_string(*involved, "uid", path));
  }
  NMO_TRY_ASSIGN(const boost::json::object* source, internal::get_object(*top, "source", root));
  if (source != nullptr) {
    NMO_TRY_ASSIGN(event.component,
                   internal::get_string(*source, "component", root.field("source")));
  }
  if (event.component.empty()) {
    NMO_TRY_ASSIGN(event.component, internal::get_string(*top, "reportingComponent", root));
  }
  NMO_TRY_ASSIGN(const boost::json::object* series, internal::get_object(*top, "series", root));
  if (series != nullptr) {
    NMO_TRY_ASSIGN(event.last_seen,
                   internal::get_optional_time(*series, "lastObservedTime", root.field("series")));
  }
  for (const char* key : {"lastTimestamp", "eventTime", "firstTimestamp"}) {
    if (event.last_seen) break;
    NMO_TRY_ASSIGN(event.last_seen, internal::get_optional_time(*top, key, root));
  }
  return event;
}

}  // namespace nmo::kube
