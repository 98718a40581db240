// RestConfig: everything the HTTP client needs to reach and authenticate to one API server,
// whether it came from a kubeconfig (kubeconfig_loader.h) or from the pod's service account
// (in_cluster.h). The shape follows client-go's rest.Config, with certificates already loaded.
//
// Threading: a plain value type. The TokenSource it points to is itself thread-safe, so copies
// of one RestConfig may be used from different threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kube/config/exec_credential.h"
#include "kube/config/token_source.h"

namespace nmo::kube {

// How to reach and authenticate to an API server.
struct RestConfig {
  std::string server;       // as written, e.g. "https://127.0.0.1:6443" (may carry a path prefix)
  std::string scheme;       // "https" or "http"
  std::string host;         // a name or an address; IPv6 without brackets
  std::string port;         // always set: defaulted from the scheme (443 / 80)
  std::string path_prefix;  // prepended to every request path, e.g. "/k8s/clusters/c-1"; or ""
  std::string ca_pem;       // trusted CA certificates (PEM); empty: the system roots
  std::string client_cert_pem;  // client certificate chain (PEM), or empty
  std::string client_key_pem;   // its private key (PEM); set exactly when client_cert_pem is
  bool insecure_skip_tls_verify = false;  // never set together with a non-empty ca_pem
  std::string tls_server_name;            // SNI and verification name when it differs from `host`
  std::shared_ptr<TokenSource> token;     // null when there is no bearer token
  // users[].exec: the plugin that supplies a token or a client certificate, asked before every
  // request (it caches); null otherwise. When set, it replaces `token` and the client
  // certificate above.
  std::shared_ptr<ExecCredentialSource> exec;
  // Impersonation (kubectl --as / --as-group): Impersonate-User and Impersonate-Group headers.
  std::string impersonate_user;
  std::vector<std::string> impersonate_groups;
  std::string default_namespace = "default";  // the context's namespace, or the pod's namespace
  // Where this came from, for messages: `kubeconfig /path (context "local")` or
  // `in-cluster service account`.
  std::string origin;
};

}  // namespace nmo::kube
