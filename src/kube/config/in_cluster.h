// Loading a RestConfig inside a pod, from its service account (client-go rest.InClusterConfig):
// the API server from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT, and from the mounted
// service-account directory the CA (ca.crt), the token (token, re-read as the kubelet rotates
// it) and the pod's namespace (namespace, "default" when absent).
//
// Threading: no shared state; load_in_cluster() reads the environment, so do not call setenv()
// concurrently.
#pragma once

#include <string>

#include "base/result.h"
#include "kube/config/rest_config.h"

namespace nmo::kube {

// Where the service-account files and the API server address come from.
struct InClusterOptions {
  std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";  // token, ca.crt, namespace
  std::string host;  // empty: $KUBERNETES_SERVICE_HOST
  std::string port;  // empty: $KUBERNETES_SERVICE_PORT
};

// The in-cluster configuration. The token is read once here, so a missing mount fails at
// start-up. Errors start with "in-cluster config: ", e.g.
//   in-cluster config: KUBERNETES_SERVICE_HOST is not set                (kNotFound)
//   in-cluster config: cannot read <dir>/token: No such file or directory (kNotFound)
//   in-cluster config: KUBERNETES_SERVICE_PORT "x" is not a port number   (kInvalid)
[[nodiscard]] Result<RestConfig> load_in_cluster(const InClusterOptions& options = {});

}  // namespace nmo::kube
