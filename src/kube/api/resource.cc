#include "kube/api/resource.h"

#include "base/check.h"

namespace nmo::kube::internal {

std::string api_root(std::string_view group, std::string_view version) {
  std::string out = group.empty() ? "/api/" : "/apis/";
  if (!group.empty()) {
    out += group;
    out += '/';
  }
  out += version;
  return out;
}

std::string resource_path(std::string_view group, std::string_view version, std::string_view plural,
                          bool namespaced, std::string_view ns, std::string_view name) {
  NMO_CHECK(namespaced || ns.empty(),
            "a namespace was given for the cluster-scoped resource " + std::string(plural));
  std::string out = api_root(group, version);
  if (!ns.empty()) {
    out += "/namespaces/";
    out += ns;
  }
  out += '/';
  out += plural;
  if (!name.empty()) {
    out += '/';
    out += name;
  }
  return out;
}

}  // namespace nmo::kube::internal
