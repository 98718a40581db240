// Loading a RestConfig from kubeconfig files, with kubectl's rules (client-go clientcmd):
//   - which files: --kubeconfig when given (it must exist); else the KUBECONFIG list
//     (colon-separated, merged in order, missing entries skipped, at least one must exist);
//     else $HOME/.kube/config;
//   - merging: for clusters, users and contexts the first file that defines a name wins;
//     current-context comes from the first file that sets it;
//   - relative paths in a file (certificate-authority, client-certificate, client-key, tokenFile)
//     are relative to that file's directory;
//   - `*-data` wins over the matching path, tokenFile over token (the file is re-read as it
//     rotates, see token_source.h).
// Certificate and key files are read once, at load time.
//
// Threading: the functions share no state; load_kubeconfig() reads the environment (KUBECONFIG,
// HOME), so do not call setenv() concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "kube/config/kubeconfig.h"
#include "kube/config/rest_config.h"

namespace nmo::kube {

// kubectl's flags that change the chosen context's cluster and user (client-go's
// ConfigOverrides). Empty fields change nothing.
struct ConfigOverrides {
  std::string server;  // --server: replaces the cluster's server URL
  // --token: the bearer token, instead of the user's token, tokenFile or exec plugin (a client
  // certificate of the user is still presented)
  std::string token;
  // --insecure-skip-tls-verify: the server certificate is not checked, and the cluster's
  // certificate-authority is dropped (kubectl does the same)
  bool insecure_skip_tls_verify = false;
  std::string impersonate_user;                 // --as
  std::vector<std::string> impersonate_groups;  // --as-group, repeatable
};

// Where to find the kubeconfig and which context to use (kubectl's flags).
struct KubeconfigOptions {
  std::string path;     // --kubeconfig; empty: $KUBECONFIG, else $HOME/.kube/config
  std::string context;  // --context; empty: current-context
  ConfigOverrides overrides;
};

// Loads the kubeconfig files named by `options` and resolves the chosen context. Errors name the
// file, the entry and the problem, e.g.
//   kubeconfig /tmp/x/config: context "prod" not found (available: "local", "staging")
//   kubeconfig /tmp/x/config: clusters["local"].certificate-authority: cannot read /tmp/x/ca.crt:
//     No such file or directory
// kNotFound when a required file is missing, kInvalid for bad content.
[[nodiscard]] Result<RestConfig> load_kubeconfig(const KubeconfigOptions& options);

// Applies `overrides` to a resolved `rest` (load_kubeconfig() does it; load_rest_config() also
// for the in-cluster case). A bad --server is kInvalid: `--server "x": <problem>`; --as-group
// without --as is kInvalid too, as in kubectl.
[[nodiscard]] Result<void> apply_overrides(RestConfig& rest, const ConfigOverrides& overrides);

// Reads and parses one kubeconfig file, with relative paths resolved against its directory.
// The message names the path: "kubeconfig <path>: cannot read <path>: <reason>".
[[nodiscard]] Result<Kubeconfig> load_kubeconfig_file(const std::string& path);

// Resolves `context` (empty: config.current_context) of an already loaded config into a
// RestConfig: finds the context, its cluster and user, parses the server URL, reads the
// certificate files and sets up the token source. Refuses unsupported features of the chosen
// entries, e.g. `users["x"]: username/password (basic authentication) is not supported`, and
// sets up the exec credential plugin of the chosen user (exec_credential.h; the plugin runs on
// the first request, not here).
[[nodiscard]] Result<RestConfig> resolve_kubeconfig(const Kubeconfig& config,
                                                    std::string_view context);

}  // namespace nmo::kube
