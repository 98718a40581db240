#include "kube/api/daemon_set.h"

#include <boost/json/value.hpp>

#include "kube/api/internal/json_fields.h"

namespace nmo::kube {

Result<DaemonSet> decode_daemon_set(const boost::json::value& object) {
  NMO_TRY(internal::object_of_kind(object, "DaemonSet"));
  DaemonSet daemon_set;
  NMO_TRY_ASSIGN(daemon_set.meta, decode_meta(object));
  return daemon_set;
}

}  // namespace nmo::kube
