#include "kube/config/load_rest_config.h"

#include <cstdlib>

namespace nmo::kube {
namespace {

bool env_is_set(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): see the header
  return value != nullptr && *value != '\0';
}

}  // namespace

Result<RestConfig> load_rest_config(const KubeconfigOptions& options,
                                    const InClusterOptions& in_cluster) {
  if (options.path.empty() && !env_is_set("KUBECONFIG") && env_is_set("KUBERNETES_SERVICE_HOST")) {
    NMO_TRY_ASSIGN(RestConfig rest, load_in_cluster(in_cluster));
    NMO_TRY(apply_overrides(rest, options.overrides));
    return rest;
  }
  return load_kubeconfig(options);
}

}  // namespace nmo::kube
