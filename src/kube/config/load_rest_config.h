// The one entry point a binary calls to find its API server: controller-runtime's
// config.GetConfig() order.
//
// Threading: no shared state; reads the environment, so do not call setenv() concurrently.
#pragma once

#include "base/result.h"
#include "kube/config/in_cluster.h"
#include "kube/config/kubeconfig_loader.h"
#include "kube/config/rest_config.h"

namespace nmo::kube {

// Chooses, in order:
//   1. options.path (--kubeconfig), when given;
//   2. the KUBECONFIG list, when the variable is set and non-empty;
//   3. the in-cluster service account, when KUBERNETES_SERVICE_HOST is set (its error is
//      returned as is: inside a pod a silent fallback to a home directory would only confuse);
//   4. $HOME/.kube/config.
// options.context applies to the kubeconfig cases only, as in controller-runtime; `in_cluster`
// only to case 3.
[[nodiscard]] Result<RestConfig> load_rest_config(const KubeconfigOptions& options,
                                                  const InClusterOptions& in_cluster = {});

}  // namespace nmo::kube
