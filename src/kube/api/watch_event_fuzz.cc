// Fuzz target: one watch-stream line through decode_watch_event, then its object through every
// projection decoder, the way a reflector would. Must never crash, throw or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "kube/api/daemon_set.h"
#include "kube/api/lease.h"
#include "kube/api/namespace.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"
#include "kube/api/watch.h"

namespace {

template <typename T>
void decode_as(const boost::json::value& object) {
  const nmo::Result<T> decoded = nmo::kube::ResourceInfo<T>::decode(object);
  NMO_CHECK(decoded.has_value() || decoded.error().code == nmo::ErrorCode::kInvalid,
            "a decode error must be kInvalid: " + decoded.error().describe());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const nmo::Result<nmo::kube::WatchEvent> event = nmo::kube::decode_watch_event(line);
  if (!event.has_value()) {
    NMO_CHECK(event.error().code == nmo::ErrorCode::kInvalid, event.error().describe());
    return 0;
  }
  NMO_CHECK(event->object.is_object(), "a decoded event's object is always an object");
  (void)nmo::kube::resource_version_of(event->object);
  if (event->type == nmo::kube::WatchEventType::kError) {
    (void)nmo::kube::error_from_watch_error(*event).describe();
  }
  decode_as<nmo::kube::Pod>(event->object);
  decode_as<nmo::kube::Node>(event->object);
  decode_as<nmo::kube::PodDisruptionBudget>(event->object);
  decode_as<nmo::kube::Lease>(event->object);
  decode_as<nmo::kube::Namespace>(event->object);
  decode_as<nmo::kube::DaemonSet>(event->object);
  return 0;
}
