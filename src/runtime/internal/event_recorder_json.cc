#include "runtime/internal/event_recorder_json.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace nmo::runtime::internal {
namespace {

// A core v1 ObjectReference; `namespace` only for namespaced objects.
boost::json::object object_reference(const ObjectRef& ref) {
  boost::json::object out{
      {"apiVersion", ref.api_version},
      {"kind", ref.kind},
      {"name", ref.name},
      {"uid", ref.uid},
  };
  if (!ref.namespace_.empty()) out["namespace"] = ref.namespace_;
  return out;
}

}  // namespace

std::string event_namespace(const ObjectRef& regarding) {
  return regarding.namespace_.empty() ? std::string(kClusterScopedEventNamespace)
                                      : regarding.namespace_;
}

boost::json::value build_event(const std::string& name, const EventSource& source,
                               const ObjectRef& regarding, const EventOptions& event,
                               kube::Time time) {
  const std::string timestamp = kube::format_time(time);
  boost::json::object event_source{{"component", source.component}};
  if (!source.host.empty()) event_source["host"] = source.host;
  boost::json::object out{
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", event_namespace(regarding)}}},
      {"involvedObject", object_reference(regarding)},
      {"type", to_string(event.type)},
      {"reason", event.reason},
      {"message", event.message},
      {"source", std::move(event_source)},
      {"firstTimestamp", timestamp},
      {"lastTimestamp", timestamp},
      {"count", 1},
      {"reportingComponent", source.component},
      {"reportingInstance", source.host},
  };
  if (event.related) out["related"] = object_reference(*event.related);
  return out;
}

std::string build_count_patch(std::int64_t count, const std::string& message, kube::Time time) {
  const boost::json::object patch{
      {"count", count},
      {"lastTimestamp", kube::format_time(time)},
      {"message", message},
  };
  return boost::json::serialize(patch);
}

}  // namespace nmo::runtime::internal
